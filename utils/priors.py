"""The data-versus-prior experiment of chapter 1: a motif-detection task,
small classifiers with different priors, and a deterministic train/evaluate
helper.

The task: a sequence of ``length`` symbols from a ``vocab_size``-letter
alphabet is labelled 1 when it contains the motif (default ``0 1 2``) as a
run of neighbouring symbols anywhere, else 0. Positives get the motif written
at a random place. By default (``negatives="shuffled"``) every negative gets
the same symbols written at a random place too, only in another order
(``2 0 1``, say), so both classes carry the motif's symbols and symbol
counts say next to nothing about the label: a model must notice the symbols
*in order* and *next to each other*. That is local structure, what a
convolution assumes and what self-attention has to learn from data.
``negatives="random"`` gives the naive task (negatives are plain random
sequences without the motif), where counts do leak the label.

The second task, ``make_ends_data``, has long-range structure instead: the
label says whether the first and the last symbol are equal. No window of a
few neighbours sees both ends, so the convolution's locality prior is wrong
for it, while attention relates any two positions in one step.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .checks import check_ids, check_int
from .masks import band_mask
from .positional import sinusoidal_encoding
from .runtime import evaluating, threads

__all__ = [
    "DEFAULT_MOTIF",
    "contains_motif",
    "make_motif_data",
    "make_ends_data",
    "symbol_counts",
    "MotifCNN",
    "TinyTransformer",
    "CountClassifier",
    "count_parameters",
    "train_classifier",
    "accuracy",
    "train_and_evaluate",
]

DEFAULT_MOTIF: tuple[int, ...] = (0, 1, 2)


def contains_motif(
    x: torch.Tensor, motif: Sequence[int] = DEFAULT_MOTIF
) -> torch.Tensor:
    """True for each row of ``x (N, L)`` that contains ``motif`` as a
    contiguous run -> ``(N,)`` bool."""
    check_ids(x, "x", ndim=2)
    m = torch.as_tensor(list(motif), dtype=torch.long)
    if m.dim() != 1 or m.numel() == 0:
        raise ValueError(
            f"motif must be a non-empty sequence of ints, got {motif!r}"
        )
    if m.numel() > x.size(1):
        raise ValueError(
            f"motif of length {m.numel()} is longer than the sequences "
            f"(length {x.size(1)})"
        )
    windows = x.unfold(1, m.numel(), 1)  # (N, L - k + 1, k): every k-run
    return (windows == m).all(dim=-1).any(dim=-1)  # (N,)


def _plant(
    rows: torch.Tensor, runs: torch.Tensor, g: torch.Generator
) -> torch.Tensor:
    """Write ``runs (N, k)`` into ``rows (N, L)`` at random starts, in
    place."""
    n, k = runs.shape
    starts = torch.randint(0, rows.size(1) - k + 1, (n,), generator=g)
    cols = starts[:, None] + torch.arange(k)  # (N, k)
    return rows.scatter_(1, cols, runs)


def _shuffled_runs(
    motif: torch.Tensor, n: int, g: torch.Generator
) -> torch.Tensor:
    """``n`` random reorderings of ``motif``, none equal to it -> (n, k)."""
    out = []
    while sum(len(b) for b in out) < n:
        perms = torch.rand(2 * n + 16, motif.numel(), generator=g).argsort(1)
        runs = motif[perms]  # (M, k)
        out.append(runs[~(runs == motif).all(dim=1)])
    return torch.cat(out)[:n]


def make_motif_data(
    n: int,
    length: int = 8,
    vocab_size: int = 4,
    motif: Sequence[int] = DEFAULT_MOTIF,
    seed: int = 0,
    negatives: str = "shuffled",
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` labelled sequences, half with the motif, half without it.

    Positives: random symbols with the motif written over a random window.
    Negatives (``"shuffled"``, the default): random symbols with a reordering
    of the motif written over a random window, kept only if the motif occurs
    nowhere; so both classes contain the motif's symbols. ``"random"``: plain
    random sequences without the motif (symbol counts then leak the label).

    Returns ``x (n, length)`` long symbols in ``[0, vocab_size)`` and
    ``y (n,)`` long labels (1 = contains the motif), shuffled. Deterministic
    for a given ``seed`` (own generator: the global torch seed is untouched).
    """
    check_int(n, "n", 2)
    check_int(vocab_size, "vocab_size", 2)
    check_int(seed, "seed", 0)
    if negatives not in ("shuffled", "random"):
        raise ValueError(
            f"negatives must be 'shuffled' or 'random', got {negatives!r}"
        )
    motif = tuple(int(s) for s in motif)
    if not motif or any(s < 0 or s >= vocab_size for s in motif):
        raise ValueError(
            f"motif must be non-empty with symbols in "
            f"[0, vocab_size={vocab_size}), got {motif!r}"
        )
    if negatives == "shuffled" and len(set(motif)) < 2:
        raise ValueError(
            f"negatives='shuffled' needs a motif with two different "
            f"symbols (else no other order exists), got {motif!r}"
        )
    check_int(length, "length", len(motif) + 1)
    g = torch.Generator().manual_seed(seed)
    m = torch.tensor(motif)
    n_pos = n // 2
    n_neg = n - n_pos

    # Negatives by rejection: draw, and keep only rows without the motif.
    kept = []
    while sum(len(b) for b in kept) < n_neg:
        batch = torch.randint(
            0, vocab_size, (2 * n_neg + 16, length), generator=g
        )
        if negatives == "shuffled":
            _plant(batch, _shuffled_runs(m, len(batch), g), g)
        kept.append(batch[~contains_motif(batch, motif)])
    neg = torch.cat(kept)[:n_neg]

    pos = torch.randint(0, vocab_size, (n_pos, length), generator=g)
    _plant(pos, m.expand(n_pos, -1).contiguous(), g)

    x = torch.cat([pos, neg])
    y = torch.cat(
        [
            torch.ones(n_pos, dtype=torch.long),
            torch.zeros(n_neg, dtype=torch.long),
        ]
    )
    order = torch.randperm(n, generator=g)
    return x[order], y[order]


