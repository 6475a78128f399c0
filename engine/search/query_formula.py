"""A query's formula made ready for the ranked lists once, and kept: conversion, vector, structure, layout tree.

Converting a formula with KaTeX and encoding it costs milliseconds; the next page of a search, or a formula many
people look up, should cost neither. `QueryFormulas` prepares a `QueryFormula` from the query's LaTeX (with its
query variables read, `engine.model.patterns`) and keeps the most recent ones that converted.

A formula with variables converts with placeholders (`QueryPattern.katex_latex`); its structure leaves the
variables out, and its vector is that of the formula with each variable read as a letter.

`formula_highlight` says which elements of a hit's MathML matched the prepared formula, for the page to mark: with
variables, the pattern's match and each variable's binding; without, the largest sub-expression the hit shares with
the query (`engine.model.highlights.SharedSubexpressions`); none for a hit without MathML.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from eqsearch.engine.index.vectors import query_vector
from eqsearch.engine.model.highlights import FormulaHighlight, SharedSubexpressions, pattern_highlight
from eqsearch.engine.model.layout import LayoutNode, parse_layout, parse_layout_latex
from eqsearch.engine.model.patterns import (
    QueryPattern,
    mark_variables,
    match_pattern,
    pattern_structure,
    variables_as_letters,
)
from eqsearch.engine.model.structure import QUERY_SPAN_KINDS, FormulaStructure, structure_of_layout
from eqsearch.engine.search.rankers import FormulaRanking

if TYPE_CHECKING:
    from eqsearch.engine.latex.converter import ConversionResult
    from eqsearch.engine.model.encoder import Encoder
    from eqsearch.engine.model.nodes import NodeEncoder

__all__ = ["QueryFormula", "QueryFormulas", "formula_highlight", "layout_of"]


@dataclass(frozen=True)
class QueryFormula:
    """A query formula made ready: its conversion, vector, structural terms, layout tree (variables marked; what
    hits are matched against) and variables.

    Args:
        result: KaTeX's conversion (``mathml`` None when the LaTeX did not parse).
        vector: the embedding (None without MathML or when the ranking has no embedding).
        structure: the structural terms and sub-expressions (None when the ranking has no structure).
        layout: the layout tree, from the MathML, else from the LaTeX.
        pattern: the query's variables.
        shared: the query's sub-expressions, for hits' highlights (queries without variables only).
        nodes: the node vectors of the MaxSim rerank (`engine.search.maxsim`), when the ranking has one.
    """

    result: ConversionResult
    vector: np.ndarray | None
    structure: FormulaStructure | None
    layout: list[LayoutNode]
    pattern: QueryPattern
    shared: SharedSubexpressions | None
    nodes: np.ndarray | None = None

    @property
    def latex_error(self) -> str | None:
        """The converter's message when the LaTeX did not convert."""
        if self.result.mathml is not None:
            return None
        return self.result.message or f"the LaTeX could not be converted ({self.result.reason})"

    @property
    def approximation(self) -> str | None:
        """The converter's note when the formula converted only approximately."""
        if self.result.mathml is not None and self.result.status == "approximate" and self.result.message:
            return f"the formula was converted approximately: {self.result.message}"
        return None


