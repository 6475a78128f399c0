"""A labelled set of equations and its evaluation (KDD'20 §6.1, Tables 1-2); numpy, KaTeX and onnxruntime, no torch.

Each equation of the set belongs to a category (Bayes' theorem, the Ising / Boltzmann-machine energy, ...) and is
written the way some field writes it. The set is converted with KaTeX (`eqsearch.engine.latex.converter`), featurized
with the bundle's vocabulary and encoded by the bundle's ONNX encoder; the figures are those of KDD'20 §6.1
(1-nearest-neighbour leave-one-out accuracy and the ranking score over all (x, x⁺, x⁻) with x⁺ of x's category and x⁻ of
another) and retrieval figures of the leave-one-out rankings (every equation a query against all the others, the same
category relevant): P@5, MAP and uMAP (§6.3). The bag-of-words baseline of §6.3 is scored on the same equations, with
the same featurization.

The set's file and its format are `eqsearch.evaluation.labelled_set` (`read_labelled_set`).

Equations that KaTeX cannot convert, or whose MathML does not featurize, are left out of the figures and reported
(`ConversionFailure`); those KaTeX converted only approximately (unknown macros rendered as text) are kept and listed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from eqsearch.engine.model.graph import GraphArrays
from eqsearch.evaluation.baseline import bag_of_words, latex_tfidf
from eqsearch.evaluation.labelled_set import LabelledEquation, LabelledSetError
from eqsearch.evaluation.metrics import (
    cosine_matrix,
    labelled_ranking_score,
    leave_one_out_accuracy,
    map_prime,
    nearest_neighbour_hits,
    precision_at,
    unnormalized_average_precision,
)
from eqsearch.evaluation.trec import ARQMATH_DEPTH, Qrels, ordered, write_qrels, write_run

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch
    from eqsearch.engine.latex.converter import KatexConverter
    from eqsearch.engine.search import FormulaRanking

#: Representations scored, in report order: the model with the bundle's similarity (as served), the model by cosine,
#: the bag-of-words baseline of §6.3 by cosine, and tf-idf over the LaTeX's tokens and bigrams by cosine.
REPRESENTATIONS = ("model", "model_cosine", "bag_of_words", "latex_tfidf")
LABELS = {
    "model": "model, as served",
    "model_cosine": "model, cosine",
    "bag_of_words": "bag of words (§6.3), cosine",
    "latex_tfidf": "tf-idf, LaTeX tokens + bigrams, cosine",
}
#: Prefix of the representations that are rankings of the search engine (`search_similarity`): ``search:<ranker>``.
SEARCH_PREFIX = "search:"


def label_of(name: str) -> str:
    """How a representation is named in the tables."""
    if name.startswith(SEARCH_PREFIX):
        return f"search engine, ranker {name[len(SEARCH_PREFIX) :]}"
    return LABELS.get(name, name)


#: Grades of the qrels written from the set: same category highly relevant (ARQMath's "high"), others not relevant.
RELEVANT_GRADE = 3.0
NOT_RELEVANT_GRADE = 0.0


@dataclass(frozen=True)
class ConversionFailure:
    """An equation of the set that is not evaluated, and why.

    Attributes:
        id: the equation id.
        line: its line in the file.
        reason: a KaTeX reason code (`eqsearch.engine.latex.converter.REASONS`) or ``featurize``.
        message: the converter's or featurizer's message.
    """

    id: str
    line: int
    reason: str
    message: str


@dataclass(frozen=True)
class Converted:
    """Evaluation equations after KaTeX and the featurizer.

    Attributes:
        kept: positions (in the input) of the equations that converted and featurized.
        graphs: their graph arrays, in the same order.
        failures: the others, and why.
        approximate: ids of kept equations that KaTeX converted only approximately.
    """

    kept: list[int]
    graphs: list[GraphArrays]
    failures: list[ConversionFailure]
    approximate: list[str]
    mathml: list[str]


def convert_and_featurize(
    items: Sequence[tuple[str, int, str]], vocabulary: Any, converter: KatexConverter
) -> Converted:
    """Convert ``(id, line, latex)`` items (display equations) with KaTeX and featurize them with ``vocabulary``;
    what fails is reported per item, never dropped silently."""
    from eqsearch.engine.model.featurize import MathMLError, featurize_mathml

    out = Converted([], [], [], [], [])
    results = converter.convert_many([(latex, "equation") for _, _, latex in items])
    for position, ((item_id, line, _), result) in enumerate(zip(items, results, strict=True)):
        if result.mathml is None:
            out.failures.append(ConversionFailure(item_id, line, result.reason or "failed", result.message or ""))
            continue
        try:
            out.graphs.append(featurize_mathml(result.mathml, vocabulary))
        except MathMLError as error:
            out.failures.append(ConversionFailure(item_id, line, "featurize", error.message))
            continue
        out.kept.append(position)
        out.mathml.append(result.mathml)
        if result.status == "approximate":
            out.approximate.append(item_id)
    return out


@dataclass(frozen=True)
class EncodedSet:
    """The converted equations of a labelled set and their pairwise similarities under each representation.

    Attributes:
        equations: the equations that converted and featurized, in file order.
        failures: the others.
        approximate: ids of the equations KaTeX converted approximately (kept).
        similarity: representation (`REPRESENTATIONS`, then any ``search:<ranker>`` added by `with_search`) ->
            ``[n, n]`` similarities between ``equations``.
        similarity_of_model: the bundle's similarity (``max_inner_product`` or ``cosine``): what "model" uses.
    """

    equations: tuple[LabelledEquation, ...]
    failures: tuple[ConversionFailure, ...]
    approximate: tuple[str, ...]
    similarity: dict[str, np.ndarray]
    similarity_of_model: str

    @property
    def labels(self) -> list[str]:
        return [e.category for e in self.equations]

    @property
    def ids(self) -> list[str]:
        return [e.id for e in self.equations]


def graph_vocabulary(encoder: Any) -> Any:
    """The vocabulary the bag of words counts with: a graph encoder's own, a composite's graph part's, else the shipped
    graph network's."""
    for candidate in (encoder, *getattr(encoder, "encoders", ())):
        if getattr(candidate, "vocabulary", None) is not None:
            return candidate.vocabulary
    from eqsearch.engine.model.bundle import default_bundle_path, load_bundle_vocabulary, read_manifest

    return load_bundle_vocabulary(read_manifest(default_bundle_path()))


