"""Position information (chapter 4): the sinusoidal encoding ``PE[pos, 2i]
= sin(pos w_i)``, ``PE[pos, 2i+1] = cos(pos w_i)``, ``w_i = 10000^(-2i /
d_model)``; its shift matrix, rotary embedding, a learned table."""

from __future__ import annotations

import torch
from torch import nn

from .checks import check_int, check_number, check_probability, check_tensor

__all__ = [
    "sinusoidal_encoding",
    "PositionalEncoding",
    "frequencies",
    "shift_matrix",
    "apply_rotary",
    "LearnedPositionalEmbedding",
]


def sinusoidal_encoding(
    max_len: int, d_model: int, base: float = 10000.0
) -> torch.Tensor:
    """The table ``(max_len, d_model)``, float64 inside, float32 out."""
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
    """``x (B, T, d_model)`` + table rows from ``offset``, then dropout."""

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
    """x: float ``(B, T, d_model)`` (adding to int ids would truncate)."""
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
    """``w_i = base^(-2i / d_model)``, shape ``(d_model/2,)``."""
    d_model = _check_d_model(d_model)
    base = _check_base(base)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return (base ** (-two_i / d_model)).float()


def shift_matrix(
    k: float, d_model: int, base: float = 10000.0
) -> torch.Tensor:
    """``(d_model, d_model)`` with ``PE[p + k] = PE[p] @ shift_matrix(k)``."""
    k = check_number(k, "k", finite=True)
    angle = k * frequencies(d_model, base).double()  # checks d_model, base
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    m[idx, idx], m[idx, idx + 1] = cos, -sin  # rows: PE[p] on the left
    m[idx + 1, idx], m[idx + 1, idx + 1] = sin, cos
    return m.float()


def apply_rotary(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    base: float = 10000.0,
) -> torch.Tensor:
    """Rotate pairs ``(x[..., 2i], x[..., 2i+1])`` of ``x (..., T, d)`` by
    ``pos w_i``: ``x[t] @ shift_matrix(pos[t]).T`` (pos default 0..T-1)."""
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
    """A trained table of ``max_len`` positions (BERT); longer inputs raise."""

    def __init__(self, max_len: int, d_model: int, dropout: float = 0.0):
        super().__init__()
        max_len = check_int(max_len, "max_len", 1)
        d_model = check_int(d_model, "d_model", 1)
        dropout = check_probability(dropout, "dropout")
        self.d_model, self.max_len = d_model, max_len
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