class QueryFormulas:
    """Prepares query formulas and keeps the last ``size`` (least recently used dropped first; 0 keeps none).

    Args:
        converter: LaTeX -> MathML (``convert(latex, environment, macros) -> ConversionResult``).
        encoder: MathML -> vectors.
        ranking: which channels the formula feeds (no vector without an embedding weight, no structure without a
            structure weight, no node vectors without a MaxSim window).
        node_encoder: the node vectors of the MaxSim rerank (None: none).
        similarity: the index's vector similarity (`IndexMeta.similarity`): query vectors are normalised for cosine
            and dot product, and rounded as the stored ones are for cosine; asked at each preparation, since a
            migration may change it.
        size: how many prepared formulas to keep.
    """

    def __init__(
        self,
        converter: Any,
        encoder: Encoder,
        ranking: FormulaRanking,
        *,
        node_encoder: NodeEncoder | None,
        similarity: Callable[[], str],
        size: int,
    ) -> None:
        self.converter = converter
        self.encoder = encoder
        self.ranking = ranking
        self.node_encoder = node_encoder
        self.similarity = similarity
        self.size = size
        self._kept: OrderedDict[str, QueryFormula] = OrderedDict()
        self._lock = threading.Lock()  # web servers search from several threads

    def clear(self) -> None:
        """Forget every prepared formula (their vectors were normalised for another index)."""
        with self._lock:
            self._kept.clear()

    def get(self, pattern: QueryPattern) -> QueryFormula:
        """The prepared formula of a query's LaTeX (its variables read), from the cache if there."""
        latex = pattern.latex
        with self._lock:
            kept = self._kept.get(latex)
            if kept is not None:
                self._kept.move_to_end(latex)
                return kept
        formula = self.prepare(pattern)
        if self.size > 0 and formula.result.mathml is not None:
            with self._lock:
                self._kept[latex] = formula
                while len(self._kept) > self.size:
                    self._kept.popitem(last=False)
        return formula

    def prepare(self, pattern: QueryPattern) -> QueryFormula:
        """Convert, read the structure of the same layout tree that `formula_structure` reads (MathML, else the
        LaTeX), encode."""
        result = self.converter.convert(pattern.katex_latex, "equation", ())
        layout = mark_variables(layout_of(result.mathml, pattern.fallback_latex), pattern)
        structure = None
        if self.ranking.structure:
            structure = (
                pattern_structure(layout)
                if pattern.has_variables
                else structure_of_layout(layout, span_kinds=QUERY_SPAN_KINDS)
            )
        shared = None if pattern.has_variables else SharedSubexpressions(layout)
        if result.mathml is None:
            return QueryFormula(result, None, structure, layout, pattern, shared)
        as_letters = variables_as_letters(result.mathml, pattern)
        vector = self.encode(as_letters) if self.ranking.embedding else None
        if vector is not None:
            vector.flags.writeable = False  # shared by every search of this formula
        nodes = None
        if self.node_encoder is not None and self.ranking.maxsim_window > 0:
            nodes = self.node_encoder.encode([as_letters])[0]
            nodes.flags.writeable = False
        return QueryFormula(result, vector, structure, layout, pattern, shared, nodes)

    def encode(self, mathml: str) -> np.ndarray:
        """One formula's vector, its parts weighed as the ranking asks where the encoder is a composite
        (`engine.model.composite`; parts it does not have are left out), normalised when the index compares by cosine
        or dot product, and rounded as the stored vectors are for cosine (`engine.index.vectors.query_vector`)."""
        vector = weigh_parts(self.encoder, self.encoder.encode([mathml])[0], self.ranking.embedding_parts)
        similarity = self.similarity()
        if similarity in ("cosine", "dot_product"):
            norm = float(np.linalg.norm(vector))
            vector = vector / norm if norm > 0 else vector
        return query_vector(vector, similarity)


def weigh_parts(encoder: Encoder, vector: np.ndarray, parts: Sequence[tuple[str, float]]) -> np.ndarray:
    """A vector in the encoder's stored form with a composite's parts weighed as ``parts`` asks
    (`engine.model.composite`; parts the encoder does not have are left out); the vector as it is for an encoder that
    is no composite, or where no part is named."""
    vector = np.asarray(vector, dtype=np.float32)
    names = getattr(encoder, "part_names", ())
    weights = {name: weight for name, weight in parts if name in names}
    if not weights or len(vector) != encoder.dim:
        return vector
    return encoder.weigh_query(vector, weights)  # type: ignore[attr-defined]


def layout_of(mathml: str | None, latex: str | None, *, positions: bool = False) -> list[LayoutNode]:
    """A formula's layout tree as `formula_structure` reads it: from the MathML, else from the LaTeX."""
    if mathml:
        try:
            return parse_layout(mathml, positions=positions)
        except ValueError:
            pass
    return parse_layout_latex(latex or "")


def formula_highlight(formula: QueryFormula, mathml: str | None) -> FormulaHighlight | None:
    """What of ``mathml`` matches the query formula; None without MathML or a match."""
    if not mathml or not formula.layout:
        return None
    try:
        layout = parse_layout(mathml, positions=True)
    except ValueError:
        return None
    if formula.pattern.has_variables:
        match = match_pattern(formula.layout, layout)
        return pattern_highlight(match) if match is not None else None
    return formula.shared.highlight(layout) if formula.shared is not None else None