def encode_labelled_set(
    equations: Sequence[LabelledEquation],
    encoder: Any,
    converter: KatexConverter,
    parts: Sequence[tuple[str, float]] | None = None,
) -> EncodedSet:
    """Convert (KaTeX), featurize (the graph vocabulary, `graph_vocabulary`) and encode (ONNX) a labelled set; bag of
    words beside.

    Args:
        equations: from `read_labelled_set`.
        encoder: a bundle's encoder (`eqsearch.engine.model.encoder.load_encoder`): a graph encoder encodes the graphs
            featurized here, any other kind the converted MathML.
        converter: a KaTeX converter.
        parts: a composite encoder's parts weighed as a query weighs them (`engine.model.composite`), so that the
            model's figures are those of kNN with these weights (None: the ``embedding`` ranker's; ignored by an
            encoder that is no composite).

    Raises:
        KatexNotInstalledError: Node.js or KaTeX is missing.
        LabelledSetError: fewer than two equations, or a single category, left after conversion.
    """
    vocab = graph_vocabulary(encoder)
    converted = convert_and_featurize([(e.id, e.line, e.latex) for e in equations], vocab, converter)
    kept = [equations[i] for i in converted.kept]
    graphs, failures, approximate = converted.graphs, converted.failures, converted.approximate
    if len(kept) < 2 or len({e.category for e in kept}) < 2:
        raise LabelledSetError(
            f"only {len(kept)} of {len(equations)} equations converted, in {len({e.category for e in kept})} "
            "categories: nothing to evaluate",
            hint="; ".join(f"{f.id} (line {f.line}): {f.reason}" for f in failures[:5]) or None,
        )
    vectors = encoder.encode_graphs(graphs) if hasattr(encoder, "encode_graphs") else encoder.encode(converted.mathml)
    bow = bag_of_words(graphs, vocab.n_tags, vocab.n_attrs, vocab.n_chars)
    tfidf = latex_tfidf([e.latex for e in kept])
    return EncodedSet(
        equations=tuple(kept),
        failures=tuple(failures),
        approximate=tuple(approximate),
        similarity={
            "model": served_similarity(encoder, vectors, parts),
            "model_cosine": cosine_matrix(vectors, vectors),
            "bag_of_words": cosine_matrix(bow, bow),
            "latex_tfidf": cosine_matrix(tfidf, tfidf),
        },
        similarity_of_model=encoder.similarity,
    )


