"""The OpenAPI 3.1 document served at ``/api/openapi.json`` (kept next to the views it describes, in code)."""

from __future__ import annotations

from typing import Any

from eqsearch import __version__
from eqsearch.engine.search.query import FUSIONS


def _param(name: str, description: str, schema: dict[str, Any], where: str = "query", required: bool = False) -> dict:
    return {"name": name, "in": where, "required": required, "description": description, "schema": schema}


def _body(field: str, **optional: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": {field: {"type": "string"}, **optional}, "required": [field]}
    return {"content": {"application/json": {"schema": schema}}}


def _json(schema_ref: str, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": schema_ref}}}}


_ERRORS = {
    "400": _json("#/components/schemas/Error", "The request is malformed (the message says which parameter)."),
    "404": _json("#/components/schemas/Error", "No such equation, paper or job."),
    "503": _json("#/components/schemas/Error", "Elasticsearch is not answering."),
}
_ADMIN_ERRORS = {
    **_ERRORS,
    "401": _json("#/components/schemas/Error", "No or wrong admin token."),
    "403": _json("#/components/schemas/Error", "Admin is switched off, or a session request lacks its CSRF token."),
}
_ID = {"type": "string"}


def openapi_document(server_url: str) -> dict[str, Any]:
    """The API's OpenAPI description.

    Args:
        server_url: the base URL the document lists as its server.
    """
    search_params = [
        _param(
            "latex",
            "A formula in LaTeX. It may hold query variables: ? then a letter, then letters or digits (?a, ?x1), each "
            "standing for any sub-expression, a repeated one for the same one each time (different ones may bind "
            "equal parts): ?a^2 + ?b^2 = ?c^2 finds x^2 + y^2 = z^2 and 3^2 + 4^2 = 5^2, anywhere inside a formula. "
            "With variables, only the formulas the pattern matches come back (from the 300 nearest structural "
            "candidates). \\? is a literal question mark, and so is a ? followed by a space, an operator or the "
            "end. A malformed variable (?1x, ??, ?{a}, one inside \\text{...} or an environment's name) is a 400 "
            "saying where.",
            {"type": "string", "maxLength": 4000},
        ),
        _param("q", "Keywords.", {"type": "string", "maxLength": 1000}),
        _param(
            "w",
            "Formula <-> keywords balance: 1 ranks by the formula only, 0 by the keywords only.",
            {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
        ),
        _param("cat", "A category to keep (repeat for several).", {"type": "array", "items": {"type": "string"}}),
        _param("from", "First publication year.", {"type": "integer"}),
        _param("to", "Last publication year.", {"type": "integer"}),
        _param("paper", "Keep only this paper's equations.", _ID),
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
            {"type": "string", "enum": ["include", "exclude", "only"], "default": "include"},
        ),
        _param("group", "Group results by paper.", {"type": "boolean", "default": False}),
        _param(
            "highlight",
            "Say which parts of each hit's formula matched the query formula (formula_highlight); false saves the "
            "server ~0.35 ms of CPU per hit for clients that do not show them.",
            {"type": "boolean", "default": True},
        ),
        _param("page", "1-based page.", {"type": "integer", "minimum": 1, "default": 1}),
        _param("size", "Hits (or groups) per page.", {"type": "integer", "minimum": 1, "maximum": 100}),
    ]
    hit = {
        "type": "object",
        "properties": {
            "eq_id": _ID,
            "paper_id": _ID,
            "latex": {"type": "string"},
            "mathml": {"type": ["string", "null"], "description": "Sanitised Presentation MathML."},
            "section_title": {"type": "string"},
            "context": {"type": "string"},
            "score": {"type": "number"},
            "matched": {"type": "string", "enum": ["formula", "text", "both"]},
            "channels": {
                "type": "array",
                "items": {"type": "string", "enum": ["structure", "embedding", "text", "context"]},
                "description": "The channels whose ranked lists found the equation: structure (BM25 over the "
                "formula's structural terms), embedding (kNN on the model's vectors), text (BM25 over the words), "
                "context (kNN of the keywords' embedding on the equations' context embeddings).",
            },
            "highlights": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
                "description": "Field -> escaped fragments with <mark> around matched terms.",
            },
            "title": {"type": "string"},
            "authors": {"type": "array", "items": {"type": "string"}},
            "year": {"type": ["integer", "null"]},
            "categories": {"type": "array", "items": {"type": "string"}},
            "abstract": {"type": "string"},
            "inline": {
                "type": "boolean",
                "description": "An inline formula of the running text (id `<paper key>:i<number>`), not a display "
                "equation.",
            },
            "formula_highlight": {"oneOf": [{"$ref": "#/components/schemas/FormulaHighlight"}, {"type": "null"}]},
            "source": {
                "type": "object",
                "description": "Where the document comes from: `collection` (arXiv, the ingested folder such as a "
                "manual's package, Python docstrings), `document` (the arXiv id with its version, the page, the "
                "module) and `url` (arXiv papers only, else null).",
                "properties": {
                    "collection": {"type": "string"},
                    "document": {"type": "string"},
                    "url": {"type": ["string", "null"]},
                },
            },
        },
    }
    formula_highlight = {
        "type": "object",
        "description": "Which parts of the hit's formula matched the query formula (null: none, no MathML, or no "
        'formula in the query). In `mathml` the same elements carry class="eqsearch-match".',
        "properties": {
            "kind": {
                "type": "string",
                "enum": ["pattern", "shared"],
                "description": "pattern: the sub-expression a query with variables matched; shared: the largest "
                "sub-expression the hit shares with a query without variables (exact, else in other letters).",
            },
            "nodes": {
                "type": "array",
                "items": {"type": "integer", "minimum": 0},
                "description": "Pre-order indices of the matched elements of the hit's MathML: <math> is 0, then every "
                "element in document order (elements only, not text).",
            },
            "bindings": {
                "type": "object",
                "description": "?name -> what the variable matched (pattern only): its text (LaTeX-like, e.g. x^{2}) "
                "and its elements (as in nodes).",
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string"},
                        "nodes": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    },
                },
            },
        },
    }
    job = {
        "type": "object",
        "description": "An ingest job document (`eqsearch.ingest.jobs`), with `live`, `resumable` and `path` added.",
        "properties": {
            "job_id": _ID,
            "sources": {"type": "array", "items": {"type": "string"}},
            "state": {"type": "string", "enum": ["running", "finished", "failed", "interrupted"]},
            "progress": {
                "type": "object",
                "properties": {"papers_done": {"type": "integer"}, "papers_total": {"type": "integer"}},
            },
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "errors_by_reason": {
                "type": "object",
                "description": "stage:reason -> count (extract:..., convert:..., encode:..., index:...).",
                "additionalProperties": {"type": "integer"},
            },
            "failures": {"type": "array", "items": {"type": "object"}, "description": "First refused documents."},
            "message": {"type": ["string", "null"]},
            "created_at": {"type": "string", "format": "date-time"},
            "updated_at": {"type": "string", "format": "date-time"},
            "live": {"type": "boolean", "description": "A thread or process is running it now."},
            "resumable": {"type": "boolean"},
        },
    }
    admin = [{"bearerAuth": []}]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "eqsearch API",
            "version": __version__,
            "description": "Search mathematics by formula (LaTeX) and keywords. Errors: {error: {code, message}}.",
        },
        "servers": [{"url": server_url}],
        "paths": {
            "/api/search": {
                "get": {
                    "summary": "Hybrid search by formula and/or keywords",
                    "parameters": search_params,
                    "responses": {
                        "200": _json("#/components/schemas/SearchResults", "One page of results."),
                        **_ERRORS,
                        "414": _json("#/components/schemas/Error", "The URL is too long: send the search by POST."),
                    },
                },
                "post": {
                    "summary": "Hybrid search with the parameters in a JSON body (for formulas too long for a URL)",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "description": "The GET parameters by name; `cat` may be a list of strings.",
                                    "properties": {
                                        p["name"]: (
                                            {"oneOf": [p["schema"], {"type": "array", "items": {"type": "string"}}]}
                                            if p["name"] == "cat"
                                            else p["schema"]
                                        )
                                        for p in search_params
                                    },
                                    "additionalProperties": False,
                                }
                            }
                        }
                    },
                    "responses": {
                        "200": _json("#/components/schemas/SearchResults", "One page of results."),
                        **_ERRORS,
                        "413": _json("#/components/schemas/Error", "The body is larger than 64 KiB."),
                    },
                },
            },
            "/api/equations/{eq_id}": {
                "get": {
                    "summary": "One stored equation",
                    "parameters": [_param("eq_id", "The equation's id.", _ID, "path", True)],
                    "responses": {"200": {"description": "The equation document."}, **_ERRORS},
                }
            },
            "/api/equations/{eq_id}/similar": {
                "get": {
                    "summary": "The equations nearest to a stored one",
                    "parameters": [
                        _param("eq_id", "The equation's id.", _ID, "path", True),
                        _param("size", "How many.", {"type": "integer", "minimum": 1, "maximum": 100, "default": 10}),
                    ],
                    "responses": {"200": _json("#/components/schemas/SearchResults", "The neighbours."), **_ERRORS},
                }
            },
            "/api/papers/{paper_id}": {
                "get": {
                    "summary": "A paper with its equations by section and citations out and in",
                    "parameters": [_param("paper_id", "The paper's id.", _ID, "path", True)],
                    "responses": {"200": {"description": "The paper."}, **_ERRORS},
                }
            },
            "/api/render": {
                "get": {
                    "summary": "LaTeX -> sanitised MathML (live preview)",
                    "parameters": [
                        _param("latex", "The formula.", {"type": "string", "maxLength": 4000}, required=True)
                    ],
                    "responses": {
                        "200": _json("#/components/schemas/Rendered", "The MathML, or ok=false and a message."),
                        **_ERRORS,
                    },
                },
                "post": {
                    "summary": "LaTeX -> sanitised MathML (JSON body)",
                    "requestBody": _body("latex"),
                    "responses": {
                        "200": _json("#/components/schemas/Rendered", "The MathML, or ok=false and a message."),
                        **_ERRORS,
                    },
                },
            },
            "/api/jobs": {
                "get": {
                    "summary": "Recent ingest jobs",
                    "security": admin,
                    "responses": {"200": {"description": "{jobs: [Job]}"}, **_ADMIN_ERRORS},
                },
                "post": {
                    "summary": "Start an ingest job from a path on the server",
                    "security": admin,
                    "requestBody": _body(
                        "path",
                        restart={"type": "boolean", "default": False},
                        inline={
                            "type": "boolean",
                            "default": True,
                            "description": "Index the inline formulas (of three symbols or more) too.",
                        },
                    ),
                    "responses": {"202": _json("#/components/schemas/Job", "The job, queued."), **_ADMIN_ERRORS},
                },
            },
            "/api/jobs/{job_id}": {
                "get": {
                    "summary": "One ingest job: state, progress, errors by reason",
                    "security": admin,
                    "parameters": [_param("job_id", "The job's id.", _ID, "path", True)],
                    "responses": {"200": _json("#/components/schemas/Job", "The job."), **_ADMIN_ERRORS},
                },
            },
            "/api/jobs/{job_id}/resume": {
                "post": {
                    "summary": "Resume a failed or interrupted job",
                    "security": admin,
                    "parameters": [_param("job_id", "The job's id.", _ID, "path", True)],
                    "responses": {"202": _json("#/components/schemas/Job", "The job, queued again."), **_ADMIN_ERRORS},
                },
            },
        },
        "components": {
            "securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer", "description": "EQSEARCH_ADMIN_TOKEN"}
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {
                        "error": {
                            "type": "object",
                            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                            "required": ["code", "message"],
                        }
                    },
                },
                "EquationHit": hit,
                "FormulaHighlight": formula_highlight,
                "SearchResults": {
                    "type": "object",
                    "properties": {
                        "total": {
                            "type": "integer",
                            "description": "Equations (papers when grouped) matched, as far as the fused candidate "
                            "lists reach: a formula search ranks its nearest candidates, not the whole index, and "
                            "keyword matches are counted up to 1,000.",
                        },
                        "page": {"type": "integer"},
                        "size": {"type": "integer"},
                        "hits": {"type": "array", "items": {"$ref": "#/components/schemas/EquationHit"}},
                        "groups": {"type": "array", "items": {"type": "object"}},
                        "latex_error": {"type": ["string", "null"], "description": "Set when the LaTeX did not parse."},
                        "warnings": {"type": "array", "items": {"type": "string"}},
                        "took_ms": {"type": "number"},
                    },
                },
                "Rendered": {
                    "type": "object",
                    "properties": {
                        "ok": {"type": "boolean"},
                        "mathml": {"type": ["string", "null"]},
                        "status": {"type": "string"},
                        "reason": {"type": ["string", "null"]},
                        "message": {"type": ["string", "null"]},
                    },
                },
                "Job": job,
            },
        },
    }
