"""The OpenAPI 3.1 document served at ``/api/openapi.json``, kept in code next to the views it describes.

Clients are generated from it, so it says what the server does, no more and no less: each parameter with the
constraints the views enforce (lengths, ranges, enumerations, the JSON type of every body field, which fields a body
needs), every status each operation can answer with its error body, and the admin API's two ways in (a Bearer token,
or the admin session's cookie with its CSRF header). ``tests/webui/test_openapi_contract.py`` holds the server to it
with schemathesis. Where JSON Schema cannot state a rule (a reversed year range, a malformed query variable, "a
formula or keywords" across two query parameters) the 400 response says it in words.
"""

from __future__ import annotations

from typing import Any

from eqsearch import __version__
from eqsearch.engine.search.query import FUSIONS, INLINE_CHOICES, MAX_PAGE_SIZE
from eqsearch.webui.openapi_schemas import component_schemas, schema_ref
from eqsearch.webui.query import MAX_KEYWORDS_CHARS, MAX_LATEX_CHARS, MAX_PAGE, YEAR_RANGE
from eqsearch.webui.services import MAX_RENDER_CHARS

#: What Python's ``str.strip()`` removes (``str.isspace``), spelled out: a search needs a formula or keywords that
#: are more than these. Listed rather than written ``\s``, whose meaning differs between regex dialects.
_WHITESPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace())
#: A string holding something besides white space (JSON Schema's ``pattern`` is unanchored).
NOT_BLANK = f"[^{_WHITESPACE}]"

#: Session cookie and CSRF header of the admin pages (`eqsearch.webui.app`, `eqsearch.webui.security`).
SESSION_COOKIE = "eqsearch_session"
CSRF_HEADER = "X-CSRF-Token"
#: The request line gunicorn reads at most (``limit_request_line``), past which it answers 414.
REQUEST_LINE_LIMIT = 4094

_ERROR_REF = "#/components/schemas/Error"


