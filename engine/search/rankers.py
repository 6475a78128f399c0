"""The registered ways of ranking the formula side of a search: which channels, how they are fused, the rerank.

A formula query can be answered by two channels: ``structure`` (BM25 over the formula's structural terms,
`engine.model.structure`, optionally reranked by the largest shared sub-expressions) and ``embedding`` (kNN on the
model bundle's vectors). A `FormulaRanking` names a combination; the service fuses the channels it uses into the
formula side (a min-max normalised linear blend), which is then fused with the keywords as before.

A ranker may also give the keyword side a second channel, ``context`` (SSEmb, Li and Chen, ARQMath-3): kNN of the
keywords' embedding among the equations' context vectors (`engine.model.text`), blended with the keywords' BM25 the
same way. It finds the equation whose surrounding words say what the keywords say in other words; a query without
keywords does not use it.

The default is chosen with ``eqsearch evaluate formulas`` on the development topics (``benchmarks/formula_search.md``
holds every ranker's figures today); a channel that does not raise the score there stays out of the default. Why the
default is what it is, and what stays out of it: ``docs/decisions/default-ranker.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_RANKER", "RANKERS", "FormulaRanking", "get_ranker"]


@dataclass(frozen=True)
class FormulaRanking:
    """How the formula side of a search is ranked.

    Args:
        name: the registry name (``eqsearch evaluate formulas --ranker NAME``).
        description: one line for ``--list-rankers``.
        structure: weight of the structural list in the formula side's linear blend (0: not searched).
        embedding: weight of the kNN list (0: not searched).
        rerank_window: structural candidates rescored by shared sub-expressions (0: no rerank).
        rerank_weight: weight of the shared sub-expressions in that rescore.
        rerank_symmetric: the rescore weighs a shared sub-expression by the larger of the query's and the
            candidate's size, not by the query's alone (needs an index with sizes, mapping version 5; on an older
            one the query's size is used).
        context: weight of the context kNN list in the keyword side's linear blend with BM25 over the text, which
            gets ``1 - context`` (0: not searched; a query without keywords never searches it).
        first_stage_share: the structural list first matches on the query's terms found in at most this share of
            the equations, then gives the rerank window its BM25 over all of them (0: all terms from the start;
            `engine.search.structure_query`).
        maxsim_window: the formula side's top candidates reranked by MaxSim over node vectors after fusion (Amador
            and Zanibbi; `engine.search.maxsim`; 0: no MaxSim rerank).
        maxsim_weight: MaxSim's share of the reranked score (1: MaxSim alone orders the window).
        maxsim_nodes: which node vectors (`engine.model.nodes`): ``node_vectors`` (64-d projections) or
            ``node_states`` (512-d), or either through a fixed projection of the sidecar (``node_states@p64``).
        maxsim_symmetric: also score each candidate node's best query node, and average both directions.
        maxsim_in_node: MaxSim reranks only where the node scores it, from node vectors the index stores (eqsearch's
            plugin on every node; `engine.search.plan.Offer.node_vectors`); elsewhere the ranking goes
            without it, instead of computing the candidates' node vectors in the search service (~55-75 ms of CPU
            for a new query).
        maxsim_formula_only: MaxSim reranks formula-only searches; with keywords the structure, the embedding and
            the words decide (on the hybrid development sets MaxSim lowered combined queries' MRR@10:
            ``docs/decisions/maxsim-placement.md``).
        embedding_parts: the query's weight of each part of a composite encoder's vector (`engine.model.composite`),
            as ``(part name, weight)`` pairs: the kNN then ranks by those parts' cosines so weighed; a part not named
            keeps its stored weight, and an encoder that is no composite ignores them (empty: the vector as stored).
        bundle: the shipped encoder bundle the ranker's vectors come from (a directory name under
            ``engine/model``, e.g. ``bitmap-bundle``: `engine.model.shipped_bundle_path`); None: whichever bundle
            the caller loads (the default one). ``eqsearch evaluate`` ingests and searches with it.

    Raises:
        ValueError: no channel has weight, or a value is negative.
    """

    name: str
    description: str
    structure: float = 0.0
    embedding: float = 0.0
    rerank_window: int = 0
    rerank_weight: float = 0.0
    rerank_symmetric: bool = False
    context: float = 0.0
    first_stage_share: float = 0.0
    maxsim_window: int = 0
    maxsim_weight: float = 0.0
    maxsim_nodes: str = "node_vectors"
    maxsim_symmetric: bool = False
    maxsim_in_node: bool = False
    maxsim_formula_only: bool = False
    embedding_parts: tuple[tuple[str, float], ...] = ()
    bundle: str | None = None

    def __post_init__(self) -> None:
        if min(self.structure, self.embedding, self.rerank_window, self.rerank_weight, self.context) < 0:
            raise ValueError(f"ranker {self.name!r}: weights and window must be 0 or more")
        if self.context > 1:
            raise ValueError(f"ranker {self.name!r}: the context weight is a share of the keyword side, at most 1")
        if self.structure == 0 and self.embedding == 0:
            raise ValueError(f"ranker {self.name!r}: give the structure or the embedding a weight")
        if self.rerank_window and not self.structure:
            raise ValueError(f"ranker {self.name!r}: the rerank rescores the structural list, which is off")
        if (
            self.maxsim_window < 0
            or not 0 <= self.maxsim_weight <= 1
            or bool(self.maxsim_window) != bool(self.maxsim_weight)
        ):
            raise ValueError(f"ranker {self.name!r}: a MaxSim window needs a weight in (0, 1]")
        if (self.maxsim_in_node or self.maxsim_formula_only) and not self.maxsim_window:
            raise ValueError(f"ranker {self.name!r}: maxsim_in_node and maxsim_formula_only need a MaxSim window")
        if self.maxsim_nodes.partition("@")[0] not in ("node_vectors", "node_states"):
            raise ValueError(f"ranker {self.name!r}: maxsim_nodes is node_vectors or node_states (or one @projection)")
        if not 0 <= self.first_stage_share <= 1 or (self.first_stage_share and not self.rerank_window):
            raise ValueError(f"ranker {self.name!r}: a first stage needs a rerank window to restore the full BM25")
        weights = [w for _, w in self.embedding_parts]
        if self.embedding_parts and (min(weights) < 0 or not any(weights)):
            raise ValueError(f"ranker {self.name!r}: the embedding's part weights are 0 or more, not all 0")

    @property
    def channels(self) -> tuple[str, ...]:
        """The formula channels it searches, in a fixed order."""
        return tuple(name for name, weight in (("structure", self.structure), ("embedding", self.embedding)) if weight)


#: Rescored candidates and weight of the sub-expression match (chosen on the development topics), the match weighed
#: by the larger of the two formulas (a similarity, not the query's coverage: docs/decisions/structural-rerank.md), and
#: the structural first stage: the query's terms found in at most 5% of the equations, the other terms' BM25 added on
#: the rerank window (the same scores there as all terms from the start, for a third less node CPU at 1M:
#: docs/decisions/structural-first-stage.md).
_RERANK = {"rerank_window": 300, "rerank_weight": 0.5, "rerank_symmetric": True, "first_stage_share": 0.05}
#: The embedding's share of the formula side when fused with the structure (chosen on the development topics with
#: the shipped network, docs/decisions/composite-encoder.md; the bitmap CNN keeps the share it was measured with).
_EMBEDDING_SHARE = 0.15
_BITMAP_SHARE = 0.1
#: What the shipped composite's kNN ranks by (docs/decisions/composite-encoder.md): alone, its structure-bag part's
#: cosine weighed 0.7 and the network's 0.3; beside the structural channel, the network's alone (the student of the
#: structure adds nothing there: it says what the structural list says).
_ALONE_PARTS = (("graph", 0.3), ("structure", 0.7))
_FUSED_PARTS = (("graph", 1.0), ("structure", 0.0))
#: The MaxSim rerank (Amador and Zanibbi): alone over the kNN candidates as their system ranks, and as a share of the
#: default's formula side (window and weight from a grid of round values on the development topics,
#: docs/decisions/maxsim-node-vectors.md).
_MAXSIM_ALONE = {"maxsim_window": 300, "maxsim_weight": 1.0, "maxsim_nodes": "node_states"}
#: The share's window of 30 over the node states' fixed 64-d projection (fitted on the training corpus,
#: ``node-projection-p64.npy``): the window of 100 over the 512-d states ranks alike at three times the cost and eight
#: times the stored bytes (docs/decisions/maxsim-node-vectors.md).
_MAXSIM_SHARE = {"maxsim_window": 30, "maxsim_weight": 0.3, "maxsim_nodes": "node_states@p64"}
#: The shipped bundle of the ECML'19 bitmap CNN (Pfahler, Schill & Morik), encoder kind ``ecml19-cnn``.
_BITMAP_BUNDLE = "bitmap-bundle"
#: The context channel's share of the keyword side (chosen on the paraphrase study, docs/decisions/context-channel.md).
_CONTEXT_SHARE = 0.5

RANKERS: dict[str, FormulaRanking] = {
    ranker.name: ranker
    for ranker in (
        FormulaRanking(
            "embedding",
            "kNN on the model bundle's vectors alone (the shipped composite's parts weighed: structure-bag 0.7, "
            "network 0.3)",
            embedding=1.0,
            embedding_parts=_ALONE_PARTS,
        ),
        FormulaRanking(
            "structure", "BM25 over structural terms (symbols and symbol pairs with relations)", structure=1.0
        ),
        FormulaRanking(
            "structure+rerank",
            "structural BM25, top candidates rescored by shared sub-expressions",
            structure=1.0,
            **_RERANK,
        ),
        FormulaRanking(
            "structure+embedding",
            "structural BM25 and kNN, linear blend (embedding 0.15)",
            structure=1.0 - _EMBEDDING_SHARE,
            embedding=_EMBEDDING_SHARE,
            embedding_parts=_FUSED_PARTS,
        ),
        FormulaRanking(
            "structure+embedding+rerank",
            "reranked structural BM25 and kNN on the network's part, linear blend (embedding 0.15); the rerank matches "
            "sub-expressions "
            "(runs of up to 64 symbols) up to renamed variables, weighed by the larger formula; the structural list "
            "starts from the query's terms in at most 5% of the equations",
            structure=1.0 - _EMBEDDING_SHARE,
            embedding=_EMBEDDING_SHARE,
            embedding_parts=_FUSED_PARTS,
            **_RERANK,
        ),
        FormulaRanking(
            "structure+embedding+rerank/query-size",
            "the same with shared sub-expressions weighed by the query's size alone (as before the larger formula)",
            structure=1.0 - _EMBEDDING_SHARE,
            embedding=_EMBEDDING_SHARE,
            embedding_parts=_FUSED_PARTS,
            **{**_RERANK, "rerank_symmetric": False},
        ),
        FormulaRanking(
            "structure+embedding+rerank/all-terms",
            "the same with every structural term matched from the start (the first stage's reference)",
            structure=1.0 - _EMBEDDING_SHARE,
            embedding=_EMBEDDING_SHARE,
            embedding_parts=_FUSED_PARTS,
            **{**_RERANK, "first_stage_share": 0.0},
        ),
        FormulaRanking(
            "maxsim",
            "kNN on the network's part, top 300 reranked by MaxSim over its node states (Amador & Zanibbi's scoring)",
            embedding=1.0,
            embedding_parts=_FUSED_PARTS,
            **_MAXSIM_ALONE,
        ),
        FormulaRanking(
            "structure+embedding+rerank+maxsim",
            "structure+embedding+rerank, its top 30 formulas then reranked by MaxSim over 64-d projections of the node "
            "states (share 0.3), computed by the search service where the node cannot score them",
            structure=1.0 - _EMBEDDING_SHARE,
            embedding=_EMBEDDING_SHARE,
            embedding_parts=_FUSED_PARTS,
            **_RERANK,
            **_MAXSIM_SHARE,
        ),
        FormulaRanking(
            "structure+embedding+rerank+maxsim-in-node",
            "structure+embedding+rerank; a formula-only search's top 30 formulas then reranked by MaxSim over 64-d "
            "projections of the node states (share 0.3) where the index stores them and every node has eqsearch's "
            "plugin; with keywords, or elsewhere, as structure+embedding+rerank (not the default: it lowers the "
            "labelled set's figures, benchmarks/formula_search.md)",
            structure=1.0 - _EMBEDDING_SHARE,
            embedding=_EMBEDDING_SHARE,
            embedding_parts=_FUSED_PARTS,
            **_RERANK,
            **_MAXSIM_SHARE,
            maxsim_in_node=True,
            maxsim_formula_only=True,
        ),
        FormulaRanking(
            "ecml19-cnn",
            "kNN on the ECML'19 bitmap CNN's vectors alone (formulas rendered by MathJax, bitmap-bundle)",
            embedding=1.0,
            bundle=_BITMAP_BUNDLE,
        ),
        FormulaRanking(
            "structure+ecml19-cnn+rerank",
            "the default with the bitmap CNN's kNN in place of the graph network's (embedding 0.1, bitmap-bundle)",
            structure=1.0 - _BITMAP_SHARE,
            embedding=_BITMAP_SHARE,
            bundle=_BITMAP_BUNDLE,
            **_RERANK,
        ),
        FormulaRanking(
            "structure+embedding+rerank+context",
            "the default, and the keywords also by kNN on the equations' context embeddings (context 0.5)",
            structure=1.0 - _EMBEDDING_SHARE,
            embedding=_EMBEDDING_SHARE,
            embedding_parts=_FUSED_PARTS,
            context=_CONTEXT_SHARE,
            **_RERANK,
        ),
    )
}

DEFAULT_RANKER = "structure+embedding+rerank"


def get_ranker(name: str) -> FormulaRanking:
    """The registered ranker called ``name``.

    Raises:
        ValueError: no ranker has that name (the message lists them).
    """
    try:
        return RANKERS[name]
    except KeyError:
        raise ValueError(f"unknown ranker {name!r}; one of: {', '.join(RANKERS)}") from None
