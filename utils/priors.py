"""The data-versus-prior experiment of chapter 1: a motif-detection task, two small classifiers
with the same parameter budget but different priors, and a deterministic train/evaluate helper.

The task: a random sequence of ``length`` symbols from a ``vocab_size``-letter alphabet is
labelled 1 when it contains the motif (default ``0 1 2 3``, like ``ACGT`` in DNA) anywhere, else 0.
The motif uses each symbol once, so symbol counts say nothing about the label: a model must
notice four neighbouring symbols in the right order. That is local structure, exactly what a
convolution assumes and what self-attention has to learn from data.
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .checks import check_int as _check_int
from .masks import band_mask
from .positional import sinusoidal_encoding

__all__ = [
    "DEFAULT_MOTIF", "contains_motif", "make_motif_data", "MotifCNN", "TinyTransformer",
    "count_parameters", "train_classifier", "accuracy", "train_and_evaluate",
]

DEFAULT_MOTIF: tuple[int, ...] = (0, 1, 2, 3)




def _check_ids(x: torch.Tensor, name: str = "x") -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.dtype != torch.long:
        raise ValueError(f"{name} must be a long tensor of shape (batch, length), "
                         f"got {getattr(x, 'dtype', type(x).__name__)} {tuple(getattr(x, 'shape', ()))}")


def contains_motif(x: torch.Tensor, motif: Sequence[int] = DEFAULT_MOTIF) -> torch.Tensor:
    """True for each row of ``x (N, L)`` that contains ``motif`` as a contiguous run -> ``(N,)`` bool."""
    _check_ids(x)
    m = torch.as_tensor(list(motif), dtype=torch.long)
    if m.dim() != 1 or m.numel() == 0:
        raise ValueError(f"motif must be a non-empty sequence of ints, got {motif!r}")
    if m.numel() > x.size(1):
        raise ValueError(f"motif of length {m.numel()} is longer than the sequences (length {x.size(1)})")
    windows = x.unfold(1, m.numel(), 1)                 # (N, L - k + 1, k): every run of k symbols
    return (windows == m).all(dim=-1).any(dim=-1)      # (N,)


def make_motif_data(n: int, length: int = 24, vocab_size: int = 4,
                    motif: Sequence[int] = DEFAULT_MOTIF, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` labelled sequences, half with the motif planted at a random place, half without it.

    Returns ``x (n, length)`` long symbols in ``[0, vocab_size)`` and ``y (n,)`` long labels
    (1 = contains the motif), shuffled. Deterministic for a given ``seed`` (own generator:
    the global torch seed is not touched).
    """
    _check_int(n, "n", 2)
    _check_int(vocab_size, "vocab_size", 2)
    motif = tuple(int(s) for s in motif)
    if not motif or any(s < 0 or s >= vocab_size for s in motif):
        raise ValueError(f"motif must be non-empty with symbols in [0, vocab_size={vocab_size}), got {motif!r}")
    _check_int(length, "length", len(motif) + 1)
    g = torch.Generator().manual_seed(seed)
    n_pos = n // 2
    n_neg = n - n_pos

    # Negatives: draw random sequences and keep only those without the motif (rejection).
    negatives = []
    while sum(len(b) for b in negatives) < n_neg:
        batch = torch.randint(0, vocab_size, (2 * n_neg + 16, length), generator=g)
        negatives.append(batch[~contains_motif(batch, motif)])
    neg = torch.cat(negatives)[:n_neg]

    # Positives: random sequences with the motif written over a random window.
    pos = torch.randint(0, vocab_size, (n_pos, length), generator=g)
    starts = torch.randint(0, length - len(motif) + 1, (n_pos,), generator=g)
    cols = starts[:, None] + torch.arange(len(motif))                      # (n_pos, k)
    pos.scatter_(1, cols, torch.tensor(motif).expand(n_pos, -1).contiguous())

    x = torch.cat([pos, neg])
    y = torch.cat([torch.ones(n_pos, dtype=torch.long), torch.zeros(n_neg, dtype=torch.long)])
    order = torch.randperm(n, generator=g)
    return x[order], y[order]


class MotifCNN(nn.Module):
    """Embedding -> Conv1d (width ``kernel_size``) -> ReLU -> max over positions -> Linear.

    Its priors: locality (each filter sees ``kernel_size`` neighbours) and translation
    equivariance (the same filter everywhere); the max makes the answer position-free.
    ``x (B, L)`` long -> logits ``(B, num_classes)``.
    """

    def __init__(self, vocab_size: int = 4, embed_dim: int = 8, channels: int = 24,
                 kernel_size: int = 4, num_classes: int = 2):
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("embed_dim", embed_dim), ("channels", channels),
                        ("kernel_size", kernel_size), ("num_classes", num_classes)):
            _check_int(v, name, 1)
        self.kernel_size = kernel_size
        self.embed = nn.Embedding(vocab_size, embed_dim)
        self.conv = nn.Conv1d(embed_dim, channels, kernel_size)
        self.head = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_ids(x)
        if x.size(1) < self.kernel_size:
            raise ValueError(f"x has length {x.size(1)}, shorter than kernel_size={self.kernel_size}")
        h = self.embed(x).transpose(1, 2)             # (B, embed_dim, L): Conv1d wants channels first
        h = torch.relu(self.conv(h))                  # (B, channels, L - k + 1)
        return self.head(h.amax(dim=-1))              # (B, num_classes)