def served_similarity(encoder: Any, vectors: np.ndarray, parts: Sequence[tuple[str, float]] | None) -> np.ndarray:
    """How kNN in an index compares each vector as a query with every vector as stored: a composite's parts weighed
    as ``parts`` (None: the ``embedding`` ranker's) ask, and, where compared by cosine, both sides rounded to int8 as
    the index's writers and searches round them (`engine.index.vectors`)."""
    from eqsearch.engine.index.vectors import query_vector, stored_vector
    from eqsearch.engine.search.query_formula import weigh_parts
    from eqsearch.engine.search.rankers import get_ranker

    weights = get_ranker("embedding").embedding_parts if parts is None else parts
    queries = np.stack([weigh_parts(encoder, v, weights) for v in vectors])  # as it is where no composite
    if encoder.similarity != "cosine":
        return queries @ vectors.T
    stored = np.array([stored_vector(v, "cosine") or np.zeros(len(v)) for v in vectors], dtype=np.float64)
    rounded = np.stack([query_vector(q, "cosine") for q in queries]).astype(np.float64)
    return cosine_matrix(rounded, stored)


def leave_one_out_run(similarity: np.ndarray, ids: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
    """Every equation a topic; its results are all the other equations with their similarity, in TREC order.

    Shapes:
        similarity: ``[n, n]``; ids: ``[n]``.
    """
    run = {}
    for i, topic in enumerate(ids):
        results = [(doc, float(similarity[i, j])) for j, doc in enumerate(ids) if j != i]
        order = ordered(results)
        scores = dict(results)
        run[topic] = [(doc, scores[doc]) for doc in order]
    return run


def same_category_qrels(ids: Sequence[str], labels: Sequence[str]) -> Qrels:
    """Every equation a topic; every other equation judged: `RELEVANT_GRADE` in the same category, else 0."""
    return {
        topic: {
            doc: RELEVANT_GRADE if labels[j] == labels[i] else NOT_RELEVANT_GRADE for j, doc in enumerate(ids) if j != i
        }
        for i, topic in enumerate(ids)
    }


@dataclass(frozen=True)
class RetrievalFigures:
    """Figures of one representation on a labelled set (all in [0, 1] except uMAP).

    Attributes:
        accuracy: 1-NN leave-one-out accuracy (§6.1).
        ranking: share of (x, x⁺, x⁻) ordered correctly, over all such triplets of the set (§6.1).
        p_at_5: mean precision of the first 5 results of the leave-one-out rankings.
        map: mean average precision of those rankings (every other equation is judged, so MAP = MAP′).
        umap: mean unnormalised average precision, ``∑ P(k) Δ_k`` over the first 1000 results (§6.3).
    """

    accuracy: float
    ranking: float
    p_at_5: float
    map: float
    umap: float


def retrieval_figures(similarity: np.ndarray, ids: Sequence[str], labels: Sequence[str]) -> RetrievalFigures:
    """`RetrievalFigures` of one similarity matrix over a labelled set.

    Shapes:
        similarity: ``[n, n]``; ids, labels: ``[n]``.
    """
    run = leave_one_out_run(similarity, ids)
    qrels = same_category_qrels(ids, labels)
    p5, aps, uaps = [], [], []
    for topic, results in run.items():
        relevant = [qrels[topic][doc] >= RELEVANT_GRADE for doc, _ in results]
        p5.append(precision_at(relevant, 5))
        uaps.append(unnormalized_average_precision(relevant, ARQMATH_DEPTH))
        aps.append(map_prime([doc for doc, _ in results], qrels[topic]))
    return RetrievalFigures(
        accuracy=leave_one_out_accuracy(similarity, labels),
        ranking=labelled_ranking_score(similarity, labels),
        p_at_5=float(np.mean(p5)),
        map=float(np.mean(aps)),
        umap=float(np.mean(uaps)),
    )


@dataclass(frozen=True)
class LabelledReport:
    """The evaluation of a bundle on a labelled set.

    Attributes:
        source: the labelled file.
        bundle: the bundle directory.
        similarity_of_model: the bundle's similarity, used by the "model" representation.
        equations: equations in the file.
        categories: categories in the file.
        evaluated: equations evaluated (converted and featurized).
        failures: the equations left out, and why.
        approximate: ids converted approximately (evaluated).
        figures: representation -> figures.
        per_category: category -> representation -> 1-NN leave-one-out accuracy of its equations, and
            ``equations`` -> how many of its equations were evaluated.
    """

    source: str
    bundle: str
    similarity_of_model: str
    equations: int
    categories: int
    evaluated: int
    failures: tuple[ConversionFailure, ...]
    approximate: tuple[str, ...]
    figures: dict[str, RetrievalFigures]
    per_category: dict[str, dict[str, float]]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def table(self) -> str:
        """A markdown table of the figures, one row per representation."""
        lines = [
            "| representation | 1-NN accuracy | ranking | P@5 | MAP | uMAP |",
            "|---|---|---|---|---|---|",
        ]
        for name, f in self.figures.items():
            label = label_of(name) + (f" ({self.similarity_of_model})" if name == "model" else "")
            lines.append(
                f"| {label} | {100 * f.accuracy:.1f} | {100 * f.ranking:.1f} | {100 * f.p_at_5:.1f} | "
                f"{100 * f.map:.1f} | {f.umap:.2f} |"
            )
        return "\n".join(lines)

    def category_table(self) -> str:
        """A markdown table of the 1-NN accuracy per category."""
        names = list(self.figures)
        lines = [
            "| category | equations | " + " | ".join(label_of(n) for n in names) + " |",
            "|---|---|" + "---|" * len(names),
        ]
        for category, values in self.per_category.items():
            size = int(values["equations"])
            cells = " | ".join(f"{100 * values[n]:.0f}" for n in names)
            lines.append(f"| {category} | {size} | {cells} |")
        return "\n".join(lines)


def labelled_report(
    encoded: EncodedSet, equations: Sequence[LabelledEquation], source: str | Path, bundle: str | Path
) -> LabelledReport:
    """The figures of each representation, overall and per category, on the converted equations of a set.

    Args:
        encoded: from `encode_labelled_set`.
        equations: the whole set as read (for the counts).
        source: the labelled file (for the report).
        bundle: the bundle directory (for the report).
    """
    ids, labels = encoded.ids, encoded.labels
    figures = {name: retrieval_figures(matrix, ids, labels) for name, matrix in encoded.similarity.items()}
    labels_arr = np.asarray(labels)
    per_category: dict[str, dict[str, float]] = {}
    for name in encoded.similarity:
        hit = nearest_neighbour_hits(encoded.similarity[name], labels)
        for category in dict.fromkeys(labels):
            rows = labels_arr == category
            per_category.setdefault(category, {"equations": float(rows.sum())})[name] = float(hit[rows].mean())
    return LabelledReport(
        source=str(source),
        bundle=str(bundle),
        similarity_of_model=encoded.similarity_of_model,
        equations=len(equations),
        categories=len({e.category for e in equations}),
        evaluated=len(encoded.equations),
        failures=encoded.failures,
        approximate=encoded.approximate,
        figures=figures,
        per_category=per_category,
    )


def search_similarity(
    encoded: EncodedSet,
    client: Elasticsearch,
    encoder: Any,
    converter: KatexConverter,
    ranking: FormulaRanking,
    *,
    index_prefix: str | None = None,
    on_query: Callable[[str], None] | None = None,
) -> np.ndarray:
    """The search engine's leave-one-out rankings of a labelled set, as a similarity matrix.

    The converted equations are ingested through the production ingest job into indices of their own (deleted
    afterwards), and each is searched as a formula-only query through the production `SearchService` with
    ``ranking``, down to every other equation. Row ``i`` holds ``n - rank`` for the equations that search ranks
    (the best gets the highest value) and 0 for those it does not find, so every figure of `retrieval_figures` reads
    the engine's ranking (a tie between two unfound equations counts as a loss in the ranking score).

    Args:
        encoded: from `encode_labelled_set` (its equations are the ones ingested and searched).
        client: the cluster.
        encoder: the bundle's encoder (the ingest job embeds with it).
        converter: the KaTeX converter.
        ranking: the formula ranking (`eqsearch.engine.search.rankers`).
        index_prefix: the temporary indices' prefix (default: a new ``eqsearch-eval-<random>``).
        on_query: called with each equation's id once it is searched.

    Shapes:
        returns ``[n, n]`` with n = ``len(encoded.equations)``.
    """
    from eqsearch.engine.search import MAX_RESULT_WINDOW
    from eqsearch.evaluation.formulas import formula_ranking, indexed_collection

    ids = encoded.ids
    n = len(ids)
    position = {identifier: i for i, identifier in enumerate(ids)}
    similarity = np.zeros((n, n), dtype=np.float64)
    formulas = [(e.id, e.latex) for e in encoded.equations]
    depth = min(n, MAX_RESULT_WINDOW)
    # a ranking whose MaxSim runs in the node only is measured as deployed: with node vectors
    nodes = ranking.maxsim_nodes if ranking.maxsim_in_node else None
    with indexed_collection(
        client, encoder, converter, formulas, "labelled set", index_prefix=index_prefix, node_vectors=nodes
    ) as indexed:
        service = indexed.service(encoder, converter, ranking=ranking, depth=depth)
        for i, equation in enumerate(encoded.equations):
            ranked = [doc for doc, _ in formula_ranking(service, equation.latex, depth) if doc != equation.id]
            for rank, doc in enumerate(ranked):
                similarity[i, position[doc]] = n - rank
            if on_query is not None:
                on_query(equation.id)
    return similarity


def with_search(encoded: EncodedSet, name: str, similarity: np.ndarray) -> EncodedSet:
    """The set with the search engine's rankings under ranker ``name`` added as representation ``search:<name>``."""
    return replace(encoded, similarity={**encoded.similarity, f"{SEARCH_PREFIX}{name}": similarity})


def write_trec_files(encoded: EncodedSet, out: str | Path, depth: int = ARQMATH_DEPTH) -> list[Path]:
    """Write the labelled set as a TREC test collection: ``topics.tsv`` (id, category, LaTeX), ``qrels.txt`` (every
    other equation judged, same category `RELEVANT_GRADE`) and one leave-one-out run per representation
    (``run-<representation>.txt``, tag = the representation, first ``depth`` results).

    Returns:
        The files written.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ids, labels = encoded.ids, encoded.labels
    topics = out / "topics.tsv"
    topics.write_text(
        "# topic\tcategory\tlatex\n" + "".join(f"{e.id}\t{e.category}\t{e.latex}\n" for e in encoded.equations),
        encoding="utf-8",
    )
    written = [topics, write_qrels(out / "qrels.txt", same_category_qrels(ids, labels))]
    for name, similarity in encoded.similarity.items():
        run = {t: results[:depth] for t, results in leave_one_out_run(similarity, ids).items()}
        slug = re.sub(r"[^a-z0-9+]+", "-", name.lower())
        written.append(write_run(out / f"run-{slug}.txt", run, tag=name))
    return written
