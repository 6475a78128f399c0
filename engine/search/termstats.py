"""How common each structural term is in the equations index, so that the structural list can start from its rare
terms.

BM25 over every structural term of a query (some eighty, many of them in a large share of all equations: ``=``,
``V:x``, ``V:*|N:*|sup``) walks long posting lists, and that walk is most of a formula query's cost at a million
equations (``docs/decisions/structural-first-stage.md``). The rare terms carry most of the score, so a ranker with a
``first_stage_share`` matches on the query's terms found in at most that share of the documents first, and lets the
rescore window bring back the full BM25 (`rarest_terms`, `engine.search.structure_query.structure_body`). Which terms
are rare is read from the index: one ``_termvectors`` request on an artificial document of the query's terms returns
each term's document frequency (of the shard that answers: shards are random partitions, so the order is the same),
and a bounded cache keeps them for a while, so that the common terms, which recur in almost every query, are asked for
once.

Reading the frequencies never fails a search: when the request fails, the query uses all of its terms.

Where every node has the plugin and the index stores the forward index, none of this is asked (the query plan's
``shard`` first stage, `engine.search.plan`): the structural list sends the rule itself (`RareRule`), and the shard
applies it to its own frequencies (the plugin's ``eqsearch_terms`` query and ``eqsearch_bm25`` rescorer,
``es-plugin/``), with the same arithmetic.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["RARE_AT_LEAST", "RareRule", "TermFrequencies", "TermStatistics", "rarest_terms"]

#: The fewest terms the first stage keeps (when the query has them), whatever their share.
RARE_AT_LEAST = 8


@dataclass(frozen=True)
class TermFrequencies:
    """What the index says of some terms.

    Attributes:
        shares: term -> the share of the documents that hold it (0 for a term no document holds).
        documents: the documents with the field (of the shard that answered).
    """

    shares: dict[str, float]
    documents: int


class TermStatistics:
    """Document frequencies of structural terms in one index, cached.

    Args:
        termvectors: the client's ``termvectors`` method (``Elasticsearch.termvectors``).
        field: the structural terms' field.
        max_terms: terms kept in the cache (least recently used go first).
        ttl_s: how long a frequency is trusted (the index grows and shrinks under ingest jobs).
        clock: seconds, for tests.
    """

    def __init__(
        self,
        termvectors: Callable[..., Any],
        field: str,
        *,
        max_terms: int = 200_000,
        ttl_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._termvectors = termvectors
        self.field = field
        self.max_terms = max_terms
        self.ttl_s = ttl_s
        self._clock = clock
        self._cache: OrderedDict[tuple[str, str], tuple[float, float]] = OrderedDict()
        self._documents: dict[str, int] = {}
        self._lock = threading.Lock()  # web servers search from several threads
        self.requests = 0

    def frequencies(self, index: str, terms: Iterable[str]) -> TermFrequencies | None:
        """The share of the documents holding each term, or None when the index could not say (then the caller uses
        all terms).

        Args:
            index: the index or alias (one index behind it).
            terms: the terms.
        """
        now = self._clock()
        wanted = list(dict.fromkeys(terms))
        found: dict[str, float] = {}
        missing: list[str] = []
        with self._lock:
            for term in wanted:
                cached = self._cache.get((index, term))
                if cached is not None and now - cached[1] < self.ttl_s:
                    self._cache.move_to_end((index, term))
                    found[term] = cached[0]
                else:
                    missing.append(term)
        if missing:
            answer = self._read(index, missing)
            if answer is None:
                return None
            read, documents = answer
            with self._lock:
                self._documents[index] = documents
                for term, share in read.items():
                    self._cache[(index, term)] = (share, now)
                    self._cache.move_to_end((index, term))
                while len(self._cache) > self.max_terms:
                    self._cache.popitem(last=False)
            found.update(read)
        return TermFrequencies(found, self._documents.get(index, 0))

    def _read(self, index: str, terms: Sequence[str]) -> tuple[dict[str, float], int] | None:
        self.requests += 1
        try:
            response = self._termvectors(
                index=index,
                doc={self.field: " ".join(terms)},
                fields=[self.field],
                term_statistics=True,
                field_statistics=True,
                positions=False,
                offsets=False,
                payloads=False,
            )
        except Exception:  # any failure (a missing index, a dead node) only costs the first stage
            return None
        vectors = response.get("term_vectors", {}).get(self.field)
        if not vectors:
            return dict.fromkeys(terms, 0.0), 0
        documents = int(vectors.get("field_statistics", {}).get("doc_count", 0))
        stats = vectors.get("terms", {})
        return {term: int(stats.get(term, {}).get("doc_freq", 0)) / max(documents, 1) for term in terms}, documents


@dataclass(frozen=True)
class RareRule:
    """`rarest_terms`'s rule as a request carries it to the plugin, which applies it in the shard (``rare`` of the
    ``eqsearch_terms`` query, ``except_rare`` of the ``eqsearch_bm25`` rescorer).

    Attributes:
        max_share: the largest share of the documents a rare term is in.
        min_matches: how many documents the least rare term kept must be in (the rerank window).
        at_least: the fewest terms kept.
    """

    max_share: float
    min_matches: int
    at_least: int = RARE_AT_LEAST

    def request(self) -> dict[str, float | int]:
        """The rule's object in a request body."""
        return {"max_share": self.max_share, "min_matches": self.min_matches, "at_least": self.at_least}


def rarest_terms(
    terms: Sequence[str],
    frequencies: TermFrequencies,
    *,
    max_share: float,
    min_matches: int,
    at_least: int = RARE_AT_LEAST,
) -> list[str] | None:
    """The terms the structural list matches first: the distinct terms found in at most ``max_share`` of the
    documents, then more of the rarest until there are ``at_least`` and one of them alone is in ``min_matches``
    documents, so that the first stage matches at least that many (a small index, or a query of common terms,
    still fills the rescore window); None when that leaves no term out (then the query uses them all). Terms no
    document holds are left out: they cost nothing and score nothing. Ties keep the query's order."""
    shares = frequencies.shares
    distinct = [term for term in dict.fromkeys(terms) if shares.get(term, 0.0) > 0]
    order = sorted(distinct, key=lambda term: shares[term])  # stable: ties in query order
    kept = 0
    for term in order:
        enough = kept >= at_least and shares[order[kept - 1]] * frequencies.documents >= min_matches
        if shares[term] > max_share and enough:
            break
        kept += 1
    return order[:kept] if kept < len(distinct) else None
