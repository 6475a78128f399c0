"""The registered formula rankings: their names, their checks, and how each weighs the composite's parts."""

from __future__ import annotations

import numpy as np
import pytest
from eqsearch.engine.model.bundle import default_bundle_path


def test_rankers_are_registered_and_checked():
    from eqsearch.engine.search import DEFAULT_RANKER, RANKERS, FormulaRanking, get_ranker

    assert DEFAULT_RANKER in RANKERS and get_ranker("embedding").channels == ("embedding",)
    with pytest.raises(ValueError, match="unknown ranker 'bm25'; one of: embedding"):
        get_ranker("bm25")
    with pytest.raises(ValueError, match="give the structure or the embedding a weight"):
        FormulaRanking("none", "nothing")
    with pytest.raises(ValueError, match="the rerank rescores the structural list"):
        FormulaRanking("odd", "rerank without structure", embedding=1.0, rerank_window=100, rerank_weight=1.0)
    with pytest.raises(ValueError, match="part weights are 0 or more, not all 0"):
        FormulaRanking("odd", "no part", embedding=1.0, embedding_parts=(("graph", 0.0), ("structure", 0.0)))


def test_each_ranker_weighs_the_composites_parts_in_its_query_vector():
    """The shipped encoder is a composite: the default's kNN asks for the network's part alone (the structure
    already speaks in its structural list), the embedding ranker's for the structure-bag part 0.7 and the network
    0.3; an encoder that is no composite takes the vector as it is."""
    from eqsearch.engine.model.encoder import load_encoder
    from eqsearch.engine.search import DEFAULT_RANKER, get_ranker
    from eqsearch.engine.search.query_formula import QueryFormulas, weigh_parts

    encoder = load_encoder()
    mathml = "<math><mrow><msup><mi>x</mi><mn>2</mn></msup><mo>+</mo><mn>1</mn></mrow></math>"
    stored = encoder.encode([mathml])[0]
    graph, structure = stored[:64], stored[64:]  # each sqrt(0.5) times its part's unit vector

    def query_vector(ranker: str, coder: object = encoder) -> np.ndarray:
        # normalised, not rounded (dot product): the weighing compared to the float parts
        formulas = QueryFormulas(
            None, coder, get_ranker(ranker), node_encoder=None, similarity=lambda: "dot_product", size=0
        )
        return formulas.encode(mathml)

    default = query_vector(DEFAULT_RANKER)
    assert not default[64:].any()
    np.testing.assert_allclose(default[:64], graph / np.linalg.norm(graph), atol=1e-6)
    alone = query_vector("embedding")
    expected = np.concatenate([0.3 / 0.5 * graph, 0.7 / 0.5 * structure])
    np.testing.assert_allclose(alone, expected / np.linalg.norm(expected), atol=1e-6)
    network = load_encoder(default_bundle_path())
    assert np.allclose(query_vector("embedding", network), query_vector(DEFAULT_RANKER, network))
    # what 'equations like this' sends: a stored vector weighed as the embedding ranker weighs a query
    parts = get_ranker("embedding").embedding_parts
    np.testing.assert_allclose(weigh_parts(encoder, stored, parts), np.concatenate([0.6 * graph, 1.4 * structure]))
    assert np.array_equal(weigh_parts(encoder, stored[:64], parts), stored[:64])  # another width: as it is
    assert np.array_equal(weigh_parts(network, stored[:64], parts), stored[:64])  # no composite: as it is
