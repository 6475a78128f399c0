"""The `ui` blueprint: the search page, equation pages and paper pages (HTML)."""

from __future__ import annotations

from eqsearch.webui.query import QueryError, parse_query, query_string
from eqsearch.webui.services import WebServices
from flask import Blueprint, abort, current_app, render_template, request

bp = Blueprint("ui", __name__)


def services() -> WebServices:
    """The app's `WebServices`."""
    return current_app.extensions["eqsearch.services"]


@bp.get("/")
def search():
    """The search page; with a formula or keywords in the query string it shows that search's results."""
    config = current_app.extensions["eqsearch.config"]
    try:
        query = parse_query(request.args, page_size=config.page_size)
    except QueryError as error:
        return render_template("search.html", query=None, results=None, error=str(error), args=request.args), 400
    results = None
    if query.has_formula or query.has_keywords:
        results = services().search(query)
    return render_template(
        "search.html", query=query, results=results, error=None, args=request.args, query_string=query_string
    )


@bp.get("/equations/<path:eq_id>")
def equation(eq_id: str):
    """One equation: rendered, its LaTeX, its context, its paper, and its nearest neighbours."""
    eq = services().equation(eq_id)
    if eq is None:
        abort(404, description=f"No equation has the id {eq_id!r}.")
    neighbours = services().similar(eq_id, size=current_app.extensions["eqsearch.config"].neighbours)
    return render_template("equation.html", eq=eq, neighbours=neighbours.hits)


@bp.get("/papers/<path:paper_id>")
def paper(paper_id: str):
    """One paper: metadata, its equations by section, citations out and in."""
    record = services().paper(paper_id)
    if record is None:
        abort(404, description=f"No paper has the id {paper_id!r}.")
    return render_template("paper.html", paper=record)
