"""The search-engine study of KDD'20 §6.3: formula queries over a corpus, judged by keywords; numpy, KaTeX and
onnxruntime, no torch.

Each query is an equation and the keywords or key phrases a researcher expects around a relevant result. Every
display equation of a papers JSONL (``ingest/FORMAT.md``) is a candidate; a result counts as relevant when one of
the query's keywords occurs in the text around it (`eqsearch.evaluation.metrics.keyword_relevant`, the paper's
heuristic: case-insensitive, and a keyword longer than 10 characters also matches a substring at Levenshtein
distance below 2). "Around" is what the papers JSONL keeps of a section: the paper's title, the section's title and
the words before and after the equation (``context_before``, ``context_after``). The figures are those of the
paper's Table 3: P@10, P@100, P@1000 and uMAP (``∑_{k ≤ 1000} P(k) Δ_k``, not divided by the number of relevant
results, which nobody knows), averaged over the queries, for the model and for the bag-of-words baseline.

File format, version 1 (the shipped set is ``evaluation/data/keyword-queries.tsv``, `DEFAULT_QUERY_SET`):

- UTF-8 text; the first line is ``# eqsearch keyword query set, format version 1``;
- lines starting with ``#`` and blank lines are comments; the first other line is the header
  ``id<TAB>latex<TAB>keywords<TAB>note``;
- then one query per line: ``id<TAB>latex<TAB>keywords[<TAB>note]``; ``id`` is a slug (lower-case letters, digits,
  ``-``), unique; ``latex`` is a display-math body without delimiters; ``keywords`` are separated by ``|`` (any one
  of them makes a result relevant); ``note`` (optional) says what the query is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from eqsearch.engine.errors import EqsearchError
from eqsearch.engine.model.graph import GraphArrays
from eqsearch.evaluation.baseline import bag_of_words
from eqsearch.evaluation.labelled import ConversionFailure, convert_and_featurize
from eqsearch.evaluation.metrics import keyword_relevant, precision_at, unnormalized_average_precision
from eqsearch.evaluation.tsv import read_versioned_tsv

if TYPE_CHECKING:
    from eqsearch.engine.latex.converter import KatexConverter
    from eqsearch.engine.model.encoder import GraphEncoder

FORMAT_LINE = "# eqsearch keyword query set, format version 1"
HEADER = ("id", "latex", "keywords", "note")
DEFAULT_QUERY_SET = Path(__file__).resolve().parent / "data" / "keyword-queries.tsv"
#: Results scored per query (the paper's cut-off).
DEPTH = 1000
CUTOFFS = (10, 100, 1000)
REPRESENTATIONS = ("model", "model_cosine", "bag_of_words")
LABELS = {"model": "model, as served", "model_cosine": "model, cosine", "bag_of_words": "bag of words (§6.3), cosine"}

_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class KeywordQueryError(EqsearchError):
    """A keyword query file that cannot be read or does not follow the format, or a corpus with nothing to search."""


@dataclass(frozen=True)
class KeywordQuery:
    """One query of the set.

    Attributes:
        id: the query's slug.
        latex: the display-math body.
        keywords: any of them around a result makes it relevant.
        note: what the query is (may be empty).
        line: its line in the file.
    """

    id: str
    latex: str
    keywords: tuple[str, ...]
    note: str
    line: int


def read_keyword_queries(path: str | Path = DEFAULT_QUERY_SET) -> list[KeywordQuery]:
    """Read a keyword query file (format in the module docstring).

    Raises:
        KeywordQueryError: unreadable file, another format or version, a bad header, a line without 3-4 fields, an
            id that is not a slug or repeats, an empty LaTeX field, or no keyword (path and line in the message).
    """
    path = Path(path)
    rows = read_versioned_tsv(
        path, format_line=FORMAT_LINE, header=HEADER, what="the keyword query set", error=KeywordQueryError
    )
    queries: list[KeywordQuery] = []
    seen: dict[str, int] = {}
    for number, fields in rows:
        query_id, latex, keywords = fields[0], fields[1], tuple(k.strip() for k in fields[2].split("|") if k.strip())
        if not _SLUG.fullmatch(query_id):
            raise KeywordQueryError(f"{path}:{number}: the id {query_id!r} is not a slug (lower-case, digits, '-')")
        if query_id in seen:
            raise KeywordQueryError(f"{path}:{number}: the id {query_id!r} is already used on line {seen[query_id]}")
        if not latex:
            raise KeywordQueryError(f"{path}:{number}: the LaTeX field is empty")
        if not keywords:
            raise KeywordQueryError(f"{path}:{number}: no keyword (separate several with '|')")
        seen[query_id] = number
        queries.append(KeywordQuery(query_id, latex, keywords, fields[3] if len(fields) == 4 else "", number))
    if not queries:
        raise KeywordQueryError(f"{path}: no query")
    return queries


@dataclass
class SearchCollection:
    """The equations searched: one per featurized display equation of a papers JSONL.

    Attributes:
        ids: equation ids (``<paper key>:<number>``).
        texts: the text around each equation that the relevance heuristic reads.
        graphs: the featurized equations.
        skipped: equations left out, by reason (``inline``, ``no_mathml``, ``featurize``).
    """

    ids: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    graphs: list[GraphArrays] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)


def equation_surroundings(paper: dict[str, Any], section: dict[str, Any], equation: dict[str, Any]) -> str:
    """What the relevance heuristic reads around an equation: paper title, section title, context before/after."""
    parts = (
        paper.get("title"),
        section.get("title"),
        equation.get("context_before"),
        equation.get("context_after"),
    )
    return " \n ".join(str(p) for p in parts if p)


def build_collection(
    papers: Iterable[dict[str, Any]],
    featurize: Callable[[str], GraphArrays],
    progress: Callable[[int], None] | None = None,
) -> SearchCollection:
    """Every display equation with MathML of the paper records, featurized, with the text around it.

    Args:
        papers: paper records (``eqsearch.ingest.records.read_papers``).
        featurize: MathML -> GraphArrays with the bundle's vocabulary.
        progress: called with the number of equations read so far, after each paper.
    """
    from eqsearch.engine.model.featurize import MathMLError

    collection = SearchCollection()
    seen = 0

    def skip(reason: str) -> None:
        collection.skipped[reason] = collection.skipped.get(reason, 0) + 1

    for paper in papers:
        for section in paper.get("sections") or []:
            for equation in section.get("equations") or []:
                seen += 1
                if equation.get("display") is False:
                    skip("inline")
                    continue
                if not equation.get("mathml"):
                    skip("no_mathml")
                    continue
                try:
                    graph = featurize(equation["mathml"])
                except MathMLError:
                    skip("featurize")
                    continue
                collection.ids.append(str(equation.get("id") or f"{paper.get('id')}:{equation.get('number')}"))
                collection.texts.append(equation_surroundings(paper, section, equation))
                collection.graphs.append(graph)
        if progress is not None:
            progress(seen)
    return collection


@dataclass(frozen=True)
class StudyFigures:
    """Table 3 of KDD'20 for one representation: mean P@10, P@100, P@1000 and uMAP over the queries."""

    p_at_10: float
    p_at_100: float
    p_at_1000: float
    umap: float


