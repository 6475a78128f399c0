"""The search's errors and the one place Elasticsearch's exceptions become them.

Every request of a search goes through `call`, so a missing index, a refused query or an unreachable cluster reaches
the caller as a `SearchError` with a sentence a user can act on; a failed search inside an ``_msearch`` becomes one
through `list_failed`, with the shards' own reasons rather than Elasticsearch's summary.
"""

from __future__ import annotations

from typing import Any

from elasticsearch import ApiError, NotFoundError
from elasticsearch import ConnectionError as EsConnectionError
from eqsearch.engine.errors import EqsearchError

__all__ = ["EquationNotFoundError", "SearchError", "call", "list_failed"]


class SearchError(EqsearchError):
    """Elasticsearch refused a search or did not answer."""

    exit_code = 9


class EquationNotFoundError(EqsearchError):
    """No equation has the id asked for (or it has no vector)."""

    exit_code = 4


def call(method: Any, **kwargs: Any) -> Any:
    """``method(**kwargs)`` (a client method), with Elasticsearch's errors as `SearchError`."""
    try:
        return method(**kwargs)
    except NotFoundError as error:
        raise SearchError(
            f"the index is missing: {error.message}", hint="create it with 'eqsearch index create' or ingest"
        ) from error
    except (ApiError, EsConnectionError) as error:
        raise SearchError(f"Elasticsearch refused the search: {error}") from error


def list_failed(name: str, error: Any) -> SearchError:
    """The error of one ranked list's search in an ``_msearch``, with the shards' own reasons, and what to do when
    the query itself was too large."""
    if not isinstance(error, dict):
        return SearchError(f"the {name} search failed: {error}")
    if _error_types(error) & {"too_many_clauses", "too_many_nested_clauses"}:
        return SearchError(
            f"the {name} search failed: the formula is too long to search (its query has more clauses than "
            "Elasticsearch's indices.query.bool.max_clause_count)",
            hint="search a part of the formula, or give the node more heap (the limit grows with it)",
        )
    reasons = [
        cause["reason"] for cause in error.get("root_cause") or () if isinstance(cause, dict) and cause.get("reason")
    ]
    return SearchError(f"the {name} search failed: {'; '.join(reasons) or error.get('reason') or error}")


def _error_types(error: Any) -> set[str]:
    """Every ``type`` in an Elasticsearch error and its causes, however deep."""
    if isinstance(error, dict):
        own = {error["type"]} if isinstance(error.get("type"), str) else set()
        return own.union(*(_error_types(value) for value in error.values()))
    if isinstance(error, list):
        return set().union(*(_error_types(value) for value in error))
    return set()
