"""Position information for attention, which by itself ignores order.

Sinusoidal positional encoding (Vaswani et al., 2017), with i counting
dimension *pairs*:

    PE[pos, 2i]   = sin(pos * w_i)        w_i = 1 / 10000^(2i / d_model)
    PE[pos, 2i+1] = cos(pos * w_i)

Plus the helpers chapter 4 uses: ``frequencies`` (the w_i),
``shift_matrix`` (the fixed block rotation with
PE[p + k] = shift_matrix(k) @ PE[p]), ``apply_rotary`` (rotary position
embedding, Su et al.) and ``LearnedPositionalEmbedding`` (a trained table,
as in BERT), and the chapter's experiment: ``PositionProbe`` (one attention
layer with no / learned / sinusoidal / rotary positions) trained by
``train_position_probe`` on the previous-token task.
"""

from __future__ import annotations

import torch
from torch import nn

from .checks import (
    check_choice,
    check_heads,
    check_int,
    check_number,
    check_probability,
    check_tensor,
)

__all__ = [
    "sinusoidal_encoding",
    "PositionalEncoding",
    "frequencies",
    "shift_matrix",
    "apply_rotary",
    "LearnedPositionalEmbedding",
    "POSITION_KINDS",
    "PositionProbe",
    "previous_token_batch",
    "train_position_probe",
]


def sinusoidal_encoding(
    max_len: int, d_model: int, base: float = 10000.0
) -> torch.Tensor:
    """The fixed encoding table ``(max_len, d_model)``; even columns sin,
    odd columns cos. Computed in float64 so that large positions keep their
    precision, returned as float32."""
    max_len = check_int(max_len, "max_len", 1)
    d_model = _check_d_model(d_model)
    base = _check_base(base)
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,)
    angle = pos / base ** (two_i / d_model)  # (max_len, d_model/2)
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to ``x (B, T, d_model)`` and applies
    dropout; ``offset + T <= max_len``.

    ``offset`` is the position of ``x``'s first row: 0 for a whole
    sequence, the number of positions already cached when a decoder
    continues one step at a time. The table is a buffer: it moves with
    ``.to(device)``, is never trained and is not saved in the state_dict.
    """

    def __init__(
        self, d_model: int, dropout: float = 0.0, max_len: int = 5000
    ):
        super().__init__()
        pe = sinusoidal_encoding(max_len, d_model)  # checks both
        self.max_len, self.d_model = pe.shape
        self.dropout = nn.Dropout(check_probability(dropout, "dropout"))
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_input(x, self.d_model)
        end = check_int(offset, "offset", 0) + x.size(1)
        if end > self.max_len:
            raise ValueError(
                f"sequence length {end} exceeds max_len={self.max_len}; "
                f"build PositionalEncoding with a larger max_len"
            )
        return self.dropout(x + self.pe[offset:end].to(x.dtype))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


def _check_input(x, d_model: int) -> None:
    """x must be a float ``(B, T, d_model)`` tensor: adding the table to
    integer ids would truncate it."""
    check_tensor(x, "x", floating=True, shape=("batch", "length", d_model))


def _check_d_model(d_model, name: str = "d_model") -> int:
    d_model = check_int(d_model, name, 2)
    if d_model % 2:
        raise ValueError(
            f"{name} must be a positive even int (sin/cos come in pairs), "
            f"got {d_model!r}"
        )
    return d_model


def _check_base(base) -> float:
    return check_number(base, "base", 0.0, min_inclusive=False, finite=True)


def frequencies(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The angular frequency of each dimension pair,
    ``w_i = base^(-2i / d_model)``; shape ``(d_model/2,)``.

    Pair i repeats every ``2 * pi / w_i`` positions: from 2*pi (i = 0) up
    to nearly base * 2*pi.
    """
    d_model = _check_d_model(d_model)
    base = _check_base(base)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return (base ** (-two_i / d_model)).float()


