"""The `admin` blueprint: indices and aliases (create, migrate, delete) and ingest jobs, behind the admin token.

Every view except the login page requires an admin session (or a Bearer token); every POST carries the session's
CSRF token. Destructive actions (migrate, delete) go through a confirmation page first; delete also asks for the
index name to be typed.
"""

from __future__ import annotations

import json
import logging
from urllib.parse import urlsplit

from eqsearch.webui.limits import AttemptLimiter
from eqsearch.webui.security import (
    AdminRefused,
    TooManyAttempts,
    check_csrf,
    log_in,
    log_out,
    require_admin,
    token_matches,
)
from eqsearch.webui.services import InvalidRequestError, WebServices
from flask import Blueprint, current_app, flash, redirect, render_template, request, url_for

log = logging.getLogger(__name__)

bp = Blueprint("admin", __name__)


def services() -> WebServices:
    return current_app.extensions["eqsearch.services"]


@bp.before_request
def _guard():
    if request.endpoint in ("admin.login",):
        return None
    require_admin()
    return None


def _safe_next(target: str | None) -> str:
    """Only a path on this site (no scheme, no host) may follow a login."""
    if target and target.startswith("/") and not target.startswith("//"):
        parts = urlsplit(target)
        if not parts.scheme and not parts.netloc:
            return target
    return url_for("admin.indices")


@bp.errorhandler(InvalidRequestError)
def _invalid(error: InvalidRequestError):
    # An admin action that cannot be done as asked: say why on the page the admin came from.
    flash(error.message[:1].upper() + error.message[1:] + ".", "error")
    back = "admin.jobs" if request.endpoint in ("admin.start_job", "admin.resume_job") else "admin.indices"
    return redirect(url_for(back))


@bp.route("/login", methods=["GET", "POST"])
def login():
    """The login form: the admin token, exchanged for a session."""
    config = current_app.extensions["eqsearch.config"]
    if not config.admin_token:
        raise AdminRefused(403, "admin_disabled", "Admin is switched off: set EQSEARCH_ADMIN_TOKEN to enable it.")
    error = None
    status = 200
    if request.method == "POST":
        limiter: AttemptLimiter = current_app.extensions["eqsearch.login_limiter"]
        client = request.remote_addr or "unknown"
        wait = limiter.retry_after(client)
        if wait > 0:
            log.warning("admin login refused (attempt limit) from %s", client)
            raise TooManyAttempts(wait)
        limiter.record(client)
        check_csrf()
        if token_matches(request.form.get("token")):
            target = _safe_next(request.form.get("next"))
            log_in()
            log.info("admin login from %s", request.remote_addr)
            return redirect(target)
        log.warning("refused admin login from %s", request.remote_addr)
        error = "That is not the admin token."
        status = 401
    return render_template("admin/login.html", error=error, next=request.values.get("next", "")), status


@bp.post("/logout")
def logout():
    """End the admin session."""
    log_out()
    return redirect(url_for("ui.search"))


@bp.get("/")
def indices():
    """Indices and aliases with their document counts and mapping versions."""
    from eqsearch.engine.index.mappings import INDEX_KINDS

    listed = services().indices()
    aliased = {row.kind for row in listed if row.alias}
    return render_template(
        "admin/indices.html",
        indices=listed,
        missing=[kind for kind in INDEX_KINDS if kind not in aliased],
        kinds=INDEX_KINDS,
        prefix=services().prefix,
        migration=services().migration(),
        last_migrations=services().last_migrations(),
        plugin=services().plugin_note(),
    )


@bp.get("/indices/<name>")
def index_detail(name: str):
    """One index: its alias, count and full mapping."""
    info = services().index_row(name)
    mapping = json.dumps(services().mapping(name), indent=2, sort_keys=True)
    return render_template("admin/index.html", info=info, mapping=mapping)


@bp.post("/indices")
def create_index():
    """Create a kind's first index and its alias."""
    name = services().create_index(request.form.get("kind", ""))
    flash(f"Created {name}.", "ok")
    return redirect(url_for("admin.indices"))


@bp.route("/kinds/<kind>/migrate", methods=["GET", "POST"])
def migrate(kind: str):
    """GET: what a migration of `kind` will do; POST (confirmed): start copying into a new version (in the
    background) and go back to the indices page, which follows it; the alias moves when the counts match."""
    current = [row for row in services().indices() if row.kind == kind and row.alias]
    if request.method == "GET":
        return render_template(
            "admin/migrate.html",
            kind=kind,
            alias=services().alias(kind),
            current=current,
            migration=services().migration(),
        )
    if request.form.get("confirm") != "yes":
        raise InvalidRequestError("tick the confirmation box to migrate")
    services().start_migration(kind)
    flash(
        f"Migration of {kind} started: its documents are being copied into a new index; "
        f"{services().alias(kind)} moves to it once the counts match. This page shows its progress.",
        "ok",
    )
    return redirect(url_for("admin.indices"))


@bp.route("/indices/<name>/delete", methods=["GET", "POST"])
def delete_index(name: str):
    """GET: a confirmation page; POST with the index name typed again: delete it (never the one behind an alias)."""
    info = services().index_row(name)
    if request.method == "GET":
        return render_template("admin/delete.html", info=info)
    if request.form.get("confirm_name") != name:
        flash(f"Type the index name ({name}) to confirm; nothing was deleted.", "error")
        return redirect(url_for("admin.delete_index", name=name))
    services().delete_index(name)
    flash(f"Deleted {name}.", "ok")
    return redirect(url_for("admin.indices"))


@bp.get("/jobs")
def jobs():
    """Ingest jobs, and a form to start one."""
    return render_template(
        "admin/jobs.html", jobs=services().jobs(), ingest_root=current_app.extensions["eqsearch.config"].ingest_root
    )


@bp.post("/jobs")
def start_job():
    """Start an ingest job from a path on the server, then follow it on its page."""
    form = request.form
    record = services().start_job(
        form.get("path", ""), restart=form.get("restart") == "yes", inline=form.get("no_inline") != "yes"
    )
    return redirect(url_for("admin.job", job_id=record["job_id"]))


@bp.get("/jobs/<job_id>")
def job(job_id: str):
    """One job: live progress (the page polls ``/api/jobs/<id>``), counts and errors by reason."""
    return render_template("admin/job.html", job=services().job(job_id))


@bp.post("/jobs/<job_id>/resume")
def resume_job(job_id: str):
    """Resume a failed or interrupted job."""
    services().resume_job(job_id)
    flash(f"Resumed {job_id}.", "ok")
    return redirect(url_for("admin.job", job_id=job_id))