def _param(name: str, description: str, schema: dict[str, Any], where: str = "query", required: bool = False) -> dict:
    return {"name": name, "in": where, "required": required, "description": description, "schema": schema}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str, *codes: str) -> dict[str, Any]:
    """An error response: the ``Error`` body, its ``code`` one of `codes`."""
    schema = {
        "allOf": [
            {"$ref": _ERROR_REF},
            {"properties": {"error": {"properties": {"code": {"type": "string", "enum": list(codes)}}}}},
        ]
    }
    return _json(schema, description)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` or null (a JSON body's null means the parameter is absent)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        nullable = {**schema, "type": [kind, "null"]}
        if "enum" in schema:
            nullable["enum"] = [*schema["enum"], None]
        return nullable
    return {"anyOf": [schema, {"type": "null"}]}


def _responses(*statuses: str, bad_request: str, **answers: dict[str, Any]) -> dict[str, Any]:
    """An operation's responses: the errors of `statuses` (their shared wording), and `answers` (status -> response:
    its successes, and errors worded for it alone).

    Every operation may get 400 (`bad_request`, or gunicorn's refusal of a request it cannot read), 414 and 431 (an
    over-long request line or headers: gunicorn refuses them before the app sees them).
    """
    known = {
        "401": _error(
            "No admin credentials, or the Bearer token is not the admin token.",
            "unauthorized",
        ),
        "403": _error(
            "Admin is switched off (the server has no EQSEARCH_ADMIN_TOKEN: admin_disabled), or a request on the "
            f"admin session lacks its {CSRF_HEADER} header (csrf).",
            "admin_disabled",
            "csrf",
        ),
        "404": _error("No such equation, paper or job (or no such URL).", "not_found"),
        "409": _error(
            "The job's state refuses the request: it is already running, or it is neither failed nor interrupted.",
            "conflict",
        ),
        "413": _error("The body is larger than 64 KiB.", "request_entity_too_large"),
        "503": _error(
            "Elasticsearch is not answering (backend_unavailable), nothing is indexed yet (not_indexed), or another "
            "part of the service (KaTeX, the model bundle) is broken (unavailable).",
            "backend_unavailable",
            "not_indexed",
            "unavailable",
        ),
    }
    responses: dict[str, Any] = {}
    responses["400"] = _error(
        bad_request + " Also: a request the server cannot read as HTTP (bad_request).",
        "invalid_request",
        "bad_request",
    )
    for status in statuses:
        responses[status] = known[status]
    responses["414"] = _error(
        f"The request line is longer than {REQUEST_LINE_LIMIT:,} bytes (gunicorn's limit, as URL-encoded: a "
        "formula's non-ASCII characters take up to 12 bytes each); send a long formula by POST.",
        "request_line_too_long",
    )
    responses["431"] = _error("The request's headers are too large.", "headers_too_large")
    responses.update(answers)
    return dict(sorted(responses.items()))


def _search_params() -> list[dict[str, Any]]:
    low, high = YEAR_RANGE
    return [
        _param(
            "latex",
            "A formula in LaTeX. It may hold query variables: ? then a letter, then letters or digits (?a, ?x1), each "
            "standing for any sub-expression, a repeated one for the same one each time (different ones may bind "
            "equal parts): ?a^2 + ?b^2 = ?c^2 finds x^2 + y^2 = z^2 and 3^2 + 4^2 = 5^2, anywhere inside a formula. "
            "With variables, only the formulas the pattern matches come back (from the 300 nearest structural "
            "candidates). \\? is a literal question mark, and so is a ? followed by a space, an operator or the "
            "end. A malformed variable (?1x, ??, ?{a}, one inside \\text{...} or an environment's name) is a 400 "
            "saying where. The length limit counts the characters sent, white space around included.",
            {"type": "string", "maxLength": MAX_LATEX_CHARS},
        ),
        _param("q", "Keywords.", {"type": "string", "maxLength": MAX_KEYWORDS_CHARS}),
        _param(
            "w",
            "Formula <-> keywords balance: 1 ranks by the formula only, 0 by the keywords only.",
            {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
        ),
        _param(
            "cat",
            "Categories to keep (repeat the parameter, or separate them by spaces or commas).",
            {"type": "array", "items": {"type": "string"}},
        ),
        _param(
            "from",
            "First publication year (not after `to`).",
            {"type": "integer", "minimum": low, "maximum": high},
        ),
        _param("to", "Last publication year.", {"type": "integer", "minimum": low, "maximum": high}),
        _param("paper", "Keep only this paper's equations.", {"type": "string"}),
        _param(
            "fusion",
            "How the formula and the keywords combine: evidence (the formula ranks equations, the words re-weigh "
            "them by their paper and context), rrf or linear.",
            {"type": "string", "enum": list(FUSIONS), "default": FUSIONS[0]},
        ),
        _param(
            "inline",
            "Inline formulas of the running text (those of three symbols or more are indexed): searched with the "
            "display equations (include), left out (exclude: displays only), or alone (only).",
            {"type": "string", "enum": list(INLINE_CHOICES), "default": INLINE_CHOICES[0]},
        ),
        _param(
            "group",
            "Group results by paper (true or false; 1/0 and yes/no are read too).",
            {"type": "boolean", "default": False},
        ),
        _param(
            "highlight",
            "Say which parts of each hit's formula matched the query formula (formula_highlight); false saves the "
            "server ~0.35 ms of CPU per hit for clients that do not show them.",
            {"type": "boolean", "default": True},
        ),
        _param("page", "1-based page.", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1}),
        _param(
            "size",
            "Hits (or groups) per page (default: the server's page size, 10 unless configured).",
            {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
        ),
    ]


def _search_body(params: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON body of ``POST /api/search``: the GET parameters by name, with JSON types."""
    properties: dict[str, Any] = {}
    for param in params:
        name, schema = param["name"], param["schema"]
        if name == "cat":
            schema = {"anyOf": [{"type": "string"}, schema]}
        properties[name] = {**_nullable(schema), "description": param["description"]}
    return {
        "type": "object",
        "description": "The GET parameters by name, each of its JSON type or null (absent); `cat` a string or a list "
        "of strings. It needs a formula or keywords: `latex` or `q` holding more than white space.",
        "properties": properties,
        "additionalProperties": False,
        "anyOf": [
            {"required": [name], "properties": {name: {"type": "string", "pattern": NOT_BLANK}}}
            for name in ("latex", "q")
        ],
        "example": {"latex": "\\sum_{i=1}^n x_i^2", "q": "inequality", "cat": ["math.CA"], "page": 1},
    }


def _stored(summary: str, id_name: str, id_description: str, schema: str, answer: str) -> dict[str, Any]:
    """The path item of a stored document looked up by its id: the document, 404 when no such id, 503."""
    id_schema = {"type": "string", "minLength": 1}
    return {
        "get": {
            "summary": summary,
            "parameters": [_param(id_name, id_description, id_schema, "path", True)],
            "responses": _responses(
                "404", "503", bad_request="The request is malformed.", **{"200": _json(schema_ref(schema), answer)}
            ),
        }
    }


def openapi_document(server_url: str) -> dict[str, Any]:
    """The API's OpenAPI description.

    Args:
        server_url: the base URL the document lists as its server.
    """
    search_params = _search_params()
    # Admin operations take either credential: a Bearer token (scripts) or the admin pages' session cookie, with which
    # a POST also needs the session's CSRF token in the X-CSRF-Token header (`eqsearch.webui.security`).
    admin = [{"bearerAuth": []}, {"adminSession": []}]
    job_id = _param("job_id", "The job's id.", {"type": "string", "minLength": 1}, "path", True)
    search_ok = {"200": _json(schema_ref("SearchResults"), "One page of results.")}
    # A search with neither a formula nor keywords is a 400, not an empty page: it is always a client's mistake (a
    # field left unset), and a 400 that says so finds it where an empty page would hide it. OpenAPI cannot make one of
    # two query parameters required, so the GET says it in words (and in its 400); the POST body's schema says it with
    # anyOf. Other rules no schema can state (a reversed year range, a malformed query variable) are 400s too.
    search_refusals = (
        "A parameter is malformed or out of range (the message names it); or the search has neither a formula nor "
        "keywords (`latex` and `q` both absent or white space); or `from` is after `to`; or `latex` holds a malformed "
        "query variable (the message says where)."
    )
    render_ok = {
        "200": _json(schema_ref("Rendered"), "The MathML, or ok=false and a message when KaTeX refuses the LaTeX.")
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "eqsearch API",
            "version": __version__,
            "description": "Search mathematics by formula (LaTeX) and keywords. Errors are "
            '{"error": {"code", "message"}} with the HTTP status; each response lists its codes. An undeclared '
            "method on a path is a 405 with an Allow header.",
        },
        "servers": [{"url": server_url}],
        "paths": {
            "/api/search": {
                "get": {
                    "summary": "Hybrid search by formula and/or keywords",
                    "description": "Give `latex`, `q` or both (not only white space): a search with neither is a "
                    "400. Each parameter but `cat` at most once, and one of a number, integer, boolean or enumeration "
                    "type not empty (leave it out for its default). A formula too long for a URL goes by POST.",
                    "parameters": search_params,
                    "responses": _responses("503", bad_request=search_refusals, **search_ok),
                },
                "post": {
                    "summary": "Hybrid search with the parameters in a JSON body (for formulas too long for a URL)",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": _search_body(search_params)}},
                    },
                    "responses": _responses(
                        "413",
                        "503",
                        bad_request=search_refusals + " Or the body is not a JSON object of these parameters with "
                        "their JSON types.",
                        **search_ok,
                    ),
                },
            },
            "/api/equations/{eq_id}": _stored(
                "One stored equation", "eq_id", "The equation's id.", "Equation", "The equation document."
            ),
            "/api/equations/{eq_id}/similar": {
                "get": {
                    "summary": "The equations nearest to a stored one",
                    "description": "An id that names no equation (or one without a vector) gives an empty page.",
                    "parameters": [
                        _param("eq_id", "The equation's id.", {"type": "string", "minLength": 1}, "path", True),
                        _param("size", "How many.", {"type": "integer", "minimum": 1, "maximum": 100, "default": 10}),
                    ],
                    "responses": _responses(
                        "503",
                        bad_request="`size` is not a whole number in 1..100 (or is empty, or given twice).",
                        **{"200": _json(schema_ref("SearchResults"), "The neighbours.")},
                    ),
                }
            },
            "/api/papers/{paper_id}": _stored(
                "A paper with its equations by section and citations out and in",
                "paper_id",
                "The paper's id.",
                "Paper",
                "The paper.",
            ),
            "/api/render": {
                "get": {
                    "summary": "LaTeX -> sanitised MathML (live preview)",
                    "description": "Bad LaTeX is no HTTP error: the answer has ok=false and a message. An empty or "
                    "white-space formula gives status=empty.",
                    "parameters": [
                        _param(
                            "latex", "The formula.", {"type": "string", "maxLength": MAX_RENDER_CHARS}, required=True
                        )
                    ],
                    "responses": _responses(
                        "503",
                        bad_request=f"`latex` is missing, or longer than {MAX_RENDER_CHARS:,} characters.",
                        **render_ok,
                    ),
                },
                "post": {
                    "summary": "LaTeX -> sanitised MathML (JSON body)",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["latex"],
                                    "properties": {"latex": {"type": "string", "maxLength": MAX_RENDER_CHARS}},
                                }
                            }
                        },
                    },
                    "responses": _responses(
                        "413",
                        "503",
                        bad_request='The body is not a JSON object {"latex": "..."}, or the formula is longer than '
                        f"{MAX_RENDER_CHARS:,} characters.",
                        **render_ok,
                    ),
                },
            },
            "/api/jobs": {
                "get": {
                    "summary": "Recent ingest jobs",
                    "security": admin,
                    "responses": _responses(
                        "401",
                        "403",
                        "503",
                        bad_request="The request is malformed.",
                        **{"200": _json(schema_ref("JobList"), "Recent jobs, newest first.")},
                    ),
                },
                "post": {
                    "summary": "Start an ingest job from a path on the server",
                    "description": "The same path again resumes its job (papers already checkpointed are skipped) "
                    "unless `restart` is true. The path must lie under the server's EQSEARCH_INGEST_ROOT when that is "
                    "set.",
                    "security": admin,
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["path"],
                                    "properties": {
                                        "path": {
                                            "type": "string",
                                            "pattern": "^/[^\\x00]*$",
                                            "description": "An absolute path on the server: LaTeX sources, arXiv "
                                            "tarballs, a papers JSONL, or a folder of them.",
                                        },
                                        "restart": {
                                            "type": ["boolean", "null"],
                                            "default": False,
                                            "description": "Forget the job's checkpoints and read everything again.",
                                        },
                                        "inline": {
                                            "type": ["boolean", "null"],
                                            "default": True,
                                            "description": "Index the inline formulas (of three symbols or more) too.",
                                        },
                                    },
                                }
                            }
                        },
                    },
                    "responses": _responses(
                        "401",
                        "403",
                        "409",
                        "413",
                        "503",
                        bad_request='The body is not a JSON object {"path": "/absolute/path"} with boolean flags.',
                        **{
                            "202": _json(schema_ref("Job"), "The job, started."),
                            "403": _error(
                                "Admin is switched off (admin_disabled), a request on the admin session lacks its "
                                f"{CSRF_HEADER} header (csrf), or the path lies outside the server's "
                                "EQSEARCH_INGEST_ROOT (path_forbidden).",
                                "admin_disabled",
                                "csrf",
                                "path_forbidden",
                            ),
                            "422": _error(
                                "The path does not exist on the server (or cannot be looked up there).",
                                "path_not_found",
                            ),
                        },
                    ),
                },
            },
            "/api/jobs/{job_id}": {
                "get": {
                    "summary": "One ingest job: state, progress, errors by reason",
                    "security": admin,
                    "parameters": [job_id],
                    "responses": _responses(
                        "401",
                        "403",
                        "404",
                        "503",
                        bad_request="The request is malformed.",
                        **{"200": _json(schema_ref("Job"), "The job.")},
                    ),
                },
            },
            "/api/jobs/{job_id}/resume": {
                "post": {
                    "summary": "Resume a failed or interrupted job",
                    "security": admin,
                    "parameters": [job_id],
                    "responses": _responses(
                        "401",
                        "403",
                        "404",
                        "409",
                        "503",
                        bad_request="The request is malformed.",
                        **{"202": _json(schema_ref("Job"), "The job, running again.")},
                    ),
                },
            },
        },
        "components": {
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The server's admin token (EQSEARCH_ADMIN_TOKEN): Authorization: Bearer TOKEN.",
                },
                "adminSession": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": SESSION_COOKIE,
                    "description": "The session the admin login form (/admin/login) starts. A POST on it must also "
                    f"send the session's CSRF token in the {CSRF_HEADER} header.",
                },
            },
            "schemas": component_schemas(),
        },
    }
