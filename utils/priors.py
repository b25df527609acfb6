"""Chapter 1's data-versus-prior experiment: a convolution, a tiny
Transformer, a count model, and a deterministic train/evaluate helper."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .checks import (
    check_at_most,
    check_heads,
    check_ids,
    check_int,
    check_number,
    check_tensor,
)
from .masks import band_mask
from .positional import sinusoidal_encoding
from .layers import evaluating
from .training import adam, threads, train
from .toy_tasks import symbol_counts

__all__ = [
    "MotifCNN",
    "TinyTransformer",
    "CountClassifier",
    "count_parameters",
    "train_classifier",
    "accuracy",
    "train_and_evaluate",
]


class MotifCNN(nn.Module):
    """Embedding -> Conv1d -> ReLU -> max -> Linear: ``(B, L) -> (B, C)``."""

    def __init__(
        self,
        vocab_size: int = 4,
        embed_dim: int = 8,
        channels: int = 24,
        kernel_size: int = 3,
        num_classes: int = 2,
    ):
        super().__init__()
        for name, v in (
            ("vocab_size", vocab_size),
            ("embed_dim", embed_dim),
            ("channels", channels),
            ("kernel_size", kernel_size),
            ("num_classes", num_classes),
        ):
            check_int(v, name, 1)
        self.vocab_size, self.kernel_size = vocab_size, kernel_size
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.conv = nn.Conv1d(embed_dim, channels, kernel_size)
        self.head = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_ids(x, "x", self.vocab_size, ndim=2)
        check_int(x.size(1), "x's length (>= kernel_size)", self.kernel_size)
        h = self.embed(x).transpose(1, 2)  # (B, E, L): channels first
        h = torch.relu(self.conv(h))  # (B, channels, L - k + 1)
        return self.head(h.amax(dim=-1))  # (B, num_classes)


class TinyTransformer(nn.Module):
    """Embedding (+ sinusoids) -> encoder -> max -> Linear (no locality)."""

    def __init__(
        self,
        vocab_size: int = 4,
        d_model: int = 16,
        num_heads: int = 2,
        d_ff: int = 32,
        num_layers: int = 1,
        num_classes: int = 2,
        max_len: int = 256,
        use_positions: bool = True,
        window: int | None = None,
    ):
        super().__init__()
        for name, v in (
            ("vocab_size", vocab_size),
            ("d_model", d_model),
            ("num_heads", num_heads),
            ("d_ff", d_ff),
            ("num_layers", num_layers),
            ("num_classes", num_classes),
            ("max_len", max_len),
        ):
            check_int(v, name, 1)
        check_heads(d_model, num_heads)
        if window is not None:
            check_int(window, "window", 0)
        self.vocab_size = vocab_size
        self.use_positions, self.window = use_positions, window
        self.max_len = max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        # a fixed sinusoidal table: no parameters spent on positions
        pe = sinusoidal_encoding(max_len, d_model + d_model % 2)[:, :d_model]
        self.register_buffer("pe", pe, persistent=False)
        layer = nn.TransformerEncoderLayer(
            d_model, num_heads, d_ff, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(
            layer, num_layers, enable_nested_tensor=False
        )
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_ids(x, "x", self.vocab_size, ndim=2)
        why = f"max_len={self.max_len}"
        check_at_most(x.size(1), "x's length", self.max_len, why)
        h = self.embed(x)  # (B, L, d_model)
        if self.use_positions:
            h = h + self.pe[: x.size(1)]
        mask = None
        if self.window is not None:
            # nn.TransformerEncoder's bool mask means True = may NOT attend.
            mask = ~band_mask(x.size(1), self.window, device=x.device)
        h = self.encoder(h, mask=mask)  # (B, L, d_model)
        # as in MotifCNN: only how positions mix differs (conv vs attention)
        return self.head(h.amax(dim=1))  # (B, num_classes)


class CountClassifier(nn.Module):
    """Logistic regression on symbol counts: ``(B, L) -> (B, C)``."""

    def __init__(self, vocab_size: int = 4, num_classes: int = 2):
        super().__init__()
        check_int(vocab_size, "vocab_size", 1)
        check_int(num_classes, "num_classes", 1)
        self.vocab_size = vocab_size
        self.head = nn.Linear(vocab_size, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(symbol_counts(x, self.vocab_size))


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _check_xy(x: torch.Tensor, y: torch.Tensor) -> None:
    check_ids(x, "x", ndim=2)
    check_ids(y, "y", ndim=1)
    check_tensor(y, "y must have one label per row of x:", shape=x.shape[:1])


def train_classifier(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int = 200,
    lr: float = 1e-2,
    batch_size: int | None = None,
    seed: int = 0,
) -> list[float]:
    """Adam on cross-entropy for ``steps`` -> the loss per step."""
    _check_xy(x, y)
    check_int(steps, "steps", 1)
    check_number(lr, "lr", 0, min_inclusive=False)
    if batch_size is not None:
        check_int(batch_size, "batch_size", 1)
    g = torch.Generator().manual_seed(seed)

    def batches():  # the full batch, or rows drawn with g
        while True:
            if batch_size is None or batch_size >= x.size(0):
                yield x, y
            else:
                idx = torch.randint(0, x.size(0), (batch_size,), generator=g)
                yield x[idx], y[idx]

    def loss_fn(model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    opt = adam(model.parameters(), lr=lr)
    was_training = model.training
    try:
        return train(model, opt, batches(), loss_fn, steps, progress=False)
    finally:
        model.train(was_training)


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Share of rows whose arg-max logit is the label (eval, no grad)."""
    _check_xy(x, y)
    with evaluating(model):
        pred = model(x).argmax(dim=-1)
    return (pred == y).float().mean().item()


def train_and_evaluate(
    make_model: Callable[[], nn.Module],
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
    steps: int = 200,
    lr: float = 1e-2,
    batch_size: int | None = None,
    seed: int = 0,
    num_threads: int | None = 1,
) -> float:
    """Seed, build, train -> test accuracy, the same on any machine
    (``num_threads``, default 1, fixes the order of float sums)."""
    # threads() checks num_threads
    fixed = nullcontext() if num_threads is None else threads(num_threads)
    with fixed:
        torch.manual_seed(seed)  # fixes the initial weights
        model = make_model()
        train_classifier(
            model,
            x_train,
            y_train,
            steps=steps,
            lr=lr,
            batch_size=batch_size,
            seed=seed,
        )
        return accuracy(model, x_test, y_test)
