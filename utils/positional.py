"""Sinusoidal positional encoding (Vaswani et al., 2017):

    PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))
    PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))
"""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["sinusoidal_encoding", "PositionalEncoding"]


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
        if x.dim() != 3 or x.size(-1) != self.d_model:
            raise ValueError(f"x must have shape (batch, length, d_model={self.d_model}), got {tuple(x.shape)}")
        if x.size(1) > self.max_len:
            raise ValueError(f"sequence length {x.size(1)} exceeds max_len={self.max_len}; "
                             f"build PositionalEncoding with a larger max_len")
        return self.dropout(x + self.pe[: x.size(1)].to(x.dtype))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"
