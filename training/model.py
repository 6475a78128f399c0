"""The KDD'20 graph-convolutional formula encoder (§4.1) and the heads of its masking task (§4.2)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from eqsearch.training.layers import GraphConvolution, NodeInputLayer, SoftNormalization, mean_pool
from torch import Tensor, nn


@dataclass(frozen=True)
class ModelConfig:
    """Dimensions of the encoder.

    Args:
        n_tags: tag vocabulary size (32 in the paper).
        n_attrs: attribute vocabulary size (32).
        n_chars: character vocabulary size (192).
        hidden_dim: width of the first layer and the graph convolutions (512).
        embedding_dim: width of the equation embedding (64).
        n_convs: number of graph convolutions after the first layer (3).
        norm_momentum: momentum of the running norm statistics of the soft normalisation.
    """

    n_tags: int = 32
    n_attrs: int = 32
    n_chars: int = 192
    hidden_dim: int = 512
    embedding_dim: int = 64
    n_convs: int = 3
    norm_momentum: float = 0.01

    def __post_init__(self) -> None:
        if self.hidden_dim % 2:
            raise ValueError(f"hidden_dim must be even (sinusoidal positions), got {self.hidden_dim}")
        if min(self.n_tags, self.n_attrs, self.n_chars, self.hidden_dim, self.embedding_dim, self.n_convs) < 1:
            raise ValueError(f"every dimension must be positive: {self}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class FormulaEncoder(nn.Module):
    """Embeds a batch of equation graphs into ``embedding_dim``-d vectors (KDD'20 §4.1).

    First layer (node features + α·sinusoidal positions, summed over N(i) ∪ {i}, ReLU), batch normalisation, then
    ``n_convs`` graph convolutions with batch normalisation before the first and the third, mean pooling, a linear
    layer and the soft normalisation.

    Args:
        config: the dimensions.

    Shapes:
        tag, attr, char, pos, graph: ``[N]`` int64; edge_index: ``[2, E]`` int64 (parent -> child);
        graph_sizes: ``[G]`` int64 (nodes per equation); node_mask: ``[N]`` bool or None.
        forward returns ``[G, embedding_dim]``; node_states returns ``[N, hidden_dim]`` (the paper's φ(x)).
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        d = config.hidden_dim
        self.input_layer = NodeInputLayer(config.n_tags, config.n_attrs, config.n_chars, d)
        self.convs = nn.ModuleList(GraphConvolution(d, d) for _ in range(config.n_convs))
        # "We apply batch-normalization before the first and third graph convolution layer."
        self.norms = nn.ModuleDict({str(i): nn.BatchNorm1d(d) for i in (0, 2) if i < config.n_convs})
        self.projection = nn.Linear(d, config.embedding_dim)
        self.soft_norm = SoftNormalization(momentum=config.norm_momentum)

    def node_states(
        self,
        tag: Tensor,
        attr: Tensor,
        char: Tensor,
        pos: Tensor,
        edge_index: Tensor,
        node_mask: Tensor | None = None,
    ) -> Tensor:
        """The output φ(x) of the last graph convolution, one row per node."""
        x = self.input_layer(tag, attr, char, pos, edge_index, node_mask)
        for i, conv in enumerate(self.convs):
            if str(i) in self.norms:
                x = self.norms[str(i)](x)
            x = conv(x, edge_index)
        return x

    def embed(self, x: Tensor, graph: Tensor, graph_sizes: Tensor) -> Tensor:
        """Pool node states φ(x) into normalised equation embedding φ̄(x)."""
        return self.soft_norm(self.projection(mean_pool(x, graph, graph_sizes)))

    def forward(
        self,
        tag: Tensor,
        attr: Tensor,
        char: Tensor,
        pos: Tensor,
        edge_index: Tensor,
        graph: Tensor,
        graph_sizes: Tensor,
    ) -> Tensor:
        return self.embed(self.node_states(tag, attr, char, pos, edge_index), graph, graph_sizes)


class MaskingHeads(nn.Module):
    """The three linear classifiers of the masking task (KDD'20 §4.2): tag (n_tags), attribute (n_attrs + 1 with
    "none") and character (n_chars + 1 with "none").

    Shapes:
        x: ``[M, hidden_dim]``; returns three logit tensors ``[M, n_tags]``, ``[M, n_attrs + 1]``, ``[M, n_chars + 1]``.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        d = config.hidden_dim
        self.tag = nn.Linear(d, config.n_tags)
        self.attr = nn.Linear(d, config.n_attrs + 1)
        self.char = nn.Linear(d, config.n_chars + 1)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        return self.tag(x), self.attr(x), self.char(x)
