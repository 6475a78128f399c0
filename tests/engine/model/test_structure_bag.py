"""The structure-bag encoder's runtime side: terms and their hash slots, the manifest kind, serving without torch."""

from __future__ import annotations

import numpy as np
import pytest
from eqsearch.engine.model.bundle import ENCODER_KINDS, KIND_FILES, BundleError
from eqsearch.engine.model.encoder import ENCODER_LOADERS
from eqsearch.engine.model.structure import formula_structure
from eqsearch.engine.model.structure_bag import (
    FEATURES_VERSION,
    KIND,
    STRUCTURE_BAG_INPUTS,
    StructureFeatures,
    featurize_structure_bag,
    hash_term,
    structure_terms,
    term_digest,
    term_features,
)

SQUARES = "<math><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo><msup><mi>y</mi><mn>2</mn></msup></math>"


def test_the_kind_is_registered_through_the_manifest_schema() -> None:
    assert ENCODER_KINDS[KIND] == STRUCTURE_BAG_INPUTS
    assert KIND_FILES[KIND] == ("model.onnx",)
    assert KIND in ENCODER_LOADERS


def test_terms_are_the_structural_tokens_and_spans_with_counts() -> None:
    structure = formula_structure(SQUARES)
    terms = structure_terms(structure)
    assert terms["tV:x"] == 1 and terms["tN:2"] == 2  # the superscript 2 twice
    assert sum(1 for t in terms if t.startswith("s")) == len(structure.spans)
    assert not any(t.startswith("s") for t in structure_terms(structure, spans=False))


def test_slots_are_the_digest_halves_and_repeats_weigh_one_plus_log() -> None:
    features = StructureFeatures(buckets=1 << 16, hashes=2)
    digest = term_digest("tV:x")
    assert hash_term("tV:x", 1 << 16, 2) == [(digest & 0xFFFFFFFF) % 65536, (digest >> 32) % 65536]
    ids, weights = term_features({"tV:x": 1, "tN:2": 3}, features)
    assert ids.tolist()[:2] == hash_term("tV:x", 1 << 16, 2)
    np.testing.assert_allclose(weights, [1, 1, 1 + np.log(3), 1 + np.log(3)], rtol=1e-6)


def test_a_batch_is_flat_with_one_graph_index_per_slot() -> None:
    features = StructureFeatures()
    batch = featurize_structure_bag([SQUARES, "<math><mi>x</mi></math>", "not mathml"], features)
    assert batch.num_graphs == 3
    assert batch.graph_sizes[2] == 0  # a formula that does not parse has no terms (a zero bag)
    assert batch.ids.shape == batch.weights.shape == batch.graph.shape == (int(batch.graph_sizes.sum()),)
    assert np.array_equal(np.bincount(batch.graph, minlength=3), batch.graph_sizes)
    assert batch.ids.max() < features.buckets and batch.ids.dtype == np.int64


def test_features_of_another_version_are_refused() -> None:
    good = StructureFeatures().to_json()
    assert StructureFeatures.from_json(good) == StructureFeatures()
    with pytest.raises(BundleError, match="version"):
        StructureFeatures.from_json({**good, "version": FEATURES_VERSION + 1})
    with pytest.raises(ValueError):
        StructureFeatures(hashes=3)
