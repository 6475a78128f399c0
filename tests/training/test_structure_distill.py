"""The structure-bag encoder's training: formulas split by document, views, the BM25 teacher, mined batches, the
distillation loss and a short run that learns the teacher's order."""

from __future__ import annotations

import gzip
import json
import math
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from eqsearch.engine.model.layout import generalised_label, parse_layout
from eqsearch.engine.model.structure import structure_of_layout
from eqsearch.engine.model.structure_bag import StructureFeatures
from eqsearch.training.structure_data import (
    augmented_view,
    corpus_formulas,
    held_out_document,
    read_formula_file,
    term_data,
    term_slots,
    write_formula_file,
)
from eqsearch.training.structure_distill import DistillConfig, distill_loss, encode_terms, prepare, train
from eqsearch.training.structure_model import StructureBagConfig
from eqsearch.training.structure_teacher import Bm25Teacher, MinedBatches


def _mi(x: str) -> str:
    return f"<mi>{x}</mi>"


def _sum(*letters: str, power: str = "2") -> str:
    parts = "<mo>+</mo>".join(f"<msup>{_mi(x)}<mn>{power}</mn></msup>" for x in letters)
    return f"<math>{parts}</math>"


FORMULAS = [_sum("x", "y"), _sum("a", "b"), _sum("x", "y", "z"), _sum("x", "y", power="3")]
FORMULAS += [f"<math>{_mi('f')}<mo>(</mo>{_mi(x)}<mo>)</mo><mo>=</mo><mn>{k}</mn></math>" for x in "xyz" for k in "12"]
FORMULAS += [f"<math><mfrac>{_mi(a)}{_mi(b)}</mfrac></math>" for a, b in ("ab", "xy", "pq")]


def test_formulas_are_deduplicated_and_split_by_document(tmp_path: Path) -> None:
    papers = tmp_path / "papers.jsonl"
    rows = []
    for d in range(40):
        eqs = [{"mathml": FORMULAS[d % len(FORMULAS)]}, {"mathml": f"<math><mn>{d}</mn></math>"}]
        rows.append({"id": f"doc{d}", "sections": [{"equations": eqs, "inline": [{"mathml": FORMULAS[0]}]}]})
    papers.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    records = corpus_formulas(papers, test_fraction=0.3, seed=0)
    assert len({r.mathml for r in records}) == len(records) == len(FORMULAS) + 40
    for r in records:  # each formula's side is its (first) document's
        assert r.held_out == held_out_document(r.doc, 0.3, 0)
    assert 0 < sum(r.held_out for r in records) < len(records)
    assert not any(r.mathml == FORMULAS[0] for r in corpus_formulas(papers, inline=False) if r.doc != "doc0")
    path = tmp_path / "f.jsonl.gz"
    assert write_formula_file(records, path) == len(records)
    assert read_formula_file(path) == records
    with gzip.open(path, "rt") as lines:
        assert json.loads(next(lines))["doc"] == records[0].doc


def test_a_view_renames_letters_one_to_one_and_keeps_the_generalised_structure() -> None:
    original = structure_of_layout(parse_layout(FORMULAS[2]))
    for seed in range(5):
        view = structure_of_layout(augmented_view(FORMULAS[2], random.Random(seed)))
        letters = {t for t in view.tokens if t.startswith("V:") and "|" not in t}
        assert len(letters) == 3  # x, y, z stay three distinct letters
        general = Counter(t for t in view.tokens if "|" in t and "*" in t)
        assert general == Counter(t for t in original.tokens if "|" in t and "*" in t)  # a sum of three squares
        assert sorted(generalised_label(t) for t in view.tokens if "|" not in t) == sorted(
            generalised_label(t) for t in original.tokens if "|" not in t
        )


def test_term_data_slots_match_the_runtime_hashing() -> None:
    from eqsearch.engine.model.structure_bag import featurize_structure_bag

    features = StructureFeatures(buckets=1 << 10)
    data = term_data(FORMULAS[:3], features)
    batch = featurize_structure_bag(FORMULAS[:3], features)
    ours = term_slots(data.digest, features).reshape(-1)
    assert sorted(ours.tolist()) == sorted(batch.ids.tolist())
    assert data.token.sum() == sum(len(set(structure_of_layout(parse_layout(m)).tokens)) for m in FORMULAS[:3])


def _brute_bm25(docs: list[Counter], q: int, d: int, k1: float = 1.2, b: float = 0.75) -> float:
    n = len(docs)
    avg = sum(sum(c.values()) for c in docs) / n
    score = 0.0
    for term, count in docs[q].items():
        if term not in docs[d]:
            continue
        df = sum(term in c for c in docs)
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        tf = docs[d][term]
        score += count * idf * tf / (tf + k1 * (1 - b + b * sum(docs[d].values()) / avg))
    return score