@dataclass(frozen=True)
class KeywordStudyReport:
    """The search-engine study of a bundle on a corpus.

    Attributes:
        queries: queries in the file.
        evaluated: queries that converted and were searched.
        failures: the others, and why.
        collection: equations searched.
        skipped: corpus equations left out, by reason.
        similarity_of_model: the bundle's similarity, used by "model".
        figures: representation -> figures.
        per_query: query id -> representation -> P@100 (the paper's Table 4).
    """

    queries: int
    evaluated: int
    failures: tuple[ConversionFailure, ...]
    collection: int
    skipped: dict[str, int]
    similarity_of_model: str
    figures: dict[str, StudyFigures]
    per_query: dict[str, dict[str, float]]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def table(self) -> str:
        """Markdown in the shape of the paper's Table 3."""
        lines = ["| representation | P@10 | P@100 | P@1000 | uMAP |", "|---|---|---|---|---|"]
        for name in REPRESENTATIONS:
            f = self.figures[name]
            label = LABELS[name] + (f" ({self.similarity_of_model})" if name == "model" else "")
            lines.append(f"| {label} | {f.p_at_10:.4f} | {f.p_at_100:.4f} | {f.p_at_1000:.4f} | {f.umap:.2f} |")
        return "\n".join(lines)

    def query_table(self) -> str:
        """P@100 per query, best first by the model (the paper's Table 4)."""
        lines = ["| query | " + " | ".join(LABELS[n] for n in REPRESENTATIONS) + " |", "|---|---|---|---|"]
        for query_id, values in sorted(self.per_query.items(), key=lambda item: -item[1]["model"]):
            lines.append(f"| {query_id} | " + " | ".join(f"{values[n]:.2f}" for n in REPRESENTATIONS) + " |")
        return "\n".join(lines)


