"""The document shape: the ids, and the equation and paper documents every writer of the indices puts there.

The ingest job writes these documents, the cited-by recount updates them by id, a re-encoding migration replaces
their vectors and the search benchmark replicates them: all through this module, so that a field or an id is
decided in one place (the mappings that accept them are in `mappings`). Ids are deterministic (``<paper key>:<n>``,
``<paper key>:i<n>`` for an inline formula), so a job run again overwrites instead of duplicating; inline formulas
of fewer than `MIN_INLINE_SYMBOLS` symbols are not indexed; papers are read through protocols (`PaperRecord`, ...)
because the engine never imports ingest. The reasons and figures: ``docs/decisions/document-shape.md``.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from eqsearch.engine.index.forward_index import analysed_terms, forward_index_value
from eqsearch.engine.index.mappings import (
    CONTEXT_VECTOR_FIELD,
    FORWARD_INDEX_FIELD,
    NODE_VECTORS_FIELD,
    PAPER_ONLY_FIELDS,
    SIZE_FIELD,
    SPANS_FIELD,
    STRUCTURE_FIELD,
    VECTOR_FIELD,
    span_term,
)
from eqsearch.engine.model.layout import layout_size, parse_layout_latex
from eqsearch.engine.model.structure import formula_structure

if TYPE_CHECKING:
    from eqsearch.engine.model.nodes import NodeEncoder
    from eqsearch.engine.model.text import TextEncoder


class EquationRecord(Protocol):
    """What an equation document is made of (ingest's ``Equation`` has it)."""

    @property
    def number(self) -> int: ...
    @property
    def latex(self) -> str: ...
    @property
    def mathml(self) -> str | None: ...
    @property
    def environment(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def section(self) -> int: ...
    @property
    def context_before(self) -> str: ...
    @property
    def context_after(self) -> str: ...


class InlineRecord(Protocol):
    """What an inline formula's document is made of (ingest's ``InlineFormula`` has it)."""

    @property
    def number(self) -> int: ...
    @property
    def latex(self) -> str: ...
    @property
    def mathml(self) -> str | None: ...
    @property
    def delimiter(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def context_before(self) -> str: ...
    @property
    def context_after(self) -> str: ...


class SectionRecord(Protocol):
    """A section of a paper as its document outlines it (ingest's ``Section`` has it)."""

    @property
    def index(self) -> int: ...
    @property
    def level(self) -> int: ...
    @property
    def title(self) -> str: ...
    @property
    def equations(self) -> Sequence[EquationRecord]: ...
    @property
    def inline(self) -> Sequence[InlineRecord]: ...


class PaperRecord(Protocol):
    """What a paper document, and the paper fields of its equation documents, are made of (ingest's ``Paper``)."""

    @property
    def id(self) -> str: ...
    @property
    def version(self) -> int | None: ...
    @property
    def source(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def title(self) -> str | None: ...
    @property
    def abstract(self) -> str | None: ...
    @property
    def authors(self) -> Sequence[str]: ...
    @property
    def metadata(self) -> Mapping[str, Any] | None: ...
    @property
    def citations(self) -> Sequence[str]: ...
    @property
    def sections(self) -> Sequence[SectionRecord]: ...


def paper_key(paper_id: str, version: int | None) -> str:
    """The key that makes equation ids unique: the paper id, plus ``v<version>`` when the source version is known."""
    return paper_id if version is None else f"{paper_id}v{version}"


def equation_id(key: str, number: int) -> str:
    """The id of equation ``number`` of the paper with key ``key`` (`paper_key`): ``<paper key>:<number>``."""
    return f"{key}:{number}"


def inline_id(key: str, number: int) -> str:
    """The id of inline formula ``number`` of the paper with key ``key`` (`paper_key`): ``<paper key>:i<number>``."""
    return f"{key}:i{number}"


#: The fewest symbols (`FormulaStructure.size`) an inline formula needs to be indexed (see the module docstring).
MIN_INLINE_SYMBOLS = 3


@functools.lru_cache(maxsize=1 << 16)
def inline_indexable(latex: str) -> bool:
    """Whether an inline formula is indexed: at least `MIN_INLINE_SYMBOLS` symbols in its LaTeX's layout tree (the
    size `formula_structure` gives it, without making its terms: a paper has thousands of inline formulas).

    Decided on the LaTeX, before conversion, so that the formulas left out cost no conversion; the same answer at
    every ingest of the same source (ids and counts stay deterministic). Cached: extraction, conversion and the
    documents each ask, and a paper repeats its notation.
    """
    return layout_size(parse_layout_latex(latex)) >= MIN_INLINE_SYMBOLS


def stored_equation_ids(paper_id: str, paper_document: Mapping[str, Any]) -> list[str]:
    """The ids of the equation documents a stored paper document counts: its ``equation_count`` displays and its
    ``inline_numbers`` inline formulas (under its ``paper_key``)."""
    key = paper_document.get("paper_key") or paper_id
    displays = [equation_id(key, number) for number in range(int(paper_document.get("equation_count") or 0))]
    return displays + [inline_id(key, int(number)) for number in paper_document.get("inline_numbers") or ()]


def paper_year(paper: PaperRecord) -> int | None:
    """Publication year: arXiv metadata's first version date, else its ``year``, else a new-style arXiv id."""
    meta = paper.metadata or {}
    for key in ("published", "update_date"):
        value = meta.get(key)
        if isinstance(value, str):
            found = re.search(r"\b(19|20)\d\d\b", value)
            if found:
                return int(found.group(0))
    if isinstance(meta.get("year"), int | str) and str(meta["year"]).isdigit():
        return int(meta["year"])
    found = re.fullmatch(r"(\d\d)(\d\d)\.\d{4,5}", paper.id)
    if found and 1 <= int(found.group(2)) <= 12:
        return 2000 + int(found.group(1))
    return None


def paper_fields(paper: PaperRecord, job_id: str) -> dict[str, Any]:
    """The paper's fields: all of them on the paper document, those not in `PAPER_ONLY_FIELDS` on each equation.

    Args:
        paper: the extracted paper.
        job_id: the ingest job writing it (another job's later write of the paper tells a pruner to keep away).
    """
    meta = paper.metadata or {}
    categories = meta.get("categories") or []
    if isinstance(categories, str):
        categories = categories.split()
    return {
        "paper_id": paper.id,
        "paper_key": paper_key(paper.id, paper.version),
        "title": paper.title or meta.get("title") or "",
        "abstract": paper.abstract or meta.get("abstract") or "",
        "authors": list(paper.authors),
        "categories": list(categories),
        "year": paper_year(paper),
        "citations_out": list(dict.fromkeys(paper.citations)),
        "source_version": paper.version,
        "source": paper.source,
        "job_id": job_id,
    }


def indexed_inline(paper: PaperRecord) -> list[tuple[int, InlineRecord]]:
    """``(section index, formula)`` for each of the paper's inline formulas that is indexed (`inline_indexable`), in
    document order."""
    return [(s.index, f) for s in paper.sections for f in s.inline if inline_indexable(f.latex)]


def paper_documents(
    paper: PaperRecord,
    *,
    job_id: str,
    indexed_at: str,
    vectors: Mapping[int, list[float]],
    inline_vectors: Mapping[int, list[float]] | None = None,
    inline: bool = True,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The paper document (id: the paper id) and one document per equation (id: its ``eq_id``), in order: the
    displays, then the indexed inline formulas.

    Args:
        paper: the extracted paper.
        job_id: the ingest job writing it.
        indexed_at: ISO 8601 time of the write, the same on all of the paper's documents.
        vectors: equation number -> its vector; an equation without one (not converted, or refused by the encoder)
            gets no vector field and is found by text only.
        inline_vectors: inline formula number -> its vector (None: none has one).
        inline: whether the inline formulas get documents (off: the paper counts none).

    Returns:
        The paper document and the equation documents.
    """
    shared = paper_fields(paper, job_id)
    own = {k: v for k, v in shared.items() if k not in PAPER_ONLY_FIELDS}  # what each equation carries of its paper
    equations = [eq for section in paper.sections for eq in section.equations]
    titles = {section.index: section.title for section in paper.sections}
    formulas = indexed_inline(paper) if inline else []
    per_section = Counter(section for section, _ in formulas)
    paper_document = {
        **shared,
        "kind": paper.kind,
        "status": paper.status,
        "equation_count": len(equations),
        "inline_count": len(formulas),
        "inline_numbers": [formula.number for _, formula in formulas],
        "indexed_at": indexed_at,
        "sections": [
            {
                "index": s.index,
                "level": s.level,
                "title": s.title,
                "equations": len(s.equations),
                "inline": per_section.get(s.index, 0),
            }
            for s in paper.sections
        ],
    }
    equation_documents = []
    for eq in equations:
        document = {
            **own,
            "eq_id": equation_id(shared["paper_key"], eq.number),
            "number": eq.number,
            "inline": False,
            "latex": eq.latex,
            "mathml": eq.mathml,
            "environment": eq.environment,
            "status": eq.status,
            "reason": eq.reason,
            "section": eq.section,
            "section_title": titles.get(eq.section, ""),
            "context": " ".join(part for part in (eq.context_before, eq.context_after) if part),
            **structure_fields(eq.mathml, eq.latex),
            "indexed_at": indexed_at,
        }
        equation_documents.append(with_vector(document, vectors.get(eq.number)))
    for section, formula in formulas:
        document = {
            **own,
            "eq_id": inline_id(shared["paper_key"], formula.number),
            "number": formula.number,
            "inline": True,
            "latex": formula.latex,
            "mathml": formula.mathml,
            "environment": formula.delimiter,
            "status": formula.status,
            "reason": formula.reason,
            "section": section,
            "section_title": titles.get(section, ""),
            "context": " ".join(part for part in (formula.context_before, formula.context_after) if part),
            **structure_fields(formula.mathml, formula.latex),
            "indexed_at": indexed_at,
        }
        equation_documents.append(with_vector(document, (inline_vectors or {}).get(formula.number)))
    return paper_document, equation_documents


def structure_fields(mathml: str | None, latex: str) -> dict[str, Any]:
    """The structural fields of an equation document: its terms (from the MathML, or the LaTeX when it did not
    convert), its sub-expression hashes, its size in symbols (`engine.model.structure`) and the forward index of its
    terms as the field's analyzer makes them (`engine.index.forward_index`; written for every equation, an empty one
    too, so that a value missing in an index that maps it means a document written before)."""
    structure = formula_structure(mathml, latex)
    text = structure.text
    return {
        STRUCTURE_FIELD: text,
        SPANS_FIELD: sorted({span_term(span) for span in structure.spans}),
        SIZE_FIELD: structure.size,
        FORWARD_INDEX_FIELD: forward_index_value(analysed_terms(text)),
    }


def with_structure(document: Mapping[str, Any]) -> dict[str, Any]:
    """The equation document with its structural fields made anew from its stored MathML and LaTeX (a migration
    does this, so that documents written before the fields existed, or by another tokenizer, get them), and marked
    a display unless it says otherwise (documents written before inline formulas were indexed were all displays)."""
    fields = structure_fields(document.get("mathml"), str(document.get("latex") or ""))
    return {**document, **fields, "inline": bool(document.get("inline", False))}


def with_vector(document: Mapping[str, Any], vector: list[float] | None) -> dict[str, Any]:
    """The equation document with ``vector`` as its vector, or with none (never another model's old one)."""
    out = {key: value for key, value in document.items() if key != VECTOR_FIELD}
    if vector is not None:
        out[VECTOR_FIELD] = vector
    return out


#: Which fields of an equation document its context vector embeds, in this order (see `context_text`).
CONTEXT_TEXT_FIELDS = ("section_title", "context")


def context_text(document: Mapping[str, Any]) -> str:
    """The words the context vector of an equation document embeds: its section's title and its context (the words
    before and after it). The paper's title is left out: it is the same for every formula of a paper and is
    searched by BM25 already (measured: ``docs/decisions/context-channel.md``)."""
    return " ".join(str(document.get(name) or "").strip() for name in CONTEXT_TEXT_FIELDS).strip()


def with_context_vectors(documents: Sequence[Mapping[str, Any]], encoder: TextEncoder) -> list[dict[str, Any]]:
    """The equation documents with their context vectors made anew by ``encoder`` (one batch), each without one
    when it has no words around it (never another model's old one).

    Args:
        documents: equation documents (as built by `paper_documents`, or stored ones).
        encoder: the text encoder (`engine.model.text.load_text_encoder`).

    Returns:
        New documents, in the same order.
    """
    texts = [context_text(document) for document in documents]
    rows = [i for i, text in enumerate(texts) if text]
    matrix = encoder.encode([texts[i] for i in rows]) if rows else None
    vectors: dict[int, list[float]] = {}
    for position, i in enumerate(rows):
        row = matrix[position]  # type: ignore[index]
        if row.any():  # no known token: no direction
            vectors[i] = [float(x) for x in row]
    out = []
    for i, document in enumerate(documents):
        fresh = {key: value for key, value in document.items() if key != CONTEXT_VECTOR_FIELD}
        if i in vectors:
            fresh[CONTEXT_VECTOR_FIELD] = vectors[i]
        out.append(fresh)
    return out


#: The stored node vectors' layout (`node_vectors_value`), read by the plugin's ``eqsearch_maxsim`` rescorer.
NODE_VECTORS_FORMAT = 1


def node_vectors_value(vectors: Any) -> str:
    """A formula's node vectors as the `NODE_VECTORS_FIELD` value: base64 of a format byte, the node count and the
    width as 16-bit little-endian, then each node's vector scaled to unit length and rounded to int8 (x 127), row
    by row: ``5 + nodes x width`` bytes, a quarter of float32, for cosines within about 0.01 of the float ones.

    Raises:
        ValueError: not a ``[nodes, width]`` array, or more than 65,535 nodes or dimensions.
    """
    import base64

    import numpy as np

    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2 or not 0 < array.shape[0] < 65536 or not 0 < array.shape[1] < 65536:
        raise ValueError(f"node vectors must be a [nodes, width] array of at most 65,535 each, got {array.shape}")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    unit = array / np.where(norms > 0, norms, 1.0)
    quantised = np.clip(np.rint(unit * 127.0), -127, 127).astype(np.int8)
    header = bytes([NODE_VECTORS_FORMAT]) + int(array.shape[0]).to_bytes(2, "little")
    header += int(array.shape[1]).to_bytes(2, "little")
    return base64.b64encode(header + quantised.tobytes()).decode("ascii")


def with_node_vectors_field(document: dict[str, Any], vectors: Any) -> dict[str, Any]:
    """``document`` with its formula's node vectors (`node_vectors_value`; none for a formula without nodes)."""
    if vectors is None or not len(vectors):
        return document
    return {**document, NODE_VECTORS_FIELD: node_vectors_value(vectors)}


def with_node_vectors(documents: Sequence[Mapping[str, Any]], node_encoder: NodeEncoder) -> list[dict[str, Any]]:
    """The equation documents with their formula's node vectors made anew by ``node_encoder`` from their MathML (one
    batch; one by one when the encoder refuses a MathML of the batch), as `NODE_VECTORS_FIELD` values
    (`node_vectors_value`). A document without MathML, or whose MathML the encoder refuses, gets none (never another
    encoder's old ones): the MaxSim rerank then keeps its fused score, as it does for a formula KaTeX refused.

    Args:
        documents: equation documents (as built by `paper_documents`, or stored ones).
        node_encoder: the bundle's node encoder (`engine.model.nodes.load_node_encoder`).

    Returns:
        New documents, in the same order.
    """
    from eqsearch.engine.model.featurize import MathMLError

    rows = [i for i, document in enumerate(documents) if document.get("mathml")]
    mathml = [str(documents[i]["mathml"]) for i in rows]
    try:
        encoded = node_encoder.encode(mathml) if rows else []
    except MathMLError:  # one malformed formula of the batch: the others one by one
        encoded = []
        for one in mathml:
            try:
                encoded.extend(node_encoder.encode([one]))
            except MathMLError:
                encoded.append(None)
    vectors = dict(zip(rows, encoded, strict=True))
    out = []
    for i, document in enumerate(documents):
        fresh = {key: value for key, value in document.items() if key != NODE_VECTORS_FIELD}
        out.append(with_node_vectors_field(fresh, vectors.get(i)))
    return out