def test_the_teacher_is_elasticsearch_bm25_over_the_structural_tokens() -> None:
    data = term_data(FORMULAS, StructureFeatures())
    teacher = Bm25Teacher.build(data)
    docs = [Counter(structure_of_layout(parse_layout(m)).tokens) for m in FORMULAS]
    scores = teacher.scores(np.arange(len(FORMULAS)), np.arange(len(FORMULAS)))
    expected = np.array([[_brute_bm25(docs, q, d) for d in range(len(docs))] for q in range(len(docs))])
    np.testing.assert_allclose(scores, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(teacher.self_scores(np.arange(len(FORMULAS))), np.diag(expected), rtol=1e-4)
    # x^2 + y^2 is closer to a^2 + b^2 (same shape) than to f(x) = 1
    assert scores[0, 1] > scores[0, 4]


def test_mined_batches_group_each_seed_with_its_best_scoring_neighbours() -> None:
    data = term_data(FORMULAS * 3, StructureFeatures())
    teacher = Bm25Teacher.build(data)
    batches = MinedBatches(teacher, seeds=4, per_seed=3, pool=8, max_df=50)
    items = batches.batch(np.random.default_rng(0))
    assert items.shape == (12,)
    groups = items.reshape(4, 3)
    for seed, *neighbours in groups:
        assert seed not in neighbours
        own = teacher.scores(np.array([seed]), np.array(neighbours))[0]
        assert own.min() >= 0


def test_the_loss_is_zero_when_the_student_matches_the_teacher_and_positive_otherwise() -> None:
    torch.manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(6, 8), dim=1)
    teacher = z @ z.T
    same = distill_loss(z, None, teacher, tau_t=0.1, tau_s=0.1)
    assert abs(float(same)) < 1e-5
    other = torch.nn.functional.normalize(torch.randn(6, 8), dim=1)
    assert float(distill_loss(other, None, teacher, 0.1, 0.1)) > 0.01
    assert float(distill_loss(z, other, teacher, 0.1, 0.1)) > 0.0


def _tiny_config(features: StructureFeatures, **options: Any) -> DistillConfig:
    """A run small enough for a test: 4 seeds of 4 neighbours from a pool of 16, a 16-d model, one CPU thread."""
    return DistillConfig(
        seeds=4,
        per_seed=4,
        pool=16,
        warmup_steps=5,
        log_every=1000,
        threads=1,
        device="cpu",
        model=StructureBagConfig(buckets=1 << 10, width=16, hidden=32, embedding_dim=16),
        features=features,
        **options,
    )


def test_a_short_run_learns_the_teachers_nearest_neighbour() -> None:
    features = StructureFeatures(buckets=1 << 10)
    corpus = FORMULAS * 4
    data = prepare(corpus, features)
    config = _tiny_config(features, steps=60)
    model, history = train(config, data, log=lambda _: None)
    assert history["steps"] == 60
    vectors = encode_terms(model, term_data(FORMULAS, features), features)
    cos = vectors @ vectors.T
    np.fill_diagonal(cos, -np.inf)
    # x^2 + y^2: its nearest neighbour is a^2 + b^2 or the other sums of powers, never f(x) = k or a fraction
    assert int(np.argmax(cos[0])) in (1, 2, 3)


def test_the_span_teacher_is_the_largest_shared_sub_expression_over_the_larger_formula() -> None:
    from eqsearch.engine.model.structure import formula_structure
    from eqsearch.training.structure_distill import teacher_matrix
    from eqsearch.training.structure_teacher import SpanTeacher

    data = term_data(FORMULAS, StructureFeatures())
    spans = SpanTeacher.build(data)
    match = spans.match(np.arange(len(FORMULAS)), np.arange(len(FORMULAS)))
    np.testing.assert_allclose(np.diag(match), 1.0)
    structures = [formula_structure(m) for m in FORMULAS]
    for q in (0, 2, 4):
        for d in range(len(FORMULAS)):
            shared = set(structures[q].spans) & set(structures[d].spans)
            best = max((structures[d].spans[k] for k in shared), default=0)
            larger = max(max(structures[q].spans.values()), max(structures[d].spans.values()))
            assert abs(match[q, d] - best / larger) < 1e-6
    # x^2 + y^2 and a^2 + b^2 are one sub-expression up to renamed letters: a full match
    assert match[0, 1] == 1.0 and match[0, 4] < 1.0
    target = teacher_matrix(Bm25Teacher.build(data), spans, np.arange(4), span_weight=0.5)
    np.testing.assert_allclose(np.diag(target), 1.0, rtol=1e-6)