class TinyTransformer(nn.Module):
    """Embedding (+ sinusoidal positions) -> ``nn.TransformerEncoder`` -> max over positions -> Linear.

    No locality prior: every position may attend to every other one, unless ``window`` is given,
    which injects one (attention only within ``window`` positions). ``use_positions=False``
    removes the position information too. ``x (B, L)`` long -> logits ``(B, num_classes)``.
    """

    def __init__(self, vocab_size: int = 4, d_model: int = 16, num_heads: int = 2, d_ff: int = 32,
                 num_layers: int = 1, num_classes: int = 2, max_len: int = 256,
                 use_positions: bool = True, window: int | None = None):
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("d_model", d_model), ("num_heads", num_heads),
                        ("d_ff", d_ff), ("num_layers", num_layers), ("num_classes", num_classes),
                        ("max_len", max_len)):
            _check_int(v, name, 1)
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        if window is not None:
            _check_int(window, "window", 0)
        self.use_positions, self.window, self.max_len = use_positions, window, max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        # Fixed sinusoidal table (no parameters), so both models spend their budget on learning.
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model + d_model % 2)[:, :d_model],
                             persistent=False)
        layer = nn.TransformerEncoderLayer(d_model, num_heads, d_ff, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_ids(x)
        if x.size(1) > self.max_len:
            raise ValueError(f"x has length {x.size(1)}, longer than max_len={self.max_len}")
        h = self.embed(x)                                         # (B, L, d_model)
        if self.use_positions:
            h = h + self.pe[: x.size(1)]
        mask = None
        if self.window is not None:
            # nn.TransformerEncoder's boolean mask means True = may NOT attend: negate ours.
            mask = ~band_mask(x.size(1), self.window, device=x.device)
        h = self.encoder(h, mask=mask)                            # (B, L, d_model)
        # Max over positions, the same read-out as MotifCNN: the two models differ only in how
        # they mix positions (a local filter there, attention here).
        return self.head(h.amax(dim=1))                           # (B, num_classes)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _check_xy(x: torch.Tensor, y: torch.Tensor) -> None:
    _check_ids(x)
    if not isinstance(y, torch.Tensor) or y.dim() != 1 or y.size(0) != x.size(0):
        raise ValueError(f"y must be a 1-D tensor with one label per row of x {tuple(x.shape)}, "
                         f"got {tuple(getattr(y, 'shape', ()))}")


def train_classifier(model: nn.Module, x: torch.Tensor, y: torch.Tensor, steps: int = 200,
                     lr: float = 1e-2, batch_size: int | None = None, seed: int = 0) -> list[float]:
    """Adam on cross-entropy for ``steps`` updates; full batch unless ``batch_size`` is given.

    Mini-batches are drawn with a generator seeded by ``seed``, so a run is reproducible.
    Returns the training loss of every step.
    """
    _check_xy(x, y)
    _check_int(steps, "steps", 1)
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    if batch_size is not None:
        _check_int(batch_size, "batch_size", 1)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        if batch_size is None or batch_size >= x.size(0):
            xb, yb = x, y
        else:
            idx = torch.randint(0, x.size(0), (batch_size,), generator=g)
            xb, yb = x[idx], y[idx]
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of rows whose arg-max logit equals the label."""
    _check_xy(x, y)
    model.eval()
    return (model(x).argmax(dim=-1) == y).float().mean().item()


def train_and_evaluate(make_model: Callable[[], nn.Module], x_train: torch.Tensor, y_train: torch.Tensor,
                       x_test: torch.Tensor, y_test: torch.Tensor, steps: int = 200, lr: float = 1e-2,
                       batch_size: int | None = None, seed: int = 0, num_threads: int | None = 1) -> float:
    """Seed, build a fresh model, train it, return its test accuracy (the same on every rerun).

    ``num_threads`` (default 1) is set for the run and restored afterwards: these models are
    so small that extra threads only add overhead, and a fixed thread count keeps float sums
    in the same order, so the result does not depend on how many cores the machine has.
    """
    if num_threads is not None:
        _check_int(num_threads, "num_threads", 1)
    previous = torch.get_num_threads()
    try:
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        torch.manual_seed(seed)  # fixes the initial weights
        model = make_model()
        train_classifier(model, x_train, y_train, steps=steps, lr=lr, batch_size=batch_size, seed=seed)
        return accuracy(model, x_test, y_test)
    finally:
        torch.set_num_threads(previous)
