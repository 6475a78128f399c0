"""Search state <-> query string: every search is a shareable URL (``/?latex=...&q=...&w=0.7&cat=cs.LG&page=2``).

The same parameters serve the search page and ``GET /api/search``:

- ``latex``: the formula; ``q``: the keywords;
- ``w``: the formula <-> keywords balance in [0, 1] (1 = formula only), default 0.5;
- ``cat``: a category to keep, repeatable; ``from``, ``to``: publication years;
- ``paper``: keep one paper's equations; ``fusion``: ``evidence`` (default), ``rrf`` or ``linear``;
- ``inline``: ``include`` (default: display equations and inline formulas), ``exclude`` (displays only) or ``only``;
- ``page`` (1-based) and ``size``; ``group`` and ``highlight``: ``true`` or ``false`` (also ``1``/``0``,
  ``yes``/``no``).

Values are read as `/api/openapi.json` types them (an integer is ASCII digits, a number a JSON-style decimal, an
enumeration's value exactly one of its names, a length counted before trimming), so that a request the document calls
malformed is refused with a 400 that names the parameter, and one it calls well-formed is read as sent. The API reads
them strictly (``strict``: each parameter but ``cat`` once, a typed one neither empty nor padded with white space);
the search page leniently, as its forms send them (empty fields, spaces around a year). A JSON body
(``POST /api/search``) holds the same parameters with JSON types (`search_args_of_body`).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from eqsearch.engine.model.patterns import QueryVariableError, read_query_variables
from eqsearch.engine.search.query import FUSIONS, INLINE_CHOICES, MAX_PAGE_SIZE, HybridQuery
from werkzeug.datastructures import MultiDict

MAX_LATEX_CHARS = 4000
MAX_KEYWORDS_CHARS = 1000


#: The years ``from`` and ``to`` may name.
YEAR_RANGE = (1000, 3000)
#: The last page a search may ask for.
MAX_PAGE = 1000
#: What ``group`` and ``highlight`` take, lower-cased: true or false.
FLAGS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}

# JSON Schema's integer and number as they appear in a query string: ASCII digits (Python's int() and float() would
# also take "1_000", Arabic-Indic digits, "nan" or "inf", none of which the document's types allow).
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class QueryError(ValueError):
    """A search parameter is malformed; the message names it, says what was received and what is expected."""


def _text(args: MultiDict[str, str], name: str, strict: bool, *, typed: bool = True) -> str:
    """The text of parameter `name` ("" when absent).

    Leniently (the search page's forms), the first value trimmed, an empty one the same as none. Strictly (the API,
    as its OpenAPI document types the parameters), a parameter given twice is refused, and a typed one (a number, an
    integer, a boolean, an enumeration) must be given as it is meant: not empty, no white space around.
    """
    values = args.getlist(name)
    if not values:
        return ""
    if not strict:
        return values[0].strip()
    if len(values) > 1:
        raise QueryError(f"'{name}' is given {len(values)} times; give it once")
    if typed and not values[0]:
        raise QueryError(f"'{name}' is empty; leave it out for its default")
    return values[0]


def int_parameter(
    args: MultiDict[str, str], name: str, default: int | None, low: int, high: int, *, strict: bool = False
) -> int | None:
    """The whole number `name` of `args` in ``low..high`` (`default` when absent; see `_text` for `strict`).

    Raises:
        QueryError: it is not a whole number in ASCII digits, or lies outside the range.
    """
    raw = _text(args, name, strict)
    if not raw:
        return default
    if not _INTEGER.fullmatch(raw):
        raise QueryError(f"'{name}' must be a whole number, got {raw[:20]!r}")
    value = int(raw)
    if not low <= value <= high:
        raise QueryError(f"'{name}' must lie between {low} and {high}, got {value}")
    return value


def _flag(args: MultiDict[str, str], name: str, default: bool, strict: bool) -> bool:
    raw = _text(args, name, strict).lower()
    if not raw:
        return default
    if raw not in FLAGS:
        raise QueryError(f"'{name}' must be true or false, got {raw[:20]!r}")
    return FLAGS[raw]


def _choice(args: MultiDict[str, str], name: str, choices: tuple[str, ...], strict: bool) -> str:
    raw = (args.get(name) or "") if not strict else _text(args, name, strict)
    if not raw:
        return choices[0]
    if raw not in choices:
        raise QueryError(f"'{name}' must be one of {', '.join(choices)}, got {raw[:20]!r}")
    return raw


def parse_query(
    args: MultiDict[str, str], *, page_size: int, group_by_paper: bool = True, strict: bool = False
) -> HybridQuery:
    """Build a `HybridQuery` from request parameters.

    Args:
        args: the request's query string.
        page_size: the size when ``size`` is absent.
        group_by_paper: group results by paper (the search page does; the API lets ``group`` choose).
        strict: read the parameters as the API's OpenAPI document types them (each given once; a typed one not
            empty, without white space around), rather than as the search page's forms send them.

    Raises:
        QueryError: a parameter is malformed or out of range.
    """
    # The limits count what was sent, before trimming: the document's maxLength says the same.
    raw_latex = _text(args, "latex", strict, typed=False) if strict else args.get("latex") or ""
    raw_keywords = _text(args, "q", strict, typed=False) if strict else args.get("q") or ""
    if len(raw_latex) > MAX_LATEX_CHARS:
        raise QueryError(f"the formula has {len(raw_latex):,} characters; the limit is {MAX_LATEX_CHARS:,}")
    if len(raw_keywords) > MAX_KEYWORDS_CHARS:
        raise QueryError(f"the keywords have {len(raw_keywords):,} characters; the limit is {MAX_KEYWORDS_CHARS:,}")
    latex, keywords = raw_latex.strip(), raw_keywords.strip()
    try:
        read_query_variables(latex)  # ?a stands for any sub-expression; a malformed one is the caller's to fix
    except QueryVariableError as error:
        raise QueryError(error.message) from None
    raw_weight = _text(args, "w", strict)
    if raw_weight and not _NUMBER.fullmatch(raw_weight):
        raise QueryError(f"'w' (the formula/keywords balance) must be a number in [0, 1], got {raw_weight[:20]!r}")
    weight = float(raw_weight) if raw_weight else 0.5
    if not 0.0 <= weight <= 1.0:
        raise QueryError(f"'w' (the formula/keywords balance) must lie in [0, 1], got {weight}")
    fusion = _choice(args, "fusion", FUSIONS, strict)
    # One box may hold several categories ("math.PR cs.LG"); the parameter may also repeat.
    categories = tuple(dict.fromkeys(c for raw in args.getlist("cat") for c in raw.replace(",", " ").split()))
    year_from = int_parameter(args, "from", None, *YEAR_RANGE, strict=strict)
    year_to = int_parameter(args, "to", None, *YEAR_RANGE, strict=strict)
    if year_from is not None and year_to is not None and year_from > year_to:
        raise QueryError(f"the year range is reversed: from {year_from} to {year_to}")
    group = _flag(args, "group", group_by_paper, strict)
    inline = _choice(args, "inline", INLINE_CHOICES, strict)
    paper = _text(args, "paper", strict, typed=False).strip()
    return HybridQuery(
        latex=latex or None,
        keywords=keywords or None,
        categories=categories,
        year_from=year_from,
        year_to=year_to,
        paper_id=paper or None,
        formula_weight=weight,
        fusion=fusion,  # type: ignore[arg-type]
        page=int_parameter(args, "page", 1, 1, MAX_PAGE, strict=strict) or 1,
        size=int_parameter(args, "size", page_size, 1, MAX_PAGE_SIZE, strict=strict) or page_size,
        group_by_paper=group,
        inline=inline,  # type: ignore[arg-type]
        highlight=_flag(args, "highlight", True, strict),
    )


#: The parameters `parse_query` reads, each with the JSON type a search body gives it (``POST /api/search``).
BODY_TYPES: dict[str, str] = {
    "latex": "string",
    "q": "string",
    "w": "number",
    "cat": "string",  # or a list of strings
    "from": "integer",
    "to": "integer",
    "paper": "string",
    "fusion": "string",
    "inline": "string",
    "page": "integer",
    "size": "integer",
    "group": "boolean",
    "highlight": "boolean",
}
PARAMETERS = tuple(BODY_TYPES)


def _body_value(name: str, value: object) -> str:
    """A JSON body's `value` for parameter `name` as the query string would hold it, if it has the parameter's type."""
    kind = BODY_TYPES[name]
    if kind == "boolean" and isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, bool):  # JSON true and false are no numbers
        if kind == "string" and isinstance(value, str):
            return value
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            value = int(value)  # 2.0 is an integer in JSON Schema
        if kind == "integer" and isinstance(value, int):
            return str(value)
        if kind == "number" and isinstance(value, int | float):
            return str(value)  # NaN and Infinity, which Python's JSON reader takes, then fail as malformed
    article = "an" if kind == "integer" else "a"
    raise QueryError(f"'{name}' must be {article} {kind}, got a JSON {_json_type(value)}")


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), type(value).__name__)


def search_args_of_body(body: object) -> MultiDict[str, str]:
    """The parameters of a JSON search body (``POST /api/search``) as `parse_query` reads them.

    Each value has its parameter's JSON type (`BODY_TYPES`: ``w`` a number, ``page`` an integer, ``group`` a
    boolean, ...), as the document's schema says, or is null (the parameter is absent); ``cat`` may also be a list of
    strings.

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
        if value is None:
            continue
        if name == "cat" and isinstance(value, list):
            for item in value:
                if not isinstance(item, str):
                    kind = _json_type(item)
                    raise QueryError(f"'cat' must be a string or a list of strings, got a JSON {kind} in it")
                args.add(name, item)
        else:
            args.add(name, _body_value(name, value))
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