def test_the_contextual_signal_raises_the_targets_of_formulas_of_one_document() -> None:
    from eqsearch.training.structure_distill import teacher_matrix
    from eqsearch.training.structure_teacher import SpanTeacher

    data = term_data(FORMULAS[:4], StructureFeatures())
    bm25, spans = Bm25Teacher.build(data), SpanTeacher.build(data)
    items = np.arange(4)
    plain = teacher_matrix(bm25, spans, items, 0.0)
    docs = np.array([0, 0, 1, 1])
    context = teacher_matrix(bm25, spans, items, 0.0, docs, context_weight=1.0)
    np.testing.assert_allclose(np.diag(context), 1.0, rtol=1e-6)
    np.testing.assert_allclose(context[0, 1], (plain[0, 1] + 1.0) / 2.0, rtol=1e-6)
    np.testing.assert_allclose(context[0, 2], plain[0, 2] / 2.0, rtol=1e-6)


def test_another_encoders_vectors_teach_their_cosine_alone_or_beside_bm25() -> None:
    from eqsearch.training.structure_distill import teacher_matrix
    from eqsearch.training.structure_teacher import SpanTeacher

    data = term_data(FORMULAS[:4], StructureFeatures())
    bm25, spans = Bm25Teacher.build(data), SpanTeacher.build(data)
    items = np.arange(4)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(4, 8)).astype(np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    alone = teacher_matrix(bm25, spans, items, 0.0, vectors=unit, vector_weight=1.0, bm25_weight=0.0)
    np.testing.assert_allclose(alone, unit @ unit.T, rtol=1e-5, atol=1e-6)
    plain = teacher_matrix(bm25, spans, items, 0.0)
    both = teacher_matrix(bm25, spans, items, 0.0, vectors=unit, vector_weight=1.0, bm25_weight=1.0)
    np.testing.assert_allclose(both, (plain + unit @ unit.T) / 2.0, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="no signal"):
        teacher_matrix(bm25, spans, items, 0.0, bm25_weight=0.0)


def test_prepare_normalises_the_teacher_vectors_and_refuses_a_wrong_count() -> None:
    features = StructureFeatures(buckets=1 << 10)
    vectors = np.arange(1, 4 * 3 + 1, dtype=np.float32).reshape(4, 3)
    data = prepare(FORMULAS[:4], features, vectors=vectors, views=False)
    np.testing.assert_allclose(np.linalg.norm(data.vectors, axis=1), 1.0, rtol=1e-6)
    assert data.views is data.terms
    with pytest.raises(ValueError, match="vectors: 3 rows for 4 formulas"):
        prepare(FORMULAS[:4], features, vectors=vectors[:3], views=False)


def test_groups_take_neighbours_from_the_seeds_own_document_first() -> None:
    corpus = FORMULAS * 4
    data = term_data(corpus, StructureFeatures())
    teacher = Bm25Teacher.build(data)
    documents = np.arange(len(corpus)) // 4  # four formulas per document
    batches = MinedBatches(teacher, seeds=3, per_seed=4, pool=8, max_df=50, documents=documents, same_document=2)
    for _ in range(5):
        groups = batches.batch(np.random.default_rng(_)).reshape(3, 4)
        for seed, *neighbours in groups:
            assert seed not in neighbours and len(set(neighbours)) == 3
            assert sum(documents[j] == documents[seed] for j in neighbours) >= 2
    with pytest.raises(ValueError, match="needs each formula's document"):
        MinedBatches(teacher, same_document=1)
    with pytest.raises(ValueError, match="per_seed - 1"):
        MinedBatches(teacher, per_seed=3, documents=documents, same_document=3)


def test_teacher_vectors_are_the_bundles_own_and_a_malformed_formula_gets_a_zero_row() -> None:
    from eqsearch.engine.model import load_encoder
    from eqsearch.training.structure_prepare import teacher_vectors

    mathml = [FORMULAS[0], "<math><mi>x</mi>", FORMULAS[1]]
    vectors = teacher_vectors(None, mathml, batch=2)
    np.testing.assert_allclose(vectors[[0, 2]], load_encoder(None).encode([FORMULAS[0], FORMULAS[1]]), atol=1e-5)
    assert not vectors[1].any() and vectors[0].any()


def test_markup_terms_read_the_mathml_tree_and_stay_out_of_the_bm25_teacher() -> None:
    from eqsearch.training.structure_data import markup_terms

    mathml = (
        '<math xmlns="http://www.w3.org/1998/Math/MathML"><semantics><mrow><msup><mi>x</mi><mn>2</mn></msup>'
        '<mo>+</mo><mi>y</mi></mrow><annotation encoding="application/x-tex">x^2+y</annotation></semantics></math>'
    )
    terms = markup_terms(mathml)
    assert terms["umi:x"] == 1 and terms["umo:+"] == 1 and terms["pmsup>mi:x"] == 1 and terms["pmsup>mn:2"] == 1
    assert terms["cmsup|mo:+"] == 1 and terms["cmo:+|mi:y"] == 1 and terms["cmi:x|mn:2"] == 1
    assert not any("annotation" in t or "x^2" in t for t in terms)
    assert markup_terms("<math><mi>x</mi>") == Counter()
    features = StructureFeatures()
    plain, marked = term_data([mathml], features), term_data([mathml], features, markup=True)
    assert len(marked.digest) == len(plain.digest) + len(terms)
    assert marked.token.sum() == plain.token.sum()  # the BM25 teacher reads the same tokens
    np.testing.assert_allclose(
        Bm25Teacher.build(marked).self_scores(np.array([0])), Bm25Teacher.build(plain).self_scores(np.array([0]))
    )
    with pytest.raises(ValueError, match="a view has none"):
        term_data([mathml], features, markup=True, view_seed=1)


def test_the_alignment_loss_pulls_the_students_coordinates_onto_the_teachers_vectors() -> None:
    features = StructureFeatures(buckets=1 << 10)
    corpus = FORMULAS * 4
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(FORMULAS), 16)).astype(np.float32)[np.arange(len(corpus)) % len(FORMULAS)]
    data = prepare(corpus, features, vectors=vectors, views=False)
    config = _tiny_config(features, steps=150, views=False, bm25_weight=0.0, vector_weight=1.0, align_weight=1.0)
    model, _ = train(config, data, log=lambda _: None)
    z = encode_terms(model, data.terms, features)
    # every formula's vector comes close to its teacher vector (random ones: only the alignment teaches that)
    cos = (z * data.vectors).sum(axis=1)
    assert float(cos.mean()) > 0.7 and float(cos.min()) > 0.5, cos  # without: -0.11 on average
    with pytest.raises(ValueError, match="align_weight needs"):
        train(DistillConfig(steps=1, align_weight=1.0, views=False), prepare(corpus, features, views=False))


