"""The encoder-decoder Transformer of Vaswani et al. (2017), assembled from the course's parts.

``Transformer(src_vocab, tgt_vocab)`` maps source ids ``(B, S)`` and shifted-right target ids
``(B, T)`` to logits ``(B, T, tgt_vocab)``; it builds its own padding and look-ahead masks
from ``pad_id``. ``norm_first`` switches every layer between Post-Norm (the paper, default)
and Pre-Norm.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .attention import MultiHeadAttention
from .checks import check_int as _check_int
from .masks import causal_mask, padding_mask
from .positional import PositionalEncoding

__all__ = ["FeedForward", "Embeddings", "LayerNorm", "EncoderLayer", "DecoderLayer", "Encoder", "Decoder",
           "Transformer", "parameter_count", "shape_trace",
           "load_torch_encoder_layer_weights", "load_torch_decoder_layer_weights"]




class FeedForward(nn.Module):
    """Position-wise FFN: ``w_2(dropout(relu(w_1 x)))``, the same MLP at every position."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        _check_int(d_model, "d_model", 1)
        _check_int(d_ff, "d_ff", 1)
        self.w_1, self.w_2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d_model) -> (B, T, d_model)
        return self.w_2(self.dropout(torch.relu(self.w_1(x))))


class Embeddings(nn.Module):
    """Token lookup scaled by sqrt(d_model), so it is not drowned by the positional encoding."""

    def __init__(self, vocab: int, d_model: int):
        super().__init__()
        _check_int(vocab, "vocab", 1)
        _check_int(d_model, "d_model", 1)
        self.vocab, self.d_model = vocab, d_model
        self.lut = nn.Embedding(vocab, d_model)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # (B, T) -> (B, T, d_model)
        if not isinstance(ids, torch.Tensor) or ids.dtype.is_floating_point or ids.dtype == torch.bool:
            raise TypeError(f"ids must be an integer tensor of token ids, got "
                            f"{getattr(ids, 'dtype', type(ids).__name__)}")
        if ids.numel() and (ids.min() < 0 or ids.max() >= self.vocab):
            raise ValueError(f"token ids must be in [0, {self.vocab}), got min {int(ids.min())}, "
                             f"max {int(ids.max())}")
        return self.lut(ids) * math.sqrt(self.d_model)


class LayerNorm(nn.Module):
    """LayerNorm written out: ``gamma * (x - mean) / sqrt(var + eps) + beta`` over the last dim.

    Same as ``nn.LayerNorm(d_model)``: the *biased* variance (divide by d, not d - 1) and eps
    *inside* the square root. (The course notes use the unbiased std with eps outside: not equal.)
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        _check_int(d_model, "d_model", 1)
        if not eps > 0:
            raise ValueError(f"eps must be > 0, got {eps!r}")
        self.d_model, self.eps = d_model, eps
        self.weight = nn.Parameter(torch.ones(d_model))   # gamma, starts as the identity scale
        self.bias = nn.Parameter(torch.zeros(d_model))    # beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., d_model) -> same shape
        if x.size(-1) != self.d_model:
            raise ValueError(f"x must end in d_model={self.d_model} features, got shape {tuple(x.shape)}")
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # biased: divide by d
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


class _Residual(nn.Module):
    """One sublayer with its residual and LayerNorm, Post-Norm or Pre-Norm."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool):
        super().__init__()
        self.norm, self.dropout, self.norm_first = nn.LayerNorm(d_model), nn.Dropout(dropout), norm_first

    def forward(self, x: torch.Tensor, sublayer) -> torch.Tensor:
        if self.norm_first:
            return x + self.dropout(sublayer(self.norm(x)))  # Pre-Norm: x + F(LN(x))
        return self.norm(x + self.dropout(sublayer(x)))       # Post-Norm: LN(x + F(x))


