"""The Flask application factory."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.es.config import EsConfig
from eqsearch.webui.config import WebConfig
from eqsearch.webui.limits import AttemptLimiter
from eqsearch.webui.provenance import provenance_of_equation
from eqsearch.webui.sanitize import sanitize_highlight, sanitize_mathml
from eqsearch.webui.security import AdminRefused, TooManyAttempts, csrf_token
from eqsearch.webui.services import (
    BackendUnavailableError,
    InvalidRequestError,
    NotFoundError,
    NotIndexedError,
    init_app,
)
from flask import Flask, Response, jsonify, make_response, render_template, request
from werkzeug.exceptions import HTTPException

log = logging.getLogger(__name__)

# Scripts and styles come only from this site's static folder: nothing inline, nothing from a CDN.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


def create_app(test_config: Mapping[str, object] | None = None) -> Flask:
    """Build the app. Configuration comes from `EQSEARCH_*` variables unless `test_config` is given.

    Settings (environment variable -> meaning): ``EQSEARCH_SECRET_KEY`` signs sessions; ``EQSEARCH_ADMIN_TOKEN``
    opens the admin pages (admin is off without it); ``EQSEARCH_PAGE_SIZE``, ``EQSEARCH_KATEX_WORKERS``,
    ``EQSEARCH_INGEST_ROOT`` (ingest jobs read only under it), ``EQSEARCH_MODEL_BUNDLE``,
    ``EQSEARCH_SECURE_COOKIES``; the ``EQSEARCH_ES_*`` variables of `EsConfig`.

    Args:
        test_config: Flask config values to use instead of the environment (tests); may hold ``ES_CONFIG``, an
            `EsConfig`, and the keys above without the prefix.

    Raises:
        ValueError: a setting is malformed (the message names it).
    """
    app = Flask(__name__)
    if test_config is None:
        app.config.from_prefixed_env("EQSEARCH")
        app.config.setdefault("ES_CONFIG", EsConfig.from_env())
    else:
        app.config.update(test_config)
        app.config.setdefault("ES_CONFIG", EsConfig.from_env({}))
    config = WebConfig.from_mapping(app.config)
    if config.secret_key_generated:
        log.warning("EQSEARCH_SECRET_KEY is not set: sessions use a random key and end when the server restarts")
    app.config.update(
        SECRET_KEY=config.secret_key,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=config.secure_cookies,
        SESSION_COOKIE_NAME="eqsearch_session",
        MAX_CONTENT_LENGTH=64 * 1024,
        JSON_SORT_KEYS=False,
    )
    # Secrets live in WebConfig/EsConfig only: Flask's config is what a debug page or a careless log would show.
    # (EsConfig's dataclass repr prints its password, so it leaves Flask's config too.)
    for key in [k for k in app.config if k == "ES_CONFIG" or k.endswith(("TOKEN", "PASSWORD", "API_KEY"))]:
        app.config.pop(key)
    app.extensions["eqsearch.config"] = config
    app.extensions["eqsearch.login_limiter"] = AttemptLimiter(config.login_attempts, config.login_window_s)
    # An encoder object may be handed in (tests, embedding apps); otherwise the model bundle is loaded on first use.
    init_app(app, config, encoder=app.config.pop("ENCODER", None))

    from eqsearch.webui import admin, api, ui

    app.register_blueprint(ui.bp)
    app.register_blueprint(api.bp, url_prefix="/api")
    app.register_blueprint(admin.bp, url_prefix="/admin")

    app.jinja_env.filters["mathml"] = sanitize_mathml
    app.jinja_env.filters["highlight"] = sanitize_highlight
    app.jinja_env.globals["csrf_token"] = csrf_token
    app.jinja_env.globals["provenance_of"] = provenance_of_equation

    @app.context_processor
    def _globals() -> dict[str, Any]:
        from flask import session

        return {"admin_enabled": bool(config.admin_token), "is_admin": session.get("admin") is True}

    @app.after_request
    def _security_headers(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    @app.get("/healthz")
    def healthz():
        from eqsearch.engine.es.client import check_cluster

        try:
            info = check_cluster(config.es)
        except EqsearchError as error:
            return jsonify(status="unavailable", elasticsearch=error.message), 503
        return jsonify(status="ok", elasticsearch=info.version)

    _register_error_pages(app)
    return app


def wants_json() -> bool:
    """Whether the request should get a JSON error (the API, or a client that asks for JSON only)."""
    if request.blueprint == "api" or request.path.startswith("/api/"):
        return True
    best = request.accept_mimetypes.best_match(["text/html", "application/json"])
    return best == "application/json" and not request.accept_mimetypes.accept_html


def error_response(status: int, code: str, message: str, hint: str | None = None) -> tuple[Response | str, int]:
    """An error as JSON ``{"error": {"code", "message"}}`` for the API, as a page otherwise."""
    if wants_json():
        body: dict[str, Any] = {"code": code, "message": message}
        if hint:
            body["hint"] = hint
        return jsonify(error=body), status
    return render_template("error.html", status=status, code=code, message=message, hint=hint), status


def _register_error_pages(app: Flask) -> None:
    @app.errorhandler(BackendUnavailableError)
    def _unavailable(error: BackendUnavailableError):
        log.warning("backend unavailable: %s", error.message)
        # The cause (with the cluster's address) goes to the log only.
        return error_response(503, "backend_unavailable", "The search backend is not answering; try again in a minute.")

    @app.errorhandler(EqsearchError)
    def _engine_error(error: EqsearchError):
        # Any other engine failure (KaTeX not installed, a bundle that does not load): the service is degraded.
        log.warning("engine error on %s: %s", request.path, error)
        return error_response(503, "unavailable", "Part of the search service is not working; the error was logged.")

    @app.errorhandler(NotIndexedError)
    def _not_indexed(error: NotIndexedError):
        log.warning("search without an index: %s", error.message)
        return error_response(503, "not_indexed", "Nothing is indexed yet; an admin can start an ingest job.")

    @app.errorhandler(NotFoundError)
    def _not_found(error: NotFoundError):
        return error_response(404, "not_found", error.message)

    @app.errorhandler(InvalidRequestError)
    def _invalid(error: InvalidRequestError):
        # 400, or the status of its kind: 409 (a conflict with the job's state), 403 or 422 (an ingest path)
        return error_response(error.http_status, error.error_code, error.message)

    @app.errorhandler(AdminRefused)
    def _refused(error: AdminRefused):
        if not wants_json() and error.code == "unauthorized":
            from flask import redirect, url_for

            return redirect(url_for("admin.login", next=request.full_path if request.method == "GET" else None))
        response, status = error_response(error.status, error.code, error.message)
        if isinstance(error, TooManyAttempts):
            response = make_response(response, status)
            response.headers["Retry-After"] = str(error.retry_after_s)
            return response
        return response, status

    @app.errorhandler(HTTPException)
    def _http(error: HTTPException):
        code = (error.name or "error").lower().replace(" ", "_")
        response = make_response(error_response(error.code or 500, code, error.description or error.name))
        # werkzeug's own headers of the error: a 405's Allow (RFC 9110 requires it), a 401's WWW-Authenticate, ...
        for name, value in error.get_headers():
            if name.lower() != "content-type":
                response.headers[name] = value
        return response

    @app.errorhandler(Exception)
    def _internal(error: Exception):
        log.exception("unhandled error on %s %s", request.method, request.path)
        return error_response(500, "internal_error", "Something went wrong on our side; the error was logged.")
