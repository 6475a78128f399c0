"""The response bodies of the OpenAPI document (`eqsearch.webui.openapi`): what the JSON API answers with, as JSON
Schema components (hits and their paper groups, equations, papers, ingest jobs and the error body), apart from the
operations that refer to them."""

from __future__ import annotations

from typing import Any


def schema_ref(name: str) -> dict[str, str]:
    """A reference to the component schema ``name``."""
    return {"$ref": f"#/components/schemas/{name}"}


def component_schemas() -> dict[str, Any]:
    """The document's ``components.schemas``: the bodies the API answers with (hits, groups, papers, jobs, errors)."""
    hit = {
        "type": "object",
        "properties": {
            "eq_id": {"type": "string"},
            "paper_id": {"type": "string"},
            "latex": {"type": "string"},
            "mathml": {"type": ["string", "null"], "description": "Sanitised Presentation MathML."},
            "section_title": {"type": "string"},
            "context": {"type": "string"},
            "score": {"type": "number"},
            "formula_score": {"type": ["number", "null"], "description": "The formula side's score, if it matched."},
            "text_score": {"type": ["number", "null"], "description": "The words' BM25 score, if they matched."},
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
            "status": {
                "type": "string",
                "description": "How its LaTeX was converted: ok, approximate (some commands approximated), diagram (a "
                "picture or diagram, kept as LaTeX), failed (kept as LaTeX).",
            },
            "formula_highlight": {"oneOf": [schema_ref("FormulaHighlight"), {"type": "null"}]},
            "source": schema_ref("Source"),
        },
    }
    hit["required"] = list(hit["properties"])  # `api.hit_json` writes every field, null where there is nothing
    source = {
        "type": "object",
        "description": "Where the document comes from: `collection` (arXiv, the ingested folder such as a manual's "
        "package, Python docstrings), `document` (the arXiv id with its version, the page, the module) and `url` "
        "(arXiv papers only, else null).",
        "required": ["collection", "document", "url"],
        "properties": {
            "collection": {"type": "string"},
            "document": {"type": "string"},
            "url": {"type": ["string", "null"]},
        },
    }
    formula_highlight = {
        "type": "object",
        "description": "Which parts of the hit's formula matched the query formula (null: none, no MathML, or no "
        'formula in the query). In `mathml` the same elements carry class="eqsearch-match".',
        "required": ["kind", "nodes", "bindings"],
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
    group = {
        "type": "object",
        "description": "One paper and its matching equations, best first (`group=true`).",
        "required": ["paper_id", "title", "authors", "year", "categories", "abstract", "score", "equations", "source"],
        "properties": {
            "paper_id": {"type": "string"},
            "title": {"type": "string"},
            "authors": {"type": "array", "items": {"type": "string"}},
            "year": {"type": ["integer", "null"]},
            "categories": {"type": "array", "items": {"type": "string"}},
            "abstract": {"type": "string"},
            "score": {"type": "number"},
            "equations": {"type": "array", "items": schema_ref("EquationHit")},
            "source": schema_ref("Source"),
        },
    }
    results = {
        "type": "object",
        "required": ["total", "page", "size", "hits", "groups", "latex_error", "warnings", "took_ms"],
        "properties": {
            "total": {
                "type": "integer",
                "minimum": 0,
                "description": "Equations (papers when grouped) matched, as far as the fused candidate lists reach: a "
                "formula search ranks its nearest candidates, not the whole index, and keyword matches are counted "
                "up to 1,000.",
            },
            "page": {"type": "integer", "minimum": 1},
            "size": {"type": "integer", "minimum": 1},
            "hits": {
                "type": "array",
                "items": schema_ref("EquationHit"),
                "description": "The page's equations (empty when grouped: see groups).",
            },
            "groups": {"type": "array", "items": schema_ref("PaperGroup")},
            "latex_error": {"type": ["string", "null"], "description": "Set when the LaTeX did not parse."},
            "warnings": {"type": "array", "items": {"type": "string"}},
            "took_ms": {"type": "number", "minimum": 0},
        },
    }
    equation = {
        "type": "object",
        "description": "A stored equation document as indexed (its vector left out) with its paper's fields; "
        "`mathml` sanitised. More fields than these may come.",
        "required": ["eq_id", "paper_id", "latex", "mathml"],
        "properties": {
            "eq_id": {"type": "string"},
            "paper_id": {"type": "string"},
            "latex": {"type": "string"},
            "mathml": {"type": ["string", "null"], "description": "Sanitised Presentation MathML."},
            "inline": {"type": "boolean"},
            "number": {"type": "integer"},
            "section_title": {"type": ["string", "null"]},
            "context": {"type": ["string", "null"]},
            "title": {"type": ["string", "null"]},
            "authors": {"type": "array", "items": {"type": "string"}},
            "year": {"type": ["integer", "null"]},
            "categories": {"type": "array", "items": {"type": "string"}},
        },
    }
    paper = {
        "type": "object",
        "description": "A stored paper with its display equations by section, the papers it cites (`citations_out`) "
        "and the indexed papers citing it (`cited_by`). More fields than these may come.",
        "required": ["paper_id", "sections", "cited_by", "inline_count"],
        "properties": {
            "paper_id": {"type": "string"},
            "title": {"type": ["string", "null"]},
            "authors": {"type": "array", "items": {"type": "string"}},
            "year": {"type": ["integer", "null"]},
            "categories": {"type": "array", "items": {"type": "string"}},
            "sections": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["equations"],
                    "properties": {
                        "title": {"type": ["string", "null"]},
                        "equations": {"type": "array", "items": schema_ref("Equation")},
                    },
                },
            },
            "citations_out": {"type": "array"},
            "cited_by": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"paper_id": {"type": "string"}, "title": {"type": ["string", "null"]}},
                },
            },
            "inline_count": {"type": "integer", "minimum": 0, "description": "Inline formulas indexed."},
        },
    }
    job = {
        "type": "object",
        "description": "An ingest job document (`eqsearch.ingest.jobs`), with `live`, `resumable` and `path` added.",
        "required": ["job_id", "state"],
        "properties": {
            "job_id": {"type": "string"},
            "sources": {"type": "array", "items": {"type": "string"}},
            "path": {"type": "string", "description": "The sources, comma-separated."},
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
            "resumable": {"type": "boolean", "description": "Failed or interrupted: POST .../resume runs it again."},
        },
    }
    error = {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string", "description": "A stable machine code (each response lists its own)."},
                    "message": {"type": "string", "description": "One sentence for a person: what, and what to do."},
                    "hint": {"type": "string", "description": "What to do about it, when the server knows."},
                },
            }
        },
    }
    rendered = {
        "type": "object",
        "required": ["ok", "mathml", "status", "message"],
        "properties": {
            "ok": {"type": "boolean", "description": "false: KaTeX refused the LaTeX (message says why)."},
            "mathml": {"type": ["string", "null"], "description": "Sanitised MathML; empty for an empty formula."},
            "status": {"type": "string", "description": "ok, empty, or how the conversion failed."},
            "reason": {"type": ["string", "null"]},
            "message": {"type": ["string", "null"]},
        },
    }
    return {
        "Error": error,
        "EquationHit": hit,
        "FormulaHighlight": formula_highlight,
        "Source": source,
        "PaperGroup": group,
        "SearchResults": results,
        "Equation": equation,
        "Paper": paper,
        "Rendered": rendered,
        "Job": job,
        "JobList": {
            "type": "object",
            "required": ["jobs"],
            "properties": {"jobs": {"type": "array", "items": schema_ref("Job"), "description": "Newest first."}},
        },
    }