class EncoderLayer(nn.Module):
    """Self-attention then FFN, each wrapped in residual + LayerNorm."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.sub1 = _Residual(d_model, dropout, norm_first)
        self.sub2 = _Residual(d_model, dropout, norm_first)
        self.attn_weights: torch.Tensor | None = None  # last (B, h, S, S), for plots

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        def attend(y):
            out, self.attn_weights = self.self_attn(y, y, y, mask)
            return out
        x = self.sub1(x, attend)
        return self.sub2(x, self.ffn)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, FFN."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1, norm_first: bool = False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.sub1, self.sub2, self.sub3 = (_Residual(d_model, dropout, norm_first) for _ in range(3))
        self.self_weights: torch.Tensor | None = None   # last (B, h, T, T)
        self.cross_weights: torch.Tensor | None = None  # last (B, h, T, S)

    def forward(self, x: torch.Tensor, memory: torch.Tensor,
                src_mask: torch.Tensor | None = None, tgt_mask: torch.Tensor | None = None) -> torch.Tensor:
        def self_attend(y):
            out, self.self_weights = self.self_attn(y, y, y, tgt_mask)
            return out

        def cross_attend(y):
            out, self.cross_weights = self.cross_attn(y, memory, memory, src_mask)
            return out
        x = self.sub1(x, self_attend)
        x = self.sub2(x, cross_attend)
        return self.sub3(x, self.ffn)


class Encoder(nn.Module):
    """A stack of encoder layers (plus a final LayerNorm when Pre-Norm, which needs one)."""

    def __init__(self, num_layers: int, d_model: int, num_heads: int, d_ff: int, dropout: float, norm_first: bool):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first)
                                    for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class Decoder(nn.Module):
    """A stack of decoder layers (plus a final LayerNorm when Pre-Norm)."""

    def __init__(self, num_layers: int, d_model: int, num_heads: int, d_ff: int, dropout: float, norm_first: bool):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first)
                                    for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(self, x, memory, src_mask=None, tgt_mask=None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)


class Transformer(nn.Module):
    """Encoder-decoder Transformer. ``forward(src (B, S), tgt (B, T)) -> logits (B, T, tgt_vocab)``.

    ``tgt`` is the decoder input (shifted right: it starts with BOS). ``share_embeddings``
    ties the source and target embeddings and the output projection, as the paper does
    with its shared vocabulary (needs ``src_vocab == tgt_vocab``).
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, d_model: int = 512, num_heads: int = 8,
                 num_layers: int = 6, d_ff: int = 2048, dropout: float = 0.1, pad_id: int = 0,
                 norm_first: bool = False, max_len: int = 5000, share_embeddings: bool = False):
        super().__init__()
        for name, value in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab), ("d_model", d_model),
                            ("num_heads", num_heads), ("num_layers", num_layers), ("d_ff", d_ff),
                            ("max_len", max_len)):
            _check_int(value, name, 1)
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        if not isinstance(dropout, (int, float)) or not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        if isinstance(pad_id, bool) or not isinstance(pad_id, int) or not 0 <= pad_id < min(src_vocab, tgt_vocab):
            raise ValueError(f"pad_id={pad_id} must be a valid id in both vocabularies "
                             f"(src_vocab={src_vocab}, tgt_vocab={tgt_vocab})")
        if share_embeddings and src_vocab != tgt_vocab:
            raise ValueError(f"share_embeddings needs src_vocab == tgt_vocab, got {src_vocab} and {tgt_vocab}")
        self.pad_id, self.d_model = pad_id, d_model
        self.src_embed = Embeddings(src_vocab, d_model)
        self.tgt_embed = Embeddings(tgt_vocab, d_model)
        self.pos = PositionalEncoding(d_model, dropout, max_len)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, dropout, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, dropout, norm_first)
        self.generator = nn.Linear(d_model, tgt_vocab)
        for p in self.parameters():  # Xavier for matrices, as in common reference implementations
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        if share_embeddings:
            self.tgt_embed.lut.weight = self.src_embed.lut.weight
            self.generator.weight = self.src_embed.lut.weight

    def _check_ids(self, name: str, ids: torch.Tensor, vocab: int) -> None:
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            raise ValueError(f"{name} must be a (batch, length) tensor of ids, got "
                             f"{getattr(ids, 'shape', type(ids).__name__)}")
        if ids.dtype.is_floating_point or ids.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer ids, got dtype {ids.dtype}")
        if ids.numel() and (ids.min() < 0 or ids.max() >= vocab):
            raise ValueError(f"{name} ids must be in [0, {vocab}), got min {int(ids.min())}, max {int(ids.max())}")

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """src ``(B, S)`` -> memory ``(B, S, d_model)`` and the source mask ``(B, 1, 1, S)``."""
        self._check_ids("src", src, self.src_embed.vocab)
        src_mask = padding_mask(src, self.pad_id)
        return self.encoder(self.pos(self.src_embed(src)), src_mask), src_mask

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """tgt ``(B, T)`` with memory ``(B, S, d_model)`` -> decoder states ``(B, T, d_model)``."""
        self._check_ids("tgt", tgt, self.tgt_embed.vocab)
        if not isinstance(memory, torch.Tensor) or memory.dim() != 3 or memory.size(-1) != self.d_model:
            raise ValueError(f"memory must have shape (batch, src_len, d_model={self.d_model}), got "
                             f"{getattr(memory, 'shape', type(memory).__name__)}")
        if tgt.size(0) != memory.size(0):
            raise ValueError(f"tgt batch size {tgt.size(0)} differs from the source's {memory.size(0)}")
        tgt_mask = padding_mask(tgt, self.pad_id) & causal_mask(tgt.size(1), device=tgt.device)
        return self.decoder(self.pos(self.tgt_embed(tgt)), memory, src_mask, tgt_mask)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        if isinstance(src, torch.Tensor) and isinstance(tgt, torch.Tensor) and src.dim() == tgt.dim() == 2 \
                and src.size(0) != tgt.size(0):
            raise ValueError(f"src and tgt must share the batch size, got src {tuple(src.shape)}, tgt {tuple(tgt.shape)}")
        memory, src_mask = self.encode(src)
        return self.generator(self.decode(tgt, memory, src_mask))  # (B, T, tgt_vocab)