def make_ends_data(
    n: int, length: int = 16, vocab_size: int = 4, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` labelled sequences for the long-range task: label 1 when the
    first and the last symbol are equal, else 0; half of each, shuffled.

    Every symbol is uniform at random except the last one, which is set to
    the first (positives) or to one of the other ``vocab_size - 1`` symbols
    (negatives), so the label lives only in the pair of ends, ``length - 1``
    positions apart. Returns ``x (n, length)`` long symbols in
    ``[0, vocab_size)`` and ``y (n,)`` long labels; deterministic for a
    given ``seed`` (own generator: the global torch seed is untouched).
    """
    check_int(n, "n", 2)
    check_int(length, "length", 2)
    check_int(vocab_size, "vocab_size", 2)
    check_int(seed, "seed", 0)
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, vocab_size, (n, length), generator=g)
    y = (torch.arange(n) < n // 2).long()  # n // 2 positives
    other = torch.randint(1, vocab_size, (n,), generator=g)  # a shift != 0
    x[:, -1] = torch.where(y == 1, x[:, 0], (x[:, 0] + other) % vocab_size)
    order = torch.randperm(n, generator=g)
    return x[order], y[order]


def symbol_counts(x: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """How often each symbol occurs in each row: ``x (N, L)`` -> ``(N, V)``
    float counts. All that is left of a sequence once order is thrown away."""
    check_int(vocab_size, "vocab_size", 1)
    check_ids(x, "x", vocab_size, ndim=2)
    return F.one_hot(x, vocab_size).sum(dim=1).float()


class MotifCNN(nn.Module):
    """Embedding -> Conv1d (width ``kernel_size``) -> ReLU -> max over
    positions -> Linear.

    Its priors: locality (each filter sees ``kernel_size`` neighbours) and
    translation equivariance (the same filter everywhere); the max makes the
    answer position-free. ``x (B, L)`` long -> logits ``(B, num_classes)``.
    """

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
        if x.size(1) < self.kernel_size:
            raise ValueError(
                f"x has length {x.size(1)}, shorter than "
                f"kernel_size={self.kernel_size}"
            )
        h = self.embed(x).transpose(1, 2)  # (B, E, L): channels first
        h = torch.relu(self.conv(h))  # (B, channels, L - k + 1)
        return self.head(h.amax(dim=-1))  # (B, num_classes)


class TinyTransformer(nn.Module):
    """Embedding (+ sinusoidal positions) -> ``nn.TransformerEncoder`` ->
    max over positions -> Linear.

    No locality or order prior: every position may attend to every other
    one, unless ``window`` is given, which injects one (attention only within
    ``window`` positions). Its one built-in assumption is permutation
    equivariance, which the position encoding breaks; ``use_positions=False``
    removes it. ``x (B, L)`` long -> logits ``(B, num_classes)``.
    """

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
        if d_model % num_heads:
            raise ValueError(
                f"d_model={d_model} is not divisible by num_heads={num_heads}"
            )
        if window is not None:
            check_int(window, "window", 0)
        self.vocab_size = vocab_size
        self.use_positions, self.window = use_positions, window
        self.max_len = max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        # Fixed sinusoidal table (no parameters): both models spend their
        # parameter budget on learning.
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
        if x.size(1) > self.max_len:
            raise ValueError(
                f"x has length {x.size(1)}, longer than max_len={self.max_len}"
            )
        h = self.embed(x)  # (B, L, d_model)
        if self.use_positions:
            h = h + self.pe[: x.size(1)]
        mask = None
        if self.window is not None:
            # nn.TransformerEncoder's bool mask means True = may NOT attend.
            mask = ~band_mask(x.size(1), self.window, device=x.device)
        h = self.encoder(h, mask=mask)  # (B, L, d_model)
        # The same read-out as MotifCNN: the two differ only in how they mix
        # positions (a local filter there, attention here).
        return self.head(h.amax(dim=1))  # (B, num_classes)


class CountClassifier(nn.Module):
    """Logistic regression on symbol counts: ``x (B, L)`` long -> logits
    ``(B, num_classes)``.

    The strongest prior of all: order does not matter, only how often each
    symbol occurs. It measures how much of a task counts alone can solve.
    """

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
    if y.size(0) != x.size(0):
        raise ValueError(
            f"y must have one label per row of x {tuple(x.shape)}, "
            f"got shape {tuple(y.shape)}"
        )


def train_classifier(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int = 200,
    lr: float = 1e-2,
    batch_size: int | None = None,
    seed: int = 0,
) -> list[float]:
    """Adam on cross-entropy for ``steps`` updates; full batch unless
    ``batch_size`` is given.

    Mini-batches are drawn with a generator seeded by ``seed``, so a run is
    reproducible. The model trains in train mode and is returned to the mode
    it was in. Returns the training loss of every step.
    """
    _check_xy(x, y)
    check_int(steps, "steps", 1)
    if isinstance(lr, bool) or not isinstance(lr, (int, float)):
        raise TypeError(f"lr must be a float, got {type(lr).__name__}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    if batch_size is not None:
        check_int(batch_size, "batch_size", 1)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    was_training = model.training
    model.train()
    losses = []
    try:
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
    finally:
        model.train(was_training)
    return losses


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of rows whose arg-max logit equals the label (evaluated in
    eval mode, without gradients; the model's mode is restored)."""
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
    """Seed, build a fresh model, train it, return its test accuracy (the
    same on every rerun).

    ``num_threads`` (default 1) is set for the run and restored afterwards:
    these models are so small that extra threads only add overhead, and a
    fixed thread count keeps float sums in the same order, so the result does
    not depend on how many cores the machine has.
    """
    if num_threads is not None:
        check_int(num_threads, "num_threads", 1)
    fixed = (
        contextlib.nullcontext()
        if num_threads is None
        else threads(num_threads)
    )
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
