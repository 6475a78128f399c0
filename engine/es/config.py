"""Configuration of the engine, built once at the edge (CLI, web app) from `EQSEARCH_*` variables.

Library code receives these frozen dataclasses and never reads the environment itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ENV_PREFIX = "EQSEARCH_"


def _default_home(is_root: bool) -> Path:
    # Elasticsearch refuses to run as root, so a root user's node runs as an unprivileged account that must be
    # able to read the node's files: /root is not traversable by others, hence a system location for root.
    if is_root:
        return Path("/var/lib/eqsearch")
    return Path.home() / ".cache" / "eqsearch"


@dataclass(frozen=True)
class LocalNodeConfig:
    """The managed local Elasticsearch node (`eqsearch es ...`).

    Args:
        home: where the distribution, data, logs and pid file live (outside the repository).
        port: HTTP port on 127.0.0.1.
        heap: JVM heap, e.g. "1g" (min = max).
        java_home: a Java 21+ home to use instead of discovering one.
        run_as: the unprivileged account that runs the node when eqsearch runs as root.
        archive: a local distribution archive (zip or tar.gz) to install instead of downloading one.
        archive_sha256: the expected SHA-256 of `archive` (checked when given).
        maven_repository: base URL of the Maven repository to download the pinned distribution from.
        startup_timeout: seconds to wait for the node to answer healthy.
    """

    home: Path
    port: int = 9200
    heap: str = "1g"
    java_home: Path | None = None
    run_as: str = "eqsearch"
    archive: Path | None = None
    archive_sha256: str | None = None
    maven_repository: str = "https://repo.maven.apache.org/maven2"
    startup_timeout: float = 180.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LocalNodeConfig:
        env = os.environ if environ is None else environ
        is_root = hasattr(os, "geteuid") and os.geteuid() == 0
        home = Path(env.get(f"{ENV_PREFIX}HOME") or _default_home(is_root)) / "es"
        java_home = env.get("ES_JAVA_HOME") or env.get(f"{ENV_PREFIX}JAVA_HOME")
        archive = env.get(f"{ENV_PREFIX}ES_ARCHIVE")
        return cls(
            home=home,
            port=int(env.get(f"{ENV_PREFIX}ES_PORT", "9200")),
            heap=env.get(f"{ENV_PREFIX}ES_HEAP", "1g"),
            java_home=Path(java_home) if java_home else None,
            run_as=env.get(f"{ENV_PREFIX}ES_USER", "eqsearch"),
            archive=Path(archive) if archive else None,
            archive_sha256=env.get(f"{ENV_PREFIX}ES_ARCHIVE_SHA256"),
            maven_repository=env.get(f"{ENV_PREFIX}MAVEN_REPOSITORY", "https://repo.maven.apache.org/maven2"),
        )


@dataclass(frozen=True)
class EsConfig:
    """How to reach Elasticsearch.

    With no `url`, eqsearch uses the managed local node (`local`). Credentials: an API key, or a user name and
    password; `ca_file` verifies a TLS cluster's certificate.
    """

    url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # secrets stay out of reprs, logs and pages
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: Path | None = None
    verify_certs: bool = True
    request_timeout: float = 30.0
    index_prefix: str = "eqsearch"
    local: LocalNodeConfig | None = None

    @property
    def uses_local_node(self) -> bool:
        return self.url is None

    @property
    def effective_url(self) -> str:
        if self.url:
            return self.url
        if self.local is None:
            raise ValueError("EsConfig has neither a url nor a local node")
        return self.local.url

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> EsConfig:
        env = os.environ if environ is None else environ
        ca_file = env.get(f"{ENV_PREFIX}ES_CA_FILE")
        verify = env.get(f"{ENV_PREFIX}ES_VERIFY_CERTS", "true").strip().lower() not in {"0", "false", "no"}
        return cls(
            url=env.get(f"{ENV_PREFIX}ES_URL") or None,
            api_key=env.get(f"{ENV_PREFIX}ES_API_KEY") or None,
            username=env.get(f"{ENV_PREFIX}ES_USERNAME") or None,
            password=env.get(f"{ENV_PREFIX}ES_PASSWORD") or None,
            ca_file=Path(ca_file) if ca_file else None,
            verify_certs=verify,
            request_timeout=float(env.get(f"{ENV_PREFIX}ES_TIMEOUT", "30")),
            index_prefix=env.get(f"{ENV_PREFIX}INDEX_PREFIX", "eqsearch"),
            local=LocalNodeConfig.from_env(env),
        )

    def describe(self) -> str:
        """Where this config points, with no secret in it."""
        auth = "api key" if self.api_key else ("user " + self.username if self.username else "no credentials")
        where = self.url or f"managed local node at {self.effective_url}"
        return f"{where} ({auth})"
