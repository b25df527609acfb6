"""Position information for attention, which by itself ignores order.

Sinusoidal positional encoding (Vaswani et al., 2017), with i counting dimension *pairs*:

    PE[pos, 2i]   = sin(pos * w_i)        w_i = 1 / 10000^(2i / d_model)
    PE[pos, 2i+1] = cos(pos * w_i)

Plus the helpers chapter 4 uses: ``frequencies`` (the w_i), ``shift_matrix`` (the fixed
block rotation with PE[p + k] = shift_matrix(k) @ PE[p]), ``apply_rotary`` (rotary position
embedding, Su et al.) and ``LearnedPositionalEmbedding`` (a trained table, as in BERT).
"""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["sinusoidal_encoding", "PositionalEncoding", "frequencies", "shift_matrix", "apply_rotary",
           "LearnedPositionalEmbedding"]


def sinusoidal_encoding(max_len: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The fixed encoding table ``(max_len, d_model)``; even columns sin, odd columns cos."""
    if isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 1:
        raise ValueError(f"max_len must be a positive int, got {max_len!r}")
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be a positive even int (sin/cos come in pairs), got {d_model!r}")
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]             # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)              # (d_model/2,)
    angle = pos / base ** (two_i / d_model)                               # (max_len, d_model/2)
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.float()  # computed in float64 so large positions keep their precision


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to ``x (B, T, d_model)`` and applies dropout; T <= max_len.

    The table is a buffer (moves with ``.to(device)``, never trained, not saved in state_dict).
    """

    def __init__(self, d_model: int, dropout: float = 0.0, max_len: int = 5000):
        super().__init__()
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.d_model, self.max_len = d_model, max_len
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_input(x, self.d_model)
        if x.size(1) > self.max_len:
            raise ValueError(f"sequence length {x.size(1)} exceeds max_len={self.max_len}; "
                             f"build PositionalEncoding with a larger max_len")
        return self.dropout(x + self.pe[: x.size(1)].to(x.dtype))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


def _check_input(x, d_model: int) -> None:
    """x must be a float ``(B, T, d_model)`` tensor: adding the table to integer ids would truncate it."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor of shape (batch, length, d_model={d_model}), "
                        f"got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"x must be a floating-point tensor (embeddings, not token ids), got {x.dtype}")
    if x.dim() != 3 or x.size(-1) != d_model:
        raise ValueError(f"x must have shape (batch, length, d_model={d_model}), got {tuple(x.shape)}")


def _check_d_model(d_model) -> None:
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 2 or d_model % 2:
        raise ValueError(f"d_model must be a positive even int (sin/cos come in pairs), got {d_model!r}")


def frequencies(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The angular frequency of each dimension pair, ``w_i = base^(-2i / d_model)``; shape ``(d_model/2,)``.

    Pair i repeats every ``2 * pi / w_i`` positions: from 2*pi (i = 0) up to nearly base * 2*pi.
    """
    _check_d_model(d_model)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return (base ** (-two_i / d_model)).float()


def shift_matrix(k: int | float, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The fixed ``(d_model, d_model)`` map with ``PE[p + k] = shift_matrix(k) @ PE[p]`` for every p.

    Block diagonal: pair i gets ``[[cos(k w_i), sin(k w_i)], [-sin(k w_i), cos(k w_i)]]`` (angle
    addition for (sin, cos)). It depends on the offset k only, never on p. For row vectors
    (rows of the table) write ``pe[p + k] = pe[p] @ shift_matrix(k).T``.
    """
    if isinstance(k, bool) or not isinstance(k, (int, float)):
        raise TypeError(f"k must be an int or float offset, got {type(k).__name__}")
    _check_d_model(d_model)
    angle = k * frequencies(d_model, base).double()                # (d_model/2,)
    cos, sin = torch.cos(angle), torch.sin(angle)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    m[idx, idx], m[idx, idx + 1] = cos, sin
    m[idx + 1, idx], m[idx + 1, idx + 1] = -sin, cos
    return m.float()


def apply_rotary(x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding: rotate each pair ``(x[..., 2i], x[..., 2i+1])`` by ``pos * w_i``.

    x ``(..., T, d)`` with d even; positions ``(T,)`` (default ``0..T-1``). Returns the same
    shape. For one row at position m this is ``x @ shift_matrix(m, d)``, so the score between a
    rotated query at m and a rotated key at n is ``q @ shift_matrix(m - n) @ k``: it depends on
    the offset m - n only. Pairs are interleaved as in the RoFormer paper.
    """
    if not isinstance(x, torch.Tensor) or x.dim() < 2:
        raise ValueError(f"x must be a tensor of shape (..., length, d), got {getattr(x, 'shape', type(x).__name__)}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"x must be a floating-point tensor, got {x.dtype}")
    d, t = x.size(-1), x.size(-2)
    _check_d_model(d)
    if positions is None:
        positions = torch.arange(t)
    if not isinstance(positions, torch.Tensor) or positions.shape != (t,):
        raise ValueError(f"positions must be a tensor of shape ({t},) (one per row of x), "
                         f"got {getattr(positions, 'shape', type(positions).__name__)}")
    angle = positions.to(torch.float64)[:, None] * frequencies(d, base).double()  # (T, d/2)
    cos, sin = torch.cos(angle).to(x), torch.sin(angle).to(x)
    x0, x1 = x[..., 0::2], x[..., 1::2]                                          # (..., T, d/2)
    out = torch.empty_like(x)
    out[..., 0::2] = x0 * cos - x1 * sin
    out[..., 1::2] = x0 * sin + x1 * cos
    return out


class LearnedPositionalEmbedding(nn.Module):
    """A trained table of ``max_len`` position vectors added to ``x (B, T, d_model)`` (as in BERT).

    Unlike the sinusoidal table it has no row for positions >= max_len, so longer inputs raise.
    """

    def __init__(self, max_len: int, d_model: int, dropout: float = 0.0):
        super().__init__()
        for name, value in (("max_len", max_len), ("d_model", d_model)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.d_model, self.max_len = d_model, max_len
        self.table = nn.Embedding(max_len, d_model)  # a parameter: trained with the model
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_input(x, self.d_model)
        if x.size(1) > self.max_len:
            raise ValueError(f"sequence length {x.size(1)} exceeds max_len={self.max_len}: a learned table "
                             f"has no vector for positions >= {self.max_len}")
        positions = torch.arange(x.size(1), device=x.device)
        return self.dropout(x + self.table(positions).to(x.dtype))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"
