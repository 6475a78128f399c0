"""The shipped known-item query files of `eqsearch evaluate hybrid`: both parse, their rows follow the conventions the
figures in benchmarks/hybrid.md rely on (the split by paper, retyped formulas, a few words), and the second set is
independent of the first (no paper, and no paper's repository, in both). Bad files are refused where they are read."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from eqsearch.evaluation.hybrid import (
    DEFAULT_HYBRID_QUERIES,
    FORMAT_LINE,
    HybridQueryError,
    HybridQueryRow,
    normalise_latex,
    read_hybrid_queries,
)

DATA = Path(DEFAULT_HYBRID_QUERIES).parent
FIRST = DATA / "hybrid-dev.tsv"
SECOND = DATA / "hybrid-dev2.tsv"
#: Where the second set's papers come from: folder name -> repository @ commit (benchmarks/hybrid.md).
REALPAPERS3 = Path(__file__).resolve().parents[2] / "benchmarks" / "realpapers3_counts.json"


#: Words that only link the others ("number of e-folds" says two things).
_LINKING = frozenset({"a", "an", "the", "of", "to", "in", "on", "by", "at", "for", "from", "with", "and", "or"})


def _split(paper: str) -> str:
    """The split rule of both files: a third of the papers, by the SHA-1 of their id, is held out."""
    return "heldout" if int(hashlib.sha1(paper.encode()).hexdigest(), 16) % 3 == 0 else "dev"


@pytest.mark.parametrize("path", [FIRST, SECOND], ids=["first", "second"])
def test_shipped_file_parses_and_splits_by_paper(path: Path) -> None:
    rows = read_hybrid_queries(path)
    assert len(rows) == len({row.id for row in rows})
    for row in rows:
        assert row.split == _split(row.paper), f"{row.id}: {row.paper} belongs to {_split(row.paper)}"
    assert {row.split for row in rows} == {"dev", "heldout"}
    assert {row.lead for row in rows} == {"formula", "keywords", "balanced"}


def test_second_set_size_ids_and_leads() -> None:
    rows = read_hybrid_queries(SECOND)
    assert len(rows) >= 45
    assert len({row.paper for row in rows}) >= 15
    assert [row.id for row in rows] == [f"k{number:03d}" for number in range(1, len(rows) + 1)]
    for lead in ("formula", "keywords"):
        share = sum(row.lead == lead for row in rows) / len(rows)
        assert 0.15 <= share <= 0.35, f"{lead}-led: {share:.2f} of the rows"


def test_second_set_queries_are_retyped_and_say_a_few_words() -> None:
    for row in read_hybrid_queries(SECOND):
        assert normalise_latex(row.latex) != normalise_latex(row.target), f"{row.id}: the target copied"
        words = [word for word in row.keywords.split() if word.lower() not in _LINKING]
        assert 2 <= len(words) <= 5, f"{row.id}: {row.keywords!r}"
        assert "\\label" not in row.latex and "\n" not in row.target


def test_second_set_shares_no_paper_or_repository_with_the_first() -> None:
    first = {row.paper for row in read_hybrid_queries(FIRST)}
    second = {row.paper for row in read_hybrid_queries(SECOND)}
    assert not first & second
    # The first set names its papers after their repositories, the second by realpapers3's folder names: the same
    # repository under another name would be the same paper.
    sources = json.loads(REALPAPERS3.read_text(encoding="utf-8"))["papers"]
    for paper in second:
        assert paper in sources, f"{paper} is not a realpapers3 folder"
        repository = sources[paper]["repo"].split("/")[1]
        assert repository not in first, f"{paper} is {sources[paper]['repo']}, a paper of the first set"


def test_targets_are_distinct_known_items() -> None:
    """Two rows on one display would count one equation twice."""
    rows: list[HybridQueryRow] = read_hybrid_queries(SECOND)
    keys = [(row.paper, normalise_latex(row.target)) for row in rows]
    assert len(keys) == len(set(keys))


def test_a_duplicate_id_or_a_bad_split_is_refused(tmp_path: Path) -> None:
    header = f"{FORMAT_LINE}\nid\tsplit\tlead\tpaper\ttarget\tlatex\tkeywords\n"
    row = "k001\tdev\tformula\tagnvar\tx^2 + 1\ty^2 + 1\tsquare plus one\n"
    duplicate = tmp_path / "duplicate.tsv"
    duplicate.write_text(header + row + row, encoding="utf-8")
    with pytest.raises(HybridQueryError, match=re.escape("duplicate id 'k001'")):
        read_hybrid_queries(duplicate)
    bad = tmp_path / "split.tsv"
    bad.write_text(header + row.replace("\tdev\t", "\ttest\t"), encoding="utf-8")
    with pytest.raises(HybridQueryError, match="split must be one of"):
        read_hybrid_queries(bad)
