"""The FormulaEncoder: shapes, batch independence at inference, masking input, the paper's layout."""

from __future__ import annotations

import numpy as np
import torch
from eqsearch.engine.model.graph import concatenate_graphs
from eqsearch.training.batching import graph_tensors
from eqsearch.training.model import FormulaEncoder, MaskingHeads, ModelConfig

TINY = ModelConfig(n_tags=8, n_attrs=4, n_chars=16, hidden_dim=12, embedding_dim=6)


def test_encoder_shapes_and_layout() -> None:
    model = FormulaEncoder(TINY)
    assert len(model.convs) == 3
    assert sorted(model.norms) == ["0", "2"]  # batch norm before the first and third convolution
    assert model.input_layer.alpha.item() == 1.0
    assert torch.all(model.input_layer.attr.weight[0] == 0) and torch.all(model.input_layer.char.weight[0] == 0)


def test_eval_embeddings_do_not_depend_on_the_batch(make_graph) -> None:
    rng = np.random.default_rng(1)
    graphs = [make_graph(n, rng) for n in (3, 7, 5)]
    model = FormulaEncoder(TINY)
    model.train()
    model(**graph_tensors(concatenate_graphs(graphs)))  # move running statistics off their initial values
    model.eval()
    with torch.no_grad():
        together = model(**graph_tensors(concatenate_graphs(graphs)))
        alone = torch.cat([model(**graph_tensors(g)) for g in graphs])
    assert together.shape == (3, 6)
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-5)


def test_masked_nodes_lose_their_features_but_keep_positions(make_graph) -> None:
    g = make_graph(4, np.random.default_rng(2))
    model = FormulaEncoder(TINY).eval()
    t = graph_tensors(g)
    mask = torch.tensor([False, True, False, False])
    masked = model.node_states(t["tag"], t["attr"], t["char"], t["pos"], t["edge_index"], mask)
    t2 = dict(t)
    t2["tag"] = t["tag"].clone()
    t2["tag"][1] = (t["tag"][1] + 1) % TINY.n_tags
    t2["char"] = t["char"].clone()
    t2["char"][1] = (t["char"][1] + 1) % (TINY.n_chars + 1)
    masked2 = model.node_states(t2["tag"], t2["attr"], t2["char"], t2["pos"], t2["edge_index"], mask)
    torch.testing.assert_close(masked, masked2)  # the masked node's features are invisible


def test_masking_heads_have_none_classes() -> None:
    tag, attr, char = MaskingHeads(TINY)(torch.zeros(2, 12))
    assert tag.shape == (2, 8) and attr.shape == (2, 5) and char.shape == (2, 17)