def parameter_count(src_vocab: int, tgt_vocab: int, d_model: int = 512, num_layers: int = 6,
                    d_ff: int = 2048, share_embeddings: bool = False, norm_first: bool = False) -> dict[str, int]:
    """The number of trainable parameters of ``Transformer(...)``, from the formula (no model built).

    Returns a breakdown by part and the ``"total"``. The head count does not appear: the heads
    split d_model, they do not add weights.
    """
    for name, value in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab), ("d_model", d_model),
                        ("num_layers", num_layers), ("d_ff", d_ff)):
        _check_int(value, name, 1)
    if share_embeddings and src_vocab != tgt_vocab:
        raise ValueError(f"share_embeddings needs src_vocab == tgt_vocab, got {src_vocab} and {tgt_vocab}")
    d = d_model
    mha = 4 * (d * d + d)                      # W_q, W_k, W_v, W_o, each with a bias
    ffn = (d * d_ff + d_ff) + (d_ff * d + d)   # two linear layers
    norm = 2 * d                               # gamma and beta
    parts = {
        "encoder layers": num_layers * (mha + ffn + 2 * norm),
        "decoder layers": num_layers * (2 * mha + ffn + 3 * norm),
        "final norms": 2 * norm if norm_first else 0,
        "source embedding": src_vocab * d,
        "target embedding": 0 if share_embeddings else tgt_vocab * d,
        "output projection": tgt_vocab if share_embeddings else tgt_vocab * d + tgt_vocab,  # bias is never shared
    }
    parts["total"] = sum(parts.values())
    return parts


def shape_trace(model: nn.Module, *inputs, max_depth: int = 3) -> list[tuple[str, str, tuple[int, ...]]]:
    """Run ``model(*inputs)`` in eval mode with forward hooks; return ``(name, class, output shape)``
    for every submodule whose dotted name has at most ``max_depth`` parts, in the order they ran."""
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise ValueError(f"max_depth must be a positive int, got {max_depth!r}")
    rows: list[tuple[str, str, tuple[int, ...]]] = []
    handles = []

    def hook_for(name: str):
        def hook(module, args, output):
            out = output[0] if isinstance(output, (tuple, list)) else output
            if isinstance(out, torch.Tensor):
                rows.append((name, type(module).__name__, tuple(out.shape)))
        return hook

    for name, module in model.named_modules():
        if name and len(name.split(".")) <= max_depth and not isinstance(module, (nn.ModuleList, nn.Dropout)):
            handles.append(module.register_forward_hook(hook_for(name)))
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return rows


def _copy_residual_norm(ours: _Residual, theirs: nn.LayerNorm) -> None:
    ours.norm.weight.copy_(theirs.weight)
    ours.norm.bias.copy_(theirs.bias)


def _copy_ffn(ours: FeedForward, theirs: nn.Module) -> None:
    for mine, other in ((ours.w_1, theirs.linear1), (ours.w_2, theirs.linear2)):
        if mine.weight.shape != other.weight.shape:
            raise ValueError(f"FFN shapes differ: ours {tuple(mine.weight.shape)}, theirs {tuple(other.weight.shape)}")
        mine.weight.copy_(other.weight)
        mine.bias.copy_(other.bias)


@torch.no_grad()
def load_torch_encoder_layer_weights(ours: EncoderLayer, theirs: nn.TransformerEncoderLayer) -> EncoderLayer:
    """Copy an ``nn.TransformerEncoderLayer``'s weights into our ``EncoderLayer`` (same sizes)."""
    from .attention import load_torch_mha_weights
    load_torch_mha_weights(ours.self_attn, theirs.self_attn)
    _copy_ffn(ours.ffn, theirs)
    _copy_residual_norm(ours.sub1, theirs.norm1)
    _copy_residual_norm(ours.sub2, theirs.norm2)
    return ours


@torch.no_grad()
def load_torch_decoder_layer_weights(ours: DecoderLayer, theirs: nn.TransformerDecoderLayer) -> DecoderLayer:
    """Copy an ``nn.TransformerDecoderLayer``'s weights into our ``DecoderLayer`` (same sizes)."""
    from .attention import load_torch_mha_weights
    load_torch_mha_weights(ours.self_attn, theirs.self_attn)
    load_torch_mha_weights(ours.cross_attn, theirs.multihead_attn)
    _copy_ffn(ours.ffn, theirs)
    for sub, norm in ((ours.sub1, theirs.norm1), (ours.sub2, theirs.norm2), (ours.sub3, theirs.norm3)):
        _copy_residual_norm(sub, norm)
    return ours
