"""Identifier-permutation augmentation (KDD'20 §4.2, "Data-Augmentation").

Renaming symbols rarely changes what an equation means, so each equation's ``<mi>`` characters go through a random
permutation of the character vocabulary built from Poisson(32) random transpositions of the identity.
"""

from __future__ import annotations

import numpy as np
from eqsearch.engine.model.graph import GraphArrays


def random_character_permutation(n_chars: int, mean_swaps: float, rng: np.random.Generator) -> np.ndarray:
    """A permutation of the character indices ``1..n_chars`` (0 = "no character" stays fixed).

    Starting from the identity, exchanges two random characters ``Poisson(mean_swaps)`` times.

    Returns:
        int64 array of length ``n_chars + 1`` mapping an old character index to a new one.
    """
    permutation = np.arange(n_chars + 1, dtype=np.int64)
    swaps = rng.poisson(mean_swaps)
    if swaps and n_chars > 1:
        pairs = rng.integers(1, n_chars + 1, size=(swaps, 2))
        for a, b in pairs:
            permutation[a], permutation[b] = permutation[b], permutation[a]
    return permutation


def permute_identifiers(
    graph: GraphArrays, mi_tag: int, n_chars: int, rng: np.random.Generator, mean_swaps: float = 32.0
) -> GraphArrays:
    """Apply one random character permutation to the ``<mi>`` nodes of an equation; other nodes keep theirs.

    Args:
        graph: one equation.
        mi_tag: the tag index of ``mi`` in the vocabulary.
        n_chars: character vocabulary size.
        rng: random source.
        mean_swaps: expected number of transpositions (32 in the paper).
    """
    is_identifier = graph.tag == mi_tag
    if not is_identifier.any():
        return graph
    permutation = random_character_permutation(n_chars, mean_swaps, rng)
    char = np.where(is_identifier, permutation[graph.char], graph.char)
    return GraphArrays(graph.tag, graph.attr, char, graph.pos, graph.edge_index, graph.graph, graph.num_graphs)
