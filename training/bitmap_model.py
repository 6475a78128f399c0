"""The ECML'19 equation encoder: a CNN over 333x32 bitmaps of rendered formulas (Pfahler, Schill & Morik 2019, §4.1).

Two architectures, as the paper describes them:

- ``small``: three 3x3 convolutions with 32 channels, each followed by 2x2 max pooling, then one linear layer to
  d = 64 (45,504 parameters, the paper's count), then (ours) a batch norm of the 64 outputs (128 more): without it
  the vectors collapsed onto one direction within 40 steps (`swapped_triplet_loss`); in eval mode it is a fixed
  affine map.
- ``large``: six 3x3 convolutions with 64 channels, 2x2 max pooling after every other one, then two linear layers
  with batch normalisation between them (255,040 parameters without the batch norm's 128, the paper's count).

The paper does not say how the last feature map becomes the linear layer's input; its parameter counts fix the
width (416 = 32 x 13 for the small model, 1024 = 64 x 16 for the large), so a max pool to 1 x 13 (small) or 2 x 8
(large) cells is used here (`CellMaxPool`: torch's adaptive max pooling, written with slices because the ONNX
exporter has no adaptive max pool), which also makes the encoder independent of the bitmap size. The output is
normalised to unit length, f(x) / (||f(x)|| + 1e-5) (§4.2), so that the margin of the triplet loss means something.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import Tensor, nn

ARCHITECTURES = ("small", "large")
#: The paper's ε of the output normalisation (§4.3).
NORM_EPSILON = 1e-5


@dataclass(frozen=True)
class BitmapCNNConfig:
    """The encoder's shape.

    Args:
        architecture: ``small`` or ``large`` (§4.1).
        embedding_dim: d [64].
        height: bitmap rows [32].
        width: bitmap columns [333].
    """

    architecture: str = "small"
    embedding_dim: int = 64
    height: int = 32
    width: int = 333

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {self.architecture!r}")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class CellMaxPool(nn.Module):
    """The maximum of each cell of a ``rows x columns`` grid laid over the feature map: the cells of
    ``nn.AdaptiveMaxPool2d``, with the same values, in slices of the (fixed) map size so that it exports to ONNX.

    Shapes:
        x: ``[B, C, H, W]``; returns ``[B, C, rows, columns]``.
    """

    def __init__(self, rows: int, columns: int) -> None:
        super().__init__()
        self.rows, self.columns = rows, columns

    def forward(self, x: Tensor) -> Tensor:
        h, w = int(x.shape[-2]), int(x.shape[-1])
        out = []
        for i in range(self.rows):
            band = x[..., (i * h) // self.rows : -(-((i + 1) * h) // self.rows), :].amax(dim=-2)
            out.append(
                torch.stack(
                    [
                        band[..., (j * w) // self.columns : -(-((j + 1) * w) // self.columns)].amax(dim=-1)
                        for j in range(self.columns)
                    ],
                    dim=-1,
                )
            )
        return torch.stack(out, dim=-2)


def _conv(cin: int, cout: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(cin, cout, kernel_size=3, padding=1), nn.ReLU())


class BitmapCNN(nn.Module):
    """f(x): a formula's bitmap -> a unit-length d-vector (ECML'19 §4.1-4.2).

    Args:
        config: the architecture and sizes.

    Shapes:
        bitmaps: ``[B, height, width]`` uint8 ink (0 = paper, 255 = full ink) or float in [0, 1];
        returns ``[B, embedding_dim]`` float32 of unit length.
    """

    def __init__(self, config: BitmapCNNConfig | None = None) -> None:
        super().__init__()
        self.config = config or BitmapCNNConfig()
        d = self.config.embedding_dim
        if self.config.architecture == "small":
            self.features = nn.Sequential(
                _conv(1, 32), nn.MaxPool2d(2), _conv(32, 32), nn.MaxPool2d(2), _conv(32, 32), nn.MaxPool2d(2)
            )
            self.pool = CellMaxPool(1, 13)
            # the batch norm before the normalisation is ours (see the module docstring): it keeps the vectors from
            # collapsing onto one direction early in training
            self.head = nn.Sequential(nn.Linear(32 * 13, d), nn.BatchNorm1d(d))
        else:
            self.features = nn.Sequential(
                _conv(1, 64), _conv(64, 64), nn.MaxPool2d(2),
                _conv(64, 64), _conv(64, 64), nn.MaxPool2d(2),
                _conv(64, 64), _conv(64, 64), nn.MaxPool2d(2),
            )  # fmt: skip
            self.pool = CellMaxPool(2, 8)
            self.head = nn.Sequential(nn.Linear(64 * 16, d), nn.BatchNorm1d(d), nn.ReLU(), nn.Linear(d, d))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The paper's initialisation (§4.3): uniform in ±k^-1/2 (k weights per filter) and ±m^-1/2 (m inputs)."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d | nn.Linear):
                fan_in = module.weight[0].numel()
                bound = fan_in**-0.5
                nn.init.uniform_(module.weight, -bound, bound)
                if module.bias is not None:
                    nn.init.uniform_(module.bias, -bound, bound)

    def forward(self, bitmaps: Tensor) -> Tensor:
        x = bitmaps.float()
        if bitmaps.dtype == torch.uint8:
            x = x / 255.0
        x = self.features(x.unsqueeze(1))
        f = self.head(self.pool(x).flatten(1))
        return f / (f.norm(dim=1, keepdim=True) + NORM_EPSILON)


def swapped_triplet_loss(
    anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, squared: bool = False
) -> Tensor:
    """ECML'19 eq. 3: the triplet margin loss with the anchor/positive swap of Balntas et al.,
    ``max(0, Δ - <a, p> + max(<a, n>, <p, n>))``, averaged; squared when ``squared`` (the paper's choice, §4.2).

    Squared, the loss of unit vectors that all coincide is exactly Δ² = 1, and any spread that does not yet order
    the triplets costs more (the square adds the variance of the margins): on 2 CPU cores' worth of steps the CNN
    collapses there (mean cosine of random pairs 0.998 after 40 steps). The plain hinge has no such pull, so it is
    the default here.

    Shapes:
        anchor, positive, negative: ``[B, D]``; returns a scalar.
    """
    s_pos = (anchor * positive).sum(1)
    s_neg = torch.maximum((anchor * negative).sum(1), (positive * negative).sum(1))
    hinge = torch.relu(margin - s_pos + s_neg)
    return (hinge.pow(2) if squared else hinge).mean()
