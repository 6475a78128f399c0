"""Search state <-> query string: every search is a shareable URL (``/?latex=...&q=...&w=0.7&cat=cs.LG&page=2``).

The same parameters serve the search page and ``GET /api/search``:

- ``latex``: the formula; ``q``: the keywords;
- ``w``: the formula <-> keywords balance in [0, 1] (1 = formula only), default 0.5;
- ``cat``: a category to keep, repeatable; ``from``, ``to``: publication years;
- ``paper``: keep one paper's equations; ``fusion``: ``evidence`` (default), ``rrf`` or ``linear``;
- ``inline``: ``include`` (default: display equations and inline formulas), ``exclude`` (displays only) or ``only``;
- ``page`` (1-based) and ``size``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from eqsearch.engine.model.patterns import QueryVariableError, read_query_variables
from eqsearch.engine.search.query import FUSIONS, INLINE_CHOICES, MAX_PAGE_SIZE, HybridQuery
from werkzeug.datastructures import MultiDict

MAX_LATEX_CHARS = 4000
MAX_KEYWORDS_CHARS = 1000


class QueryError(ValueError):
    """A search parameter is malformed; the message names it, says what was received and what is expected."""


def _int(args: Mapping[str, str], name: str, default: int | None, low: int, high: int) -> int | None:
    raw = (args.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise QueryError(f"'{name}' must be a whole number, got {raw[:20]!r}") from None
    if not low <= value <= high:
        raise QueryError(f"'{name}' must lie between {low} and {high}, got {value}")
    return value


def parse_query(args: MultiDict[str, str], *, page_size: int, group_by_paper: bool = True) -> HybridQuery:
    """Build a `HybridQuery` from request parameters.

    Args:
        args: the request's query string.
        page_size: the size when ``size`` is absent.
        group_by_paper: group results by paper (the search page does; the API lets ``group`` choose).

    Raises:
        QueryError: a parameter is malformed or out of range.
    """
    latex = (args.get("latex") or "").strip()
    keywords = (args.get("q") or "").strip()
    if len(latex) > MAX_LATEX_CHARS:
        raise QueryError(f"the formula has {len(latex):,} characters; the limit is {MAX_LATEX_CHARS:,}")
    try:
        read_query_variables(latex)  # ?a stands for any sub-expression; a malformed one is the caller's to fix
    except QueryVariableError as error:
        raise QueryError(error.message) from None
    if len(keywords) > MAX_KEYWORDS_CHARS:
        raise QueryError(f"the keywords have {len(keywords):,} characters; the limit is {MAX_KEYWORDS_CHARS:,}")
    raw_weight = (args.get("w") or "").strip()
    try:
        weight = float(raw_weight) if raw_weight else 0.5
    except ValueError:
        raise QueryError(
            f"'w' (the formula/keywords balance) must be a number in [0, 1], got {raw_weight[:20]!r}"
        ) from None
    if not 0.0 <= weight <= 1.0:
        raise QueryError(f"'w' (the formula/keywords balance) must lie in [0, 1], got {weight}")
    fusion = (args.get("fusion") or FUSIONS[0]).strip()
    if fusion not in FUSIONS:
        raise QueryError(f"'fusion' must be one of {', '.join(FUSIONS)}, got {fusion[:20]!r}")
    # One box may hold several categories ("math.PR cs.LG"); the parameter may also repeat.
    categories = tuple(dict.fromkeys(c for raw in args.getlist("cat") for c in raw.replace(",", " ").split()))
    year_from = _int(args, "from", None, 1000, 3000)
    year_to = _int(args, "to", None, 1000, 3000)
    if year_from is not None and year_to is not None and year_from > year_to:
        raise QueryError(f"the year range is reversed: from {year_from} to {year_to}")
    group = group_by_paper if "group" not in args else args.get("group", "").lower() in {"1", "true", "yes"}
    inline = (args.get("inline") or "include").strip().lower()
    if inline not in INLINE_CHOICES:
        raise QueryError(f"'inline' must be one of {', '.join(INLINE_CHOICES)}, got {inline[:20]!r}")
    return HybridQuery(
        latex=latex or None,
        keywords=keywords or None,
        categories=categories,
        year_from=year_from,
        year_to=year_to,
        paper_id=(args.get("paper") or "").strip() or None,
        formula_weight=weight,
        fusion=fusion,  # type: ignore[arg-type]
        page=_int(args, "page", 1, 1, 1000) or 1,
        size=_int(args, "size", page_size, 1, MAX_PAGE_SIZE) or page_size,
        group_by_paper=group,
        inline=inline,  # type: ignore[arg-type]
        highlight=(args.get("highlight") or "true").strip().lower() not in {"0", "false", "no"},
    )


#: The parameters `parse_query` reads; a JSON body may hold these and no others.
PARAMETERS = ("latex", "q", "w", "cat", "from", "to", "paper", "fusion", "inline", "page", "size", "group", "highlight")


def search_args_of_body(body: object) -> MultiDict[str, str]:
    """The parameters of a JSON search body (``POST /api/search``) as `parse_query` reads them.

    Values may be strings, numbers or booleans; ``cat`` may also be a list of strings.

    Raises:
        QueryError: the body is not a JSON object, names an unknown parameter or holds a value of another type.
    """
    if not isinstance(body, dict):
        raise QueryError('send a JSON object such as {"latex": "x^2", "q": "words"} (Content-Type: application/json)')
    unknown = sorted(set(body) - set(PARAMETERS))
    if unknown:
        raise QueryError(f"unknown parameter {unknown[0][:40]!r}; the search takes {', '.join(PARAMETERS)}")
    args: MultiDict[str, str] = MultiDict()
    for name, value in body.items():
        values = value if name == "cat" and isinstance(value, list) else [value]
        for item in values:
            if item is None:
                continue
            if isinstance(item, bool):
                args.add(name, "true" if item else "false")
            elif isinstance(item, str | int | float):
                args.add(name, str(item))
            else:
                raise QueryError(f"'{name}' must be a string or a number, got a JSON {type(item).__name__}")
    return args


def query_params(query: HybridQuery, **changes: Any) -> dict[str, Any]:
    """The query-string parameters that reproduce `query` (defaults left out), with `changes` applied."""
    params: dict[str, Any] = {
        "latex": query.latex or None,
        "q": query.keywords or None,
        "w": None if query.formula_weight == 0.5 else f"{query.formula_weight:g}",
        "cat": list(query.categories) or None,
        "from": query.year_from,
        "to": query.year_to,
        "paper": query.paper_id,
        "highlight": None if query.highlight else "false",
        "fusion": None if query.fusion == FUSIONS[0] else query.fusion,
        "inline": None if query.inline == "include" else query.inline,
        "page": None if query.page == 1 else query.page,
    }
    params.update(changes)
    return {k: v for k, v in params.items() if v not in (None, "", [])}


def query_string(query: HybridQuery, **changes: Any) -> str:
    """`query_params` encoded (``cat`` repeated)."""
    return urlencode(query_params(query, **changes), doseq=True)