def test_a_composites_parts_are_weighed_so_that_the_inner_product_is_the_rankers_mix() -> None:
    from eqsearch.training.structure_distill import weigh_vector_parts

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    unit_a = a / np.linalg.norm(a, axis=1, keepdims=True)
    unit_b = b / np.linalg.norm(b, axis=1, keepdims=True)
    stored = np.concatenate([np.sqrt(0.5) * unit_a, np.sqrt(0.5) * unit_b], axis=1)  # a composite's, half and half
    weighed = weigh_vector_parts(stored, [4, 3], [0.3, 0.7])
    np.testing.assert_allclose(np.linalg.norm(weighed, axis=1), 1.0, rtol=1e-5)
    expected = 0.3 * unit_a @ unit_a.T + 0.7 * unit_b @ unit_b.T
    np.testing.assert_allclose(weighed @ weighed.T, expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="widths"):
        weigh_vector_parts(stored, [4, 4], [0.3, 0.7])


def test_the_loss_can_score_rounded_candidates_and_mapped_queries() -> None:
    torch.manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(6, 8), dim=1)
    teacher = z @ z.T
    assert abs(float(distill_loss(z, None, teacher, 0.1, 0.1, quantize_bits=8))) < 1e-3  # int8 barely moves it
    assert float(distill_loss(z, None, teacher, 0.1, 0.1, quantize_bits=2)) > 1e-3
    flip = torch.diag(torch.tensor([-1.0] * 8))
    assert float(distill_loss(z, None, teacher, 0.1, 0.1, query=lambda x: x @ flip)) > 0.01


def test_a_query_head_learns_a_second_similarity_over_the_same_stored_vectors() -> None:
    from eqsearch.training.structure_dev import head_queries

    features = StructureFeatures(buckets=1 << 10)
    corpus = FORMULAS * 4
    group = np.arange(len(FORMULAS)) % 3  # the head's teacher groups formulas of every kind together
    other = np.eye(3, dtype=np.float32)[group][np.arange(len(corpus)) % len(FORMULAS)]
    data = prepare(corpus, features, views=False, head_vectors=other)
    config = _tiny_config(features, steps=200, views=False, head_weight=1.0, alone_head_share=0.3)
    config.model = StructureBagConfig(buckets=1 << 10, width=16, hidden=32, embedding_dim=16, query_head=True)
    model, _ = train(config, data, log=lambda _: None)
    z = encode_terms(model, term_data(FORMULAS, features), features)
    head = head_queries(model, z, 1.0) @ z.T
    np.fill_diagonal(head, -np.inf)
    # each formula's nearest by the head is one of its teacher's group: what the stored cosine alone does not say
    assert (group[head.argmax(axis=1)] == group).all()
    with pytest.raises(ValueError, match="query head"):
        train(_tiny_config(features, steps=1, views=False, head_weight=1.0), data, log=lambda _: None)
