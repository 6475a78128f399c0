"""The bag-of-words baseline of KDD'20 §6.3: the sum of the one-hot node features of an equation, compared by cosine.

With categorical features the one-hot vector of a node is ``[tag one-hot | attribute one-hot | character one-hot]``
(``n_tags + n_attrs + n_chars`` slots; "no attribute" / "no character" is an all-zero segment), so the sum over the
nodes is three histograms side by side.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from eqsearch.engine.model.graph import GraphArrays


def bag_of_words(graphs: Sequence[GraphArrays], n_tags: int, n_attrs: int, n_chars: int) -> np.ndarray:
    """One ``n_tags + n_attrs + n_chars`` count vector per equation.

    Shapes:
        returns ``[len(graphs), n_tags + n_attrs + n_chars]`` float32.
    """
    width = n_tags + n_attrs + n_chars
    out = np.zeros((len(graphs), width), dtype=np.float32)
    for i, g in enumerate(graphs):
        row = out[i]
        np.add.at(row, g.tag, 1.0)
        attr = g.attr[g.attr > 0]
        np.add.at(row, n_tags + attr - 1, 1.0)
        char = g.char[g.char > 0]
        np.add.at(row, n_tags + n_attrs + char - 1, 1.0)
    return out
