"""The `ui` blueprint: the search page, equation pages and paper pages (HTML), and the math font they use."""

from __future__ import annotations

import logging

from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.search.results import EquationHit, SearchResults
from eqsearch.webui.cards import CARD_EQUATIONS, paper_cards
from eqsearch.webui.contexts import ContextMath, aligned_fragment, context_snippet, inline_formulas, render_context
from eqsearch.webui.provenance import provenance, source_version
from eqsearch.webui.query import QueryError, parse_query, query_string
from eqsearch.webui.services import WebServices
from flask import Blueprint, abort, current_app, render_template, request, send_file
from markupsafe import Markup

log = logging.getLogger(__name__)

bp = Blueprint("ui", __name__)

#: Equations a card shows when the search is limited to its paper (the page size bounds it anyway).
ALL_OF_ONE_PAPER = 1000


def services() -> WebServices:
    """The app's `WebServices`."""
    return current_app.extensions["eqsearch.services"]


def context_math() -> ContextMath:
    """The app's `ContextMath` (made on first use, on the services' KaTeX converter)."""
    found = current_app.extensions.get("eqsearch.context_math")
    if found is None:
        found = current_app.extensions["eqsearch.context_math"] = ContextMath(services().converter)
    return found


def contexts_of(hits: list[EquationHit]) -> dict[str, Markup]:
    """eq_id -> its context as markup, math drawn: the highlighted fragment, else the stored context's start."""
    fragments = {
        hit.eq_id: aligned_fragment(hit.highlights["context"][0], hit.context)
        if hit.highlights.get("context")
        else context_snippet(hit.context)
        for hit in hits
    }
    formulas = inline_formulas(fragments.values())
    mathml_of: dict[str, str | None] = {}
    if formulas:
        try:
            mathml_of = context_math().mathml_of(formulas)
        except EqsearchError as error:  # KaTeX missing or broken: the contexts keep their LaTeX
            log.warning("contexts shown without their math: %s", error)
    return {eq_id: render_context(fragment, mathml_of) for eq_id, fragment in fragments.items()}


@bp.get("/")
def search():
    """The search page; with a formula or keywords in the query string it shows that search's results."""
    config = current_app.extensions["eqsearch.config"]
    try:
        query = parse_query(request.args, page_size=config.page_size)
    except QueryError as error:
        return render_template("search.html", query=None, results=None, error=str(error), args=request.args), 400
    results: SearchResults | None = None
    cards = []
    contexts: dict[str, Markup] = {}
    if query.has_formula or query.has_keywords:
        results = services().search(query)
        limit = ALL_OF_ONE_PAPER if query.paper_id else CARD_EQUATIONS  # within one paper: all its matches
        cards = paper_cards(results.groups, query.inline, limit)
        contexts = contexts_of([hit for card in cards for hit in card.equations])
    return render_template(
        "search.html",
        query=query,
        results=results,
        cards=cards,
        contexts=contexts,
        error=None,
        args=request.args,
        query_string=query_string,
    )


@bp.get("/equations/<path:eq_id>")
def equation(eq_id: str):
    """One equation: rendered, its LaTeX, its context, its paper, and its nearest neighbours."""
    eq = services().equation(eq_id)
    if eq is None:
        abort(404, description=f"No equation has the id {eq_id!r}.")
    neighbours = services().similar(eq_id, size=current_app.extensions["eqsearch.config"].neighbours)
    source = provenance(eq["paper_id"], eq.get("source_version") or source_version(eq["paper_id"], eq_id))
    context = contexts_of([_as_hit(eq)])[eq_id] if eq.get("context") else Markup("")
    return render_template("equation.html", eq=eq, neighbours=neighbours.hits, source=source, context=context)


@bp.get("/papers/<path:paper_id>")
def paper(paper_id: str):
    """One paper: metadata, where it comes from, its equations by section, citations out and in."""
    record = services().paper(paper_id)
    if record is None:
        abort(404, description=f"No paper has the id {paper_id!r}.")
    return render_template("paper.html", paper=record, source=provenance(paper_id, record.get("source_version")))


@bp.get("/fonts/math.otf")
def math_font():
    """The OpenType MATH font the stylesheet names for MathML (`WebConfig.math_font`)."""
    path = current_app.extensions["eqsearch.config"].math_font
    if not path.is_file():
        log.warning("the math font %s is missing: formulas use the browser's fonts (make setup installs it)", path)
        abort(404, description="The math font is not installed on this server.")
    return send_file(path, mimetype="font/otf", max_age=30 * 24 * 3600)


def _as_hit(eq: dict) -> EquationHit:
    """A stored equation as a hit with its whole context (the equation page shows it all)."""
    return EquationHit(
        eq_id=eq["eq_id"],
        paper_id=eq["paper_id"],
        latex=eq.get("latex") or "",
        mathml=eq.get("mathml"),
        section_title=eq.get("section_title") or "",
        context="",
        score=0.0,
        matched="formula",
        highlights={"context": [eq.get("context") or ""]},
    )