def shift_matrix(
    k: float, d_model: int, base: float = 10000.0
) -> torch.Tensor:
    """The fixed ``(d_model, d_model)`` map with
    ``PE[p + k] = shift_matrix(k) @ PE[p]`` for every p.

    Block diagonal: pair i gets
    ``[[cos(k w_i), sin(k w_i)], [-sin(k w_i), cos(k w_i)]]`` (angle
    addition for (sin, cos)). It depends on the offset k only, never on p.
    For row vectors (rows of the table) write
    ``pe[p + k] = pe[p] @ shift_matrix(k).T``.
    """
    k = check_number(k, "k", finite=True)
    angle = k * frequencies(d_model, base).double()  # checks d_model, base
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    m[idx, idx], m[idx, idx + 1] = cos, sin
    m[idx + 1, idx], m[idx + 1, idx + 1] = -sin, cos
    return m.float()


def apply_rotary(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    base: float = 10000.0,
) -> torch.Tensor:
    """Rotary position embedding: rotate each pair
    ``(x[..., 2i], x[..., 2i+1])`` by ``pos * w_i``.

    x ``(..., T, d)`` with d even; positions ``(T,)`` (default
    ``0..T-1``). Returns the same shape. For one row at position m this is
    ``x @ shift_matrix(m, d)``, so the score between a rotated query at m
    and a rotated key at n is ``q @ shift_matrix(m - n) @ k``: it depends on
    the offset m - n only. Pairs are interleaved as in the RoFormer paper.
    """
    check_tensor(x, "x", floating=True, min_ndim=2)
    d, t = x.size(-1), x.size(-2)
    _check_d_model(d, "x's last dim d_model")
    if positions is None:
        positions = torch.arange(t)
    check_tensor(positions, "positions (one per row of x)", shape=(t,))
    if positions.dtype == torch.bool or positions.is_complex():
        raise TypeError(f"positions must hold numbers, got {positions.dtype}")
    # angles in float64 on the CPU (like the table), then moved to x
    pos = positions.to("cpu", torch.float64)[:, None]  # (T, 1)
    angle = pos * frequencies(d, base).double()  # (T, d/2)
    cos, sin = torch.cos(angle).to(x), torch.sin(angle).to(x)
    x0, x1 = x[..., 0::2], x[..., 1::2]  # (..., T, d/2)
    out = torch.empty_like(x)
    out[..., 0::2] = x0 * cos - x1 * sin
    out[..., 1::2] = x0 * sin + x1 * cos
    return out


