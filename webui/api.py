"""The `api` blueprint: JSON for search, equations, papers, LaTeX previews and ingest jobs (``/api/...``).

Errors are ``{"error": {"code": ..., "message": ...}}`` with the matching HTTP status. MathML and highlights in
answers are already sanitised (`eqsearch.webui.sanitize`), so a client may insert them into a page as they are.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from eqsearch.engine.search.results import EquationHit, SearchResults
from eqsearch.webui.openapi import openapi_document
from eqsearch.webui.provenance import provenance, source_version
from eqsearch.webui.query import QueryError, int_parameter, parse_query, search_args_of_body
from eqsearch.webui.sanitize import sanitize_highlight, sanitize_mathml
from eqsearch.webui.security import require_admin
from eqsearch.webui.services import InvalidRequestError, NotFoundError, WebServices
from flask import Blueprint, current_app, jsonify, request

bp = Blueprint("api", __name__)

#: The most neighbours ``/api/equations/<id>/similar`` gives.
MAX_SIMILAR = 100


def services() -> WebServices:
    return current_app.extensions["eqsearch.services"]


def hit_json(hit: EquationHit) -> dict[str, Any]:
    """An equation hit as JSON, MathML and highlights sanitised; the MathML's elements that matched the query formula
    carry ``class="eqsearch-match"``."""
    data = asdict(hit)
    marked = hit.formula_highlight.nodes if hit.formula_highlight else ()
    data["mathml"] = str(sanitize_mathml(hit.mathml, marked)) or None
    data["highlights"] = {k: [str(sanitize_highlight(f)) for f in v] for k, v in hit.highlights.items()}
    data["authors"] = list(hit.authors)
    data["categories"] = list(hit.categories)
    data["channels"] = list(hit.channels)
    data["source"] = asdict(provenance(hit.paper_id, source_version(hit.paper_id, hit.eq_id)))
    return data


def results_json(results: SearchResults) -> dict[str, Any]:
    """A result page as JSON."""
    groups = []
    for group in results.groups:
        data = asdict(group)
        data["equations"] = [hit_json(h) for h in group.equations]
        data["source"] = data["equations"][0]["source"] if data["equations"] else asdict(provenance(group.paper_id))
        groups.append(data)
    return {
        "total": results.total,
        "page": results.page,
        "size": results.size,
        "hits": [] if results.groups else [hit_json(h) for h in results.hits],
        "groups": groups,
        "latex_error": results.latex_error,
        "warnings": list(results.warnings),
        "took_ms": round(results.took_ms, 1),
    }


def equation_json(eq: dict[str, Any]) -> dict[str, Any]:
    """A stored equation document as JSON, MathML sanitised."""
    return {**eq, "mathml": str(sanitize_mathml(eq.get("mathml"))) or None}


@bp.route("/search", methods=["GET", "POST"])
def search():
    """Hybrid search; parameters as on the search page (see `eqsearch.webui.query`), in the query string or, for a
    formula too long for a URL, as a JSON object body of a POST (``{"latex": "...", "q": "...", "cat": [...]}``)."""
    config = current_app.extensions["eqsearch.config"]
    try:
        args = search_args_of_body(request.get_json(silent=True)) if request.method == "POST" else request.args
        query = parse_query(args, page_size=config.page_size, group_by_paper=False, strict=True)
    except QueryError as error:
        raise InvalidRequestError(str(error)) from None
    if not (query.has_formula or query.has_keywords):
        raise InvalidRequestError("give a formula ('latex') or keywords ('q')")
    return jsonify(results_json(services().search(query)))


@bp.get("/equations/<path:eq_id>")
def equation(eq_id: str):
    """One stored equation."""
    eq = services().equation(eq_id)
    if eq is None:
        raise NotFoundError(f"no equation has the id {eq_id!r}")
    return jsonify(equation_json(eq))


@bp.get("/equations/<path:eq_id>/similar")
def similar(eq_id: str):
    """The equations nearest to a stored one (``size``: how many, default 10)."""
    try:
        size = int_parameter(request.args, "size", 10, 1, MAX_SIMILAR, strict=True) or 10
    except QueryError as error:
        raise InvalidRequestError(str(error)) from None
    return jsonify(results_json(services().similar(eq_id, size=size)))


@bp.get("/papers/<path:paper_id>")
def paper(paper_id: str):
    """One paper with its equations by section and its citations."""
    record = services().paper(paper_id)
    if record is None:
        raise NotFoundError(f"no paper has the id {paper_id!r}")
    for section in record["sections"]:
        section["equations"] = [equation_json(eq) for eq in section["equations"]]
    return jsonify(record)


@bp.route("/render", methods=["GET", "POST"])
def render():
    """LaTeX -> sanitised MathML for the live preview: ``?latex=...`` or a JSON body ``{"latex": ...}``.

    Bad LaTeX is not an HTTP error: the answer has ``ok: false`` and a one-sentence ``message``.
    """
    if request.method == "POST":
        body = request.get_json(silent=True)
        if not isinstance(body, dict) or not isinstance(body.get("latex"), str):
            raise InvalidRequestError('send a JSON object {"latex": "..."}')
        latex = body["latex"]
    elif "latex" in request.args:
        latex = request.args["latex"]
    else:  # the parameter is required; an empty one (?latex=) is an empty preview
        raise InvalidRequestError('give the formula as ?latex=... (or POST a JSON object {"latex": "..."})')
    if not latex.strip():
        return jsonify(ok=True, mathml="", status="empty", message=None)
    result = services().to_mathml(latex)
    mathml = str(sanitize_mathml(result.mathml)) if result.mathml else None
    return jsonify(ok=mathml is not None, mathml=mathml, status=result.status, reason=result.reason,
                   message=result.message)  # fmt: skip


@bp.get("/jobs")
def jobs():
    """Recent ingest jobs (admin)."""
    require_admin()
    return jsonify(jobs=services().jobs())


@bp.get("/jobs/<job_id>")
def job(job_id: str):
    """One ingest job: state, progress, counts, errors by reason (admin; the admin page polls this)."""
    require_admin()
    return jsonify(services().job(job_id))


@bp.post("/jobs")
def start_job():
    """Start an ingest job: JSON body ``{"path": "/absolute/path", "restart": false, "inline": true}`` (admin).
    Answers 202.

    The same path again resumes its job; ``restart: true`` reads everything again; ``inline: false`` indexes the
    display equations only. The path must start with ``/`` and the flags be booleans (or null) as the OpenAPI document
    says (400); a path outside ``EQSEARCH_INGEST_ROOT`` is a 403, one that does not exist a 422, a running job a 409.
    """
    require_admin()
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or not isinstance(body.get("path"), str):
        raise InvalidRequestError('send a JSON object {"path": "/absolute/path/on/the/server"}')
    if not body["path"].startswith("/"):  # the admin form also takes ~ and spaces around; the API takes the path
        raise InvalidRequestError(f"'path' must be an absolute path, starting with /, got {body['path'][:200]!r}")
    flags: dict[str, bool] = {}
    for name, default in (("restart", False), ("inline", True)):
        value = body.get(name)
        if value is not None and not isinstance(value, bool):
            raise InvalidRequestError(f"'{name}' must be true or false")
        flags[name] = default if value is None else value
    return jsonify(services().start_job(body["path"], **flags)), 202


@bp.post("/jobs/<job_id>/resume")
def resume_job(job_id: str):
    """Resume a failed or interrupted ingest job (admin). Answers 202 with the job."""
    require_admin()
    return jsonify(services().resume_job(job_id)), 202


@bp.get("/openapi.json")
def openapi():
    """The OpenAPI 3.1 description of this API."""
    return jsonify(openapi_document(request.host_url.rstrip("/")))