def _normalised(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def top_results(scores: np.ndarray, depth: int) -> np.ndarray:
    """Indices of the ``depth`` highest scores, best first, ties by lower index (a stable sort: deterministic).

    Shapes:
        scores: ``[n]``; returns ``[min(depth, n)]``.
    """
    return np.argsort(-scores, kind="stable")[:depth]


def keyword_study(
    queries: Sequence[KeywordQuery],
    collection: SearchCollection,
    encoder: GraphEncoder,
    converter: KatexConverter,
    depth: int = DEPTH,
) -> KeywordStudyReport:
    """Search the collection with every query under each representation and judge the results by keywords.

    Args:
        queries: from `read_keyword_queries`.
        collection: from `build_collection` (with the same bundle's vocabulary).
        encoder: the bundle's graph encoder.
        converter: a KaTeX converter.
        depth: results per query (the paper: 1000).

    Raises:
        KeywordQueryError: the collection is empty, or no query converted.
    """
    if not collection.graphs:
        raise KeywordQueryError("the corpus holds no display equation with MathML: nothing to search")
    vocab = encoder.vocabulary
    converted = convert_and_featurize([(q.id, q.line, q.latex) for q in queries], vocab, converter)
    kept, graphs, failures = [queries[i] for i in converted.kept], converted.graphs, converted.failures
    if not kept:
        raise KeywordQueryError(f"none of the {len(queries)} queries converted", hint=failures[0].message)
    sizes = (vocab.n_tags, vocab.n_attrs, vocab.n_chars)
    docs, query_vectors = encoder.encode_graphs(collection.graphs), encoder.encode_graphs(graphs)
    docs_bow, query_bow = (
        _normalised(bag_of_words(collection.graphs, *sizes)),
        _normalised(bag_of_words(graphs, *sizes)),
    )
    cosine = _normalised(query_vectors) @ _normalised(docs).T
    scores = {
        "model": query_vectors @ docs.T if encoder.similarity == "max_inner_product" else cosine,
        "model_cosine": cosine,
        "bag_of_words": query_bow @ docs_bow.T,
    }
    judged: dict[tuple[int, int], bool] = {}  # (query, equation) -> relevant: lists overlap between representations
    per_query: dict[str, dict[str, float]] = {q.id: {} for q in kept}
    sums = {name: np.zeros(len(CUTOFFS) + 1) for name in REPRESENTATIONS}
    for name in REPRESENTATIONS:
        for qi, query in enumerate(kept):
            relevant = []
            for doc in top_results(scores[name][qi], depth).tolist():
                if (qi, doc) not in judged:
                    judged[qi, doc] = keyword_relevant(collection.texts[doc], query.keywords)
                relevant.append(judged[qi, doc])
            values = [precision_at(relevant, k) for k in CUTOFFS] + [unnormalized_average_precision(relevant, depth)]
            sums[name] += values
            per_query[query.id][name] = values[1]
    figures = {name: StudyFigures(*(float(v) / len(kept) for v in sums[name])) for name in REPRESENTATIONS}
    return KeywordStudyReport(
        queries=len(queries),
        evaluated=len(kept),
        failures=tuple(failures),
        collection=len(collection.ids),
        skipped=dict(collection.skipped),
        similarity_of_model=encoder.similarity,
        figures=figures,
        per_query=per_query,
    )
