"""Corpus reading with the real featurizer, the split by paper, and the paper's triplet sampling."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest
from eqsearch.engine.model.featurize import featurize_mathml
from eqsearch.engine.model.vocabulary import build_vocabulary
from eqsearch.ingest.records import read_papers
from eqsearch.training.dataset import build_corpus, load_corpus, save_corpus, split_papers
from eqsearch.training.triplets import SOURCES, TripletSampler


@pytest.fixture
def corpus(papers_jsonl: Path):
    records = list(read_papers(papers_jsonl))
    mathml = [e["mathml"] for r in records for s in r["sections"] for e in s["equations"] if e.get("mathml")]
    vocab = build_vocabulary(mathml)
    return build_corpus(records, partial(featurize_mathml, vocab=vocab))


def test_build_corpus_counts_and_skips(corpus) -> None:
    summary = corpus.summary()
    assert summary["papers"] == 12 and summary["equations"] == 96
    assert summary["skipped"] == {"no_mathml": 12}
    assert summary["citation_edges"] == 12
    assert all(len(p.sections) == 2 for p in corpus.papers)


def test_split_is_by_paper_and_stable(corpus) -> None:
    train, test = split_papers(corpus, 0.3, seed=0)
    assert {p.id for p in train.papers}.isdisjoint({p.id for p in test.papers})
    assert len(train.papers) + len(test.papers) == 12
    again_train, _ = split_papers(corpus, 0.3, seed=0)
    assert [p.id for p in again_train.papers] == [p.id for p in train.papers]
    for sub in (train, test):  # citations stay inside each side
        assert all(c < len(sub.papers) for p in sub.papers for c in p.cites)


def test_save_and_load_roundtrip(corpus, tmp_path: Path) -> None:
    save_corpus(corpus, tmp_path / "c.npz")
    back = load_corpus(tmp_path / "c.npz")
    assert [p.id for p in back.papers] == [p.id for p in corpus.papers]
    for a, b in zip(corpus.graphs, back.graphs, strict=True):
        assert np.array_equal(a.tag, b.tag) and np.array_equal(a.edge_index, b.edge_index)


def test_triplets_follow_the_paper(corpus) -> None:
    sampler = TripletSampler(corpus)
    t = sampler.sample(300, seed=0)
    owner = corpus.equation_paper
    assert np.all(owner[t.anchor] != owner[t.negative])
    assert np.all(t.anchor != t.positive)
    fractions = t.source_fractions()
    assert all(fractions[s] > 0.2 for s in SOURCES)
    section = t.source == SOURCES.index("section")
    assert all(
        sampler.section_of[a] == sampler.section_of[p]
        for a, p in zip(t.anchor[section], t.positive[section], strict=True)
    )
    paper = t.source == SOURCES.index("paper")
    assert np.all(owner[t.anchor[paper]] == owner[t.positive[paper]])
    cited = t.source == SOURCES.index("citation")
    for a, p in zip(owner[t.anchor[cited]], owner[t.positive[cited]], strict=True):
        assert p in corpus.papers[a].cites or a in corpus.papers[p].cites
    again = sampler.sample(300, seed=0)
    assert np.array_equal(again.anchor, t.anchor)


def test_citation_source_is_dropped_without_citations(corpus) -> None:
    from eqsearch.training.dataset import Paper

    corpus.papers = [Paper(p.id, p.sections, ()) for p in corpus.papers]
    assert TripletSampler(corpus).sources == ("section", "paper")


def test_read_papers_reads_gzip_compressed_jsonl_the_same(papers_jsonl: Path, tmp_path: Path) -> None:
    import gzip

    packed = tmp_path / "papers.jsonl.gz"
    packed.write_bytes(gzip.compress(papers_jsonl.read_bytes()))
    assert list(read_papers(packed)) == list(read_papers(papers_jsonl))
    assert len(list(read_papers(packed))) == 12


def test_self_pairs_take_their_share_and_leave_the_default_sampling_as_it_was(corpus) -> None:
    from eqsearch.training.triplets import SELF

    plain = TripletSampler(corpus).sample(300, seed=0)
    assert np.array_equal(TripletSampler(corpus, self_share=0.0).sample(300, seed=0).anchor, plain.anchor)
    mixed = TripletSampler(corpus, self_share=0.5).sample(600, seed=0)
    own = mixed.source == SELF
    assert np.all(mixed.anchor[own] == mixed.positive[own]) and np.all(mixed.anchor[~own] != mixed.positive[~own])
    assert 0.35 < own.mean() < 0.65
    assert mixed.source_fractions()["self"] == pytest.approx(own.mean())
    assert "self" not in plain.source_fractions()


def test_inline_formulas_join_the_corpus_only_when_asked(papers_jsonl: Path) -> None:
    records = list(read_papers(papers_jsonl))
    display = next(e for r in records for s in r["sections"] for e in s["equations"] if e.get("mathml"))
    records[0]["sections"][0]["inline"] = [{**display, "display": False}, {**display, "display": False}]
    mathml = [e["mathml"] for r in records for s in r["sections"] for e in s["equations"] if e.get("mathml")]
    featurize = partial(featurize_mathml, vocab=build_vocabulary(mathml))
    assert build_corpus(records, featurize).summary()["equations"] == 96
    assert build_corpus(records, featurize, inline=True).summary()["equations"] == 98
