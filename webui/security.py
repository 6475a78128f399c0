"""Admin access and CSRF protection.

Admin access is one shared token (``EQSEARCH_ADMIN_TOKEN``): the login form exchanges it for a session flag, the
API takes it as ``Authorization: Bearer TOKEN``. Tokens are compared in constant time and never logged or shown.

Every state-changing request that rides on the session cookie (admin forms, and admin API calls made by the admin
pages' script) must carry the session's CSRF token, as a ``csrf_token`` form field or an ``X-CSRF-Token`` header. A
request authenticated by a Bearer header carries no ambient credential, so it needs no CSRF token.
"""

from __future__ import annotations

import hmac
import math
import secrets

from eqsearch.webui.config import WebConfig
from flask import current_app, request, session

CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class AdminRefused(Exception):
    """The request may not use the admin pages or API.

    Args:
        status: 401 (no or wrong credentials), 403 (bad CSRF token, or admin switched off).
        code: a stable machine code.
        message: one sentence for the user.
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class TooManyAttempts(AdminRefused):
    """A client has used up its admin login tries for now (429, with ``Retry-After``).

    Args:
        retry_after_s: seconds until it may try again.
    """

    def __init__(self, retry_after_s: float) -> None:
        self.retry_after_s = max(1, math.ceil(retry_after_s))
        super().__init__(
            429,
            "too_many_attempts",
            f"Too many login attempts from this address; try again in {self.retry_after_s} seconds.",
        )


def web_config() -> WebConfig:
    """The running app's `WebConfig`."""
    return current_app.extensions["eqsearch.config"]


def csrf_token() -> str:
    """The session's CSRF token (created on first use)."""
    token = session.get(CSRF_FIELD)
    if not token:
        token = secrets.token_urlsafe(32)
        session[CSRF_FIELD] = token
    return token


def token_matches(given: str | None) -> bool:
    """Whether `given` is the configured admin token (constant-time; False when admin is switched off)."""
    expected = web_config().admin_token
    if not expected or not given:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def bearer_token() -> str | None:
    """The token of an ``Authorization: Bearer ...`` header, if any."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def log_in() -> None:
    """Start a fresh admin session (a new CSRF token, so one learned before login is useless after)."""
    session.clear()
    session["admin"] = True
    session.permanent = False
    csrf_token()


def log_out() -> None:
    """End the admin session."""
    session.clear()


def check_csrf() -> None:
    """Refuse a state-changing request whose CSRF token is missing or not the session's.

    Raises:
        AdminRefused: 403 with code ``csrf``.
    """
    if request.method in SAFE_METHODS:
        return
    given = request.form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER) or ""
    expected = session.get(CSRF_FIELD) or ""
    if not expected or not hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8")):
        raise AdminRefused(403, "csrf", "The form has expired or did not come from this site; reload it and try again.")


def require_admin() -> str:
    """Check the request's admin credentials; returns how it authenticated (``bearer`` or ``session``).

    Raises:
        AdminRefused: admin is switched off (403), credentials are missing or wrong (401), or a session request
            lacks its CSRF token (403).
    """
    if not web_config().admin_token:
        raise AdminRefused(403, "admin_disabled", "Admin is switched off: set EQSEARCH_ADMIN_TOKEN to enable it.")
    given = bearer_token()
    if given is not None:
        if token_matches(given):
            return "bearer"
        raise AdminRefused(401, "unauthorized", "The Bearer token is not the admin token.")
    if session.get("admin") is True:
        check_csrf()
        return "session"
    raise AdminRefused(401, "unauthorized", "This needs the admin token: log in, or send Authorization: Bearer TOKEN.")
