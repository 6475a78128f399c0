"""What the equations index says about itself (its mapping's ``_meta``), read rarely and checked before a search.

The index records the mapping version it was made with, the formula encoder and the text encoder that filled it,
the vector similarity and the text analyzer. A search reads them to decide what it may ask (the rerank's fields
exist from mapping version 5), whether its own vectors are comparable with the stored ones, and how to normalise a
query vector. A migration may move the alias to a new index at any time, so ``_meta`` is re-read every
`META_SECONDS`, and the callers' caches of what was computed for the old one are dropped when it changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError
from eqsearch.engine.index.mappings import RERANK_FIELDS_SINCE

__all__ = ["META_SECONDS", "IndexMeta"]

#: How long the equations index's ``_meta`` (similarity, encoder) is trusted before it is read again.
META_SECONDS = 30.0


class IndexMeta:
    """The ``_meta`` of one alias's index, cached for `META_SECONDS`.

    Args:
        client: a connected Elasticsearch client.
        alias: the equations alias.
        on_change: called when a re-read finds different ``_meta`` (the alias moved): caches of vectors
            normalised for the old index are dropped there.
    """

    def __init__(self, client: Elasticsearch, alias: str, on_change: Callable[[], None] = lambda: None) -> None:
        self.client = client
        self.alias = alias
        self.on_change = on_change
        self._meta: dict[str, Any] | None = None
        self._read_at = 0.0

    def read(self) -> dict[str, Any]:
        """The index's ``_meta`` (empty when the index is missing)."""
        now = time.monotonic()
        if self._meta is None or now - self._read_at > META_SECONDS:
            try:
                mappings = self.client.indices.get_mapping(index=self.alias)
            except NotFoundError:
                return {}
            meta = next(iter(mappings.values()))["mappings"].get("_meta", {})
            if self._meta is not None and meta != self._meta:
                self.on_change()
            self._meta, self._read_at = meta, now
        return self._meta

    def analyzer(self) -> str:
        """The text analyzer of the index (``english`` or ``standard``)."""
        return str(self.read().get("analyzer", "standard"))

    def similarity(self) -> str:
        """How the index compares formula vectors (``cosine``, ``dot_product``, ``max_inner_product``): a query
        vector is normalised for the first two and rounded to int8 for cosine (`engine.index.vectors`)."""
        return str(self.read().get("similarity") or "max_inner_product")

    def encoder_mismatch(self, identity: str | None) -> str | None:
        """Why a formula encoder of this ``identity`` cannot be compared with the index's vectors, or None when it
        can (an index made before identities were recorded is trusted)."""
        recorded = self.read().get("encoder")
        if recorded is None or identity is None or recorded == identity:
            return None
        return (
            f"the formula embedding is off: the index holds vectors of the model {recorded}, but this server encodes "
            f"formulas with {identity}; an administrator re-embeds the index with 'eqsearch index migrate "
            "equations --reencode' (keyword search still works)"
        )

    def text_encoder_mismatch(self, identity: str) -> str | None:
        """Why keywords embedded by a text encoder of this ``identity`` cannot search the index's context vectors,
        or None when they can."""
        recorded = self.read().get("text_encoder")
        if recorded is None or recorded == identity:
            return None
        return (
            f"the context channel is off: the index holds context vectors of {recorded}, but this server embeds "
            f"text with {identity}; an administrator migrates the index with 'eqsearch index migrate equations' "
            "(keyword search still works)"
        )

    def rerank_fields(self) -> tuple[bool, str | None]:
        """Whether the index holds what the structural rerank needs (mapping version `RERANK_FIELDS_SINCE`: the
        equations' sizes, spans with renamed variables), and, for an older index, a warning that says how an
        administrator upgrades it."""
        version = self.read().get("mapping_version")
        if version is None:
            return False, None
        if version >= RERANK_FIELDS_SINCE:
            return True, None
        return False, (
            f"the structural rerank matches sub-expressions by their letters and weighs them by the query's size "
            f"only: the index (mapping version {version}) predates renamed variables and the equations' sizes; an "
            "administrator migrates it with 'eqsearch index migrate equations'"
        )
