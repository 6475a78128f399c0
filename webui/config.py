"""The web app's settings, built once by `create_app` from `EQSEARCH_*` variables (or a test mapping)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from eqsearch.engine.es.config import EsConfig

#: Latin Modern Math as Debian's fonts-lmodern installs it (the Makefile pins the package).
DEFAULT_MATH_FONT = Path("/usr/share/texmf/fonts/opentype/public/lm-math/latinmodern-math.otf")


@dataclass(frozen=True)
class WebConfig:
    """What the app needs besides Flask's own settings.

    Args:
        es: how to reach Elasticsearch.
        admin_token: the token that opens the admin pages and admin API (None: admin is switched off).
        secret_key: signs the session cookie; a random one per process when not configured (sessions then do not
            survive a restart nor span several gunicorn workers).
        secret_key_generated: True when `secret_key` was generated here rather than configured.
        page_size: paper groups per result page.
        neighbours: how many similar equations the equation page shows.
        katex_workers: KaTeX worker processes for the live preview and query conversion.
        model_bundle: the model bundle for formula embeddings (None: the one shipped with eqsearch).
        onnx_provider: where the bundle's ONNX runs: ``cpu`` (the default), ``cuda`` (an error that names
            onnxruntime-gpu where it is absent) or ``auto`` (``EQSEARCH_ONNX_PROVIDER``).
        ingest_root: when set, ingest jobs may only read paths under this folder.
        secure_cookies: send the session cookie over HTTPS only.
        math_font: the OpenType MATH font served for formulas (``make setup`` installs Debian's Latin Modern Math).
        login_attempts: admin login tries one client may make per `login_window_s` (0: unlimited).
        login_window_s: the login limit's window in seconds.
    """

    es: EsConfig = field(default_factory=EsConfig)
    admin_token: str | None = None
    secret_key: str = field(default_factory=lambda: secrets.token_hex(32), repr=False)
    secret_key_generated: bool = True
    page_size: int = 10
    neighbours: int = 8
    katex_workers: int = 1
    model_bundle: Path | None = None
    onnx_provider: str = "cpu"
    ingest_root: Path | None = None
    secure_cookies: bool = False
    math_font: Path = DEFAULT_MATH_FONT
    login_attempts: int = 5
    login_window_s: int = 300

    def __post_init__(self) -> None:
        if not 1 <= self.page_size <= 100:
            raise ValueError(f"page_size must lie in 1..100, got {self.page_size}")
        if self.login_attempts < 0 or self.login_window_s < 1:
            raise ValueError(
                "EQSEARCH_LOGIN_ATTEMPTS must be 0 or more and EQSEARCH_LOGIN_WINDOW_S 1 or more, got "
                f"{self.login_attempts} and {self.login_window_s}"
            )
        if self.admin_token is not None and len(self.admin_token) < 12:
            raise ValueError(
                "EQSEARCH_ADMIN_TOKEN is too short: use at least 12 characters (e.g. `openssl rand -hex 24`)"
            )

    def __repr__(self) -> str:  # never print a secret
        admin = "set" if self.admin_token else "off"
        return f"WebConfig(es={self.es.describe()!r}, admin_token={admin}, page_size={self.page_size})"

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> WebConfig:
        """Build from Flask config keys (``ADMIN_TOKEN``, ``SECRET_KEY``, ``PAGE_SIZE``, ...), as
        `Flask.config.from_prefixed_env("EQSEARCH")` leaves them; ``ES_CONFIG`` may hold a ready `EsConfig`.

        Raises:
            ValueError: a value is malformed (the message names the variable).
        """

        def text(key: str) -> str | None:
            value = values.get(key)
            return str(value) if value not in (None, "") else None

        def number(key: str, default: int) -> int:
            value = values.get(key, default)
            try:
                return int(value)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise ValueError(f"EQSEARCH_{key} must be a whole number, got {value!r}") from None

        def path(key: str) -> Path | None:
            value = text(key)
            return Path(value) if value else None

        es = values.get("ES_CONFIG")
        secret = text("SECRET_KEY")
        kwargs: dict[str, object] = {
            "es": es if isinstance(es, EsConfig) else EsConfig(),
            "admin_token": text("ADMIN_TOKEN"),
            "page_size": number("PAGE_SIZE", 10),
            "neighbours": number("NEIGHBOURS", 8),
            "katex_workers": number("KATEX_WORKERS", 1),
            "model_bundle": path("MODEL_BUNDLE"),
            "onnx_provider": text("ONNX_PROVIDER") or "cpu",
            "ingest_root": path("INGEST_ROOT"),
            "math_font": path("MATH_FONT") or DEFAULT_MATH_FONT,
            "login_attempts": number("LOGIN_ATTEMPTS", 5),
            "login_window_s": number("LOGIN_WINDOW_S", 300),
            "secure_cookies": str(values.get("SECURE_COOKIES", "false")).lower() in {"1", "true", "yes"},
        }
        if secret:
            kwargs["secret_key"] = secret
            kwargs["secret_key_generated"] = False
        return cls(**kwargs)  # type: ignore[arg-type]