class LearnedPositionalEmbedding(nn.Module):
    """A trained table of ``max_len`` position vectors added to
    ``x (B, T, d_model)`` (as in BERT).

    Unlike the sinusoidal table it has no row for positions >= max_len, so
    longer inputs raise.
    """

    def __init__(self, max_len: int, d_model: int, dropout: float = 0.0):
        super().__init__()
        max_len = check_int(max_len, "max_len", 1)
        d_model = check_int(d_model, "d_model", 1)
        dropout = check_probability(dropout, "dropout")
        self.d_model, self.max_len = d_model, max_len
        # a parameter: trained with the model
        self.table = nn.Embedding(max_len, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_input(x, self.d_model)
        if x.size(1) > self.max_len:
            raise ValueError(
                f"sequence length {x.size(1)} exceeds "
                f"max_len={self.max_len}: a learned table has no vector "
                f"for positions >= {self.max_len}"
            )
        positions = torch.arange(x.size(1), device=x.device)
        return self.dropout(x + self.table(positions).to(x.dtype))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


# --- Chapter 4's experiment: which encoding lets attention find a neighbour?

POSITION_KINDS = ("none", "learned", "sinusoidal", "rope")


class PositionProbe(nn.Module):
    """One bidirectional attention layer (no mask) with a chosen position
    scheme, for ``ids (B, T) -> logits (B, T, vocab)``.

    ``position``: ``"none"``; ``"learned"`` (a table of ``max_len`` rows
    added to the embeddings); ``"sinusoidal"`` (the fixed table added);
    ``"rope"`` (queries and keys rotated in every head, nothing added).
    The layer is attention + residual, then an FFN + residual, then a
    linear read-out.
    """

    def __init__(
        self,
        vocab: int,
        position: str,
        d_model: int = 32,
        num_heads: int = 2,
        max_len: int = 64,
    ):
        super().__init__()
        check_choice(position, "position", POSITION_KINDS)
        vocab = check_int(vocab, "vocab", 1)
        num_heads = check_heads(check_int(d_model, "d_model", 1), num_heads)
        _check_d_model(d_model // num_heads, "the head size (even size)")
        self.position, self.num_heads = position, num_heads
        self.max_len = check_int(max_len, "max_len", 1)
        self.embed = nn.Embedding(vocab, d_model)
        if position == "learned":
            self.table = nn.Embedding(self.max_len, d_model)
        if position == "sinusoidal":
            self.register_buffer(
                "pe",
                sinusoidal_encoding(self.max_len, d_model),
                persistent=False,
            )
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.ffn = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),
            nn.ReLU(),
            nn.Linear(4 * d_model, d_model),
        )
        self.read_out = nn.Linear(d_model, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        b, t = ids.shape
        if t > self.max_len:
            raise ValueError(f"length {t} exceeds max_len={self.max_len}")
        x = self.embed(ids)  # (B, T, d)
        if self.position == "learned":
            x = x + self.table(torch.arange(t, device=ids.device))
        elif self.position == "sinusoidal":
            x = x + self.pe[:t]
        # (B, T, 3d) -> three (B, h, T, d_head)
        q, k, v = (
            z.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)
            for z in self.qkv(x).chunk(3, dim=-1)
        )
        if self.position == "rope":
            q, k = apply_rotary(q), apply_rotary(k)
        att = torch.softmax(q @ k.transpose(-2, -1) / q.size(-1) ** 0.5, -1)
        x = x + self.out((att @ v).transpose(1, 2).flatten(2))  # (B, T, d)
        x = x + self.ffn(x)
        return self.read_out(x)  # (B, T, vocab)


def previous_token_batch(
    batch: int, length: int, vocab: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random ids ``(batch, length)`` and the task's answers: at position
    t >= 1 the token at t - 1 (position 0 has no answer: -100)."""
    ids = torch.randint(0, vocab, (batch, length), generator=generator)
    target = torch.full_like(ids, -100)
    target[:, 1:] = ids[:, :-1]
    return ids, target


def train_position_probe(
    position: str,
    seed: int,
    length: int = 16,
    vocab: int = 16,
    steps: int = 300,
    batch: int = 64,
    lr: float = 3e-3,
) -> dict:
    """Train a ``PositionProbe`` on the previous-token task at ``length``
    and return its accuracy (fraction of answered positions right) on
    fresh sequences of ``length`` (``acc_train_len``) and, in sequences of
    ``2 * length``, at the positions seen in training
    (``acc_double_seen``) and at the new ones (``acc_double_new``).

    Deterministic for a given seed on a given machine; a learned table gets
    ``2 * length`` rows, of which training only ever reaches the first
    ``length``.
    """
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = PositionProbe(vocab, position, max_len=2 * length)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        ids, target = previous_token_batch(batch, length, vocab, gen)
        loss = nn.functional.cross_entropy(
            model(ids).flatten(0, 1), target.flatten()
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    result = {"position": position, "seed": seed, "loss": loss.item()}
    model.eval()
    with torch.no_grad():
        ids, target = previous_token_batch(512, length, vocab, gen)
        right = (model(ids).argmax(-1) == target)[:, 1:]  # (512, L - 1)
        result["acc_train_len"] = right.float().mean().item()
        ids, target = previous_token_batch(512, 2 * length, vocab, gen)
        right = model(ids).argmax(-1) == target  # (512, 2L)
        # positions seen in training, and the new ones L..2L-1
        result["acc_double_seen"] = right[:, 1:length].float().mean().item()
        result["acc_double_new"] = right[:, length:].float().mean().item()
    return result
