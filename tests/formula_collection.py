"""A handful of LaTeX formulas for the formula-search tests that run the production ingest job and search service,
and the three files `eqsearch evaluate formulas` reads (collection, topics, qrels), written from them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

#: an attributed excerpt of the ARQMath-1 development half inside the repository (its README says what and whence):
#: ``collection.tsv`` (its first 600 formulas) and ``topics.tsv`` (the 22 development topics)
ARQMATH_EXCERPT = Path(__file__).resolve().parent / "data" / "arqmath1-excerpt"

#: two near-identical rational functions (the same formula up to spaces and braces), two binomial sums (one with the
#: binomial written as a fraction in parentheses), an integral and Pythagoras: the first six of every collection
FORMULAS = (
    r"f(x) = \frac{x^2 + x + c}{x^2 + 2x + c}",
    r"y = \frac{x^{2} + x + c}{x^{2} + 2 x + c}",
    r"\sum_{k=0}^{n} \binom{n}{k} k = n 2^{n-1}",
    r"\sum_{k=0}^{n} \left( \frac{n}{k} \right) k",
    r"\int_0^\infty \frac{\sin x}{x} dx = \frac{\pi}{2}",
    r"a^2 + b^2 = c^2",
)
EULER = r"e^{i\pi} + 1 = 0"
LIMIT = r"\lim_{n \to \infty} ( 1 + \frac{1}{n} )^{n} = e"
DETERMINANT = r"\det(A - \lambda I) = 0"
BROKEN = r"\left& 1 + \frac{1}{n} \right; ^{n}"  # broken LaTeX, as real input is: KaTeX refuses it


def numbered(*latex: str) -> dict[str, str]:
    """Formulas under the visual ids "1", "2", ... in order."""
    return {str(number): formula for number, formula in enumerate(latex, start=1)}


def write_formula_files(
    folder: Path,
    collection: Mapping[str, str],
    topics: Mapping[str, str],
    qrels: Iterable[tuple[str, str, int]],
) -> tuple[Path, Path, Path]:
    """Write ``collection.tsv``, ``topics.tsv`` and ``qrels.txt`` (topic, visual id, grade) into ``folder``.

    Returns:
        Their paths, in that order.
    """
    collection_path = folder / "collection.tsv"
    collection_path.write_text("visual_id\tlatex\n" + "".join(f"{k}\t{v}\n" for k, v in collection.items()))
    topics_path = folder / "topics.tsv"
    topics_path.write_text("topic\tlatex\n" + "".join(f"{k}\t{v}\n" for k, v in topics.items()))
    qrels_path = folder / "qrels.txt"
    qrels_path.write_text("".join(f"{t} 0 {d} {g}\n" for t, d, g in qrels))
    return collection_path, topics_path, qrels_path
