"""The encoder-decoder Transformer of Vaswani et al. (2017), assembled from
the course's parts.

``Transformer(src_vocab, tgt_vocab)`` maps source ids ``(B, S)`` and
shifted-right target ids ``(B, T)`` to logits ``(B, T, tgt_vocab)``; it
builds its own padding and look-ahead masks from ``pad_id``. ``norm_first``
switches every layer between Post-Norm (the paper, default) and Pre-Norm.

Masks given to the layers are rank 4, ``(B or 1, 1, Lq, Lk)``, True = may
attend, as ``MultiHeadAttention`` requires: ``padding_mask(ids)`` and
``decoder_mask(ids)`` already are; lift ``causal_mask(T)`` with
``[None, None]``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .attention import MultiHeadAttention, load_torch_mha_weights
from .checks import (
    check_ids,
    check_int,
    check_mask,
    check_number,
    check_probability,
    check_tensor,
)
from .masks import decoder_mask, padding_mask
from .positional import PositionalEncoding

__all__ = [
    "FeedForward",
    "Embeddings",
    "LayerNorm",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "Decoder",
    "Transformer",
    "parameter_count",
    "shape_trace",
    "load_torch_encoder_layer_weights",
    "load_torch_decoder_layer_weights",
]


def _check_bool(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return value


class FeedForward(nn.Module):
    """Position-wise FFN: ``w_2(dropout(relu(w_1 x)))``, the same MLP at
    every position."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        d_model = check_int(d_model, "d_model", 1)
        d_ff = check_int(d_ff, "d_ff", 1)
        self.w_1, self.w_2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(check_probability(dropout, "dropout"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # (B, T, d_model) -> (B, T, d_ff) -> (B, T, d_model)
        return self.w_2(self.dropout(torch.relu(self.w_1(x))))


class Embeddings(nn.Module):
    """Token lookup scaled by sqrt(d_model), so it is not drowned by the
    positional encoding. ``name`` is what error messages call the ids."""

    def __init__(self, vocab: int, d_model: int, *, name: str = "ids"):
        super().__init__()
        self.vocab = check_int(vocab, "vocab", 1)
        self.d_model = check_int(d_model, "d_model", 1)
        self.name = name
        self.lut = nn.Embedding(self.vocab, self.d_model)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        # (B, T) -> (B, T, d_model)
        check_ids(ids, self.name, self.vocab)
        if ids.dtype not in (torch.int32, torch.int64):
            ids = ids.long()  # nn.Embedding reads int32 and int64 only
        return self.lut(ids) * math.sqrt(self.d_model)


class LayerNorm(nn.Module):
    """LayerNorm written out: ``gamma * (x - mean) / sqrt(var + eps) + beta``
    over the last dim.

    Same as ``nn.LayerNorm(d_model)``: the *biased* variance (divide by d,
    not d - 1) and eps *inside* the square root. (The course notes use the
    unbiased std with eps outside: not equal.)
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = check_int(d_model, "d_model", 1)
        self.eps = check_number(
            eps, "eps", 0, min_inclusive=False, finite=True
        )
        # gamma starts as the identity scale, beta at zero
        self.weight = nn.Parameter(torch.ones(self.d_model))
        self.bias = nn.Parameter(torch.zeros(self.d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # (..., d_model) -> same shape
        check_tensor(x, "x", floating=True, min_ndim=1)
        if x.size(-1) != self.d_model:
            raise ValueError(
                f"x must end in d_model={self.d_model} features, "
                f"got shape {tuple(x.shape)}"
            )
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # biased: / d
        return (
            self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias
        )

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


class _Residual(nn.Module):
    """One sublayer with its residual and LayerNorm, Post-Norm or Pre-Norm."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x: torch.Tensor, sublayer) -> torch.Tensor:
        if self.norm_first:  # Pre-Norm: x + F(LN(x))
            return x + self.dropout(sublayer(self.norm(x)))
        # Post-Norm: LN(x + F(x))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    """Self-attention then FFN, each wrapped in residual + LayerNorm.

    ``forward(x (B, S, d_model), mask=None)``; ``mask`` is rank 4, e.g.
    ``padding_mask(src)`` ``(B, 1, 1, S)``.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
    ):
        super().__init__()
        _check_bool(norm_first, "norm_first")
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.sub1 = _Residual(d_model, dropout, norm_first)
        self.sub2 = _Residual(d_model, dropout, norm_first)
        self.attn_weights: torch.Tensor | None = None  # last (B, h, S, S)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        def attend(y):
            out, self.attn_weights = self.self_attn(y, y, y, mask)
            return out

        x = self.sub1(x, attend)
        return self.sub2(x, self.ffn)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, FFN.

    ``forward(x (B, T, d), memory (B, S, d), src_mask, tgt_mask)``; both
    masks are rank 4: ``src_mask`` ``(B, 1, 1, S)``, ``tgt_mask``
    ``(B, 1, T, T)`` or ``causal_mask(T)[None, None]``.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
    ):
        super().__init__()
        _check_bool(norm_first, "norm_first")
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.sub1, self.sub2, self.sub3 = (
            _Residual(d_model, dropout, norm_first) for _ in range(3)
        )
        self.self_weights: torch.Tensor | None = None  # last (B, h, T, T)
        self.cross_weights: torch.Tensor | None = None  # last (B, h, T, S)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        tgt_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        def self_attend(y):
            out, self.self_weights = self.self_attn(y, y, y, tgt_mask)
            return out

        def cross_attend(y):
            out, self.cross_weights = self.cross_attn(
                y, memory, memory, src_mask
            )
            return out

        x = self.sub1(x, self_attend)
        x = self.sub2(x, cross_attend)
        return self.sub3(x, self.ffn)


class Encoder(nn.Module):
    """A stack of encoder layers (plus a final LayerNorm when Pre-Norm,
    which needs one)."""

    def __init__(
        self,
        num_layers: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float,
        norm_first: bool,
    ):
        super().__init__()
        num_layers = check_int(num_layers, "num_layers", 1)
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first)
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class Decoder(nn.Module):
    """A stack of decoder layers (plus a final LayerNorm when Pre-Norm)."""

    def __init__(
        self,
        num_layers: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float,
        norm_first: bool,
    ):
        super().__init__()
        num_layers = check_int(num_layers, "num_layers", 1)
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first)
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        tgt_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)


class Transformer(nn.Module):
    """Encoder-decoder Transformer.
    ``forward(src (B, S), tgt (B, T)) -> logits (B, T, tgt_vocab)``.

    ``tgt`` is the decoder input (shifted right: it starts with BOS). Both
    sequences need at least one position. ``share_embeddings`` ties the
    source and target embeddings and the output projection, as the paper
    does with its shared vocabulary (needs ``src_vocab == tgt_vocab``).
    """

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        d_model: int = 512,
        num_heads: int = 8,
        num_layers: int = 6,
        d_ff: int = 2048,
        dropout: float = 0.1,
        pad_id: int = 0,
        norm_first: bool = False,
        max_len: int = 5000,
        share_embeddings: bool = False,
    ):
        super().__init__()
        src_vocab = check_int(src_vocab, "src_vocab", 1)
        tgt_vocab = check_int(tgt_vocab, "tgt_vocab", 1)
        d_model = check_int(d_model, "d_model", 1)
        num_heads = check_int(num_heads, "num_heads", 1)
        for name, value in (
            ("num_layers", num_layers),
            ("d_ff", d_ff),
            ("max_len", max_len),
        ):
            check_int(value, name, 1)
        if d_model % num_heads:
            raise ValueError(
                f"d_model={d_model} is not divisible by num_heads={num_heads}"
            )
        dropout = check_probability(dropout, "dropout")
        pad_id = check_int(pad_id, "pad_id", 0)
        if pad_id >= min(src_vocab, tgt_vocab):
            raise ValueError(
                f"pad_id={pad_id} must be a valid id in both vocabularies "
                f"(src_vocab={src_vocab}, tgt_vocab={tgt_vocab})"
            )
        _check_bool(norm_first, "norm_first")
        _check_bool(share_embeddings, "share_embeddings")
        if share_embeddings and src_vocab != tgt_vocab:
            raise ValueError(
                f"share_embeddings needs src_vocab == tgt_vocab, "
                f"got {src_vocab} and {tgt_vocab}"
            )
        self.pad_id, self.d_model, self.num_heads = pad_id, d_model, num_heads
        self.src_embed = Embeddings(src_vocab, d_model, name="src")
        self.tgt_embed = Embeddings(tgt_vocab, d_model, name="tgt")
        self.pos = PositionalEncoding(d_model, dropout, max_len)
        self.encoder = Encoder(
            num_layers, d_model, num_heads, d_ff, dropout, norm_first
        )
        self.decoder = Decoder(
            num_layers, d_model, num_heads, d_ff, dropout, norm_first
        )
        self.generator = nn.Linear(d_model, tgt_vocab)
        # Xavier for matrices, as in common reference implementations
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        if share_embeddings:
            self.tgt_embed.lut.weight = self.src_embed.lut.weight
            self.generator.weight = self.src_embed.lut.weight

    @staticmethod
    def _check_sequence(ids, name: str) -> torch.Tensor:
        """Kind, rank and length of ``src`` / ``tgt``; their values are
        checked once, by the embedding that reads them."""
        check_ids(ids, name, ndim=2)
        if ids.size(1) == 0:
            raise ValueError(
                f"{name} must hold at least one position, got shape "
                f"{tuple(ids.shape)}"
            )
        return ids

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """src ``(B, S)`` -> memory ``(B, S, d_model)`` and the source mask
        ``(B, 1, 1, S)``."""
        self._check_sequence(src, "src")
        src_mask = padding_mask(src, self.pad_id)  # (B, 1, 1, S)
        x = self.pos(self.src_embed(src))  # (B, S, d_model)
        return self.encoder(x, src_mask), src_mask

    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """tgt ``(B, T)`` with memory ``(B, S, d_model)`` and the source mask
        ``(B, 1, 1, S)`` from ``encode`` -> decoder states
        ``(B, T, d_model)``."""
        self._check_sequence(tgt, "tgt")
        check_tensor(memory, "memory", floating=True)
        if memory.dim() != 3 or memory.size(-1) != self.d_model:
            raise ValueError(
                f"memory must have shape (batch, src_len, "
                f"d_model={self.d_model}), got {tuple(memory.shape)}"
            )
        b, t, s = tgt.size(0), tgt.size(1), memory.size(1)
        if b != memory.size(0):
            raise ValueError(
                f"tgt batch size {b} differs from the memory's "
                f"{memory.size(0)}: tgt {tuple(tgt.shape)}, memory "
                f"{tuple(memory.shape)}"
            )
        if src_mask is not None:
            check_tensor(src_mask, "src_mask", ndim=4)
            check_mask(src_mask, "src_mask", (b, self.num_heads, t, s))
        tgt_mask = decoder_mask(tgt, self.pad_id)  # (B, 1, T, T)
        x = self.pos(self.tgt_embed(tgt))  # (B, T, d_model)
        return self.decoder(x, memory, src_mask, tgt_mask)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        self._check_sequence(src, "src")
        self._check_sequence(tgt, "tgt")
        if src.size(0) != tgt.size(0):
            raise ValueError(
                f"src and tgt must share the batch size, got src "
                f"{tuple(src.shape)}, tgt {tuple(tgt.shape)}"
            )
        memory, src_mask = self.encode(src)
        states = self.decode(tgt, memory, src_mask)  # (B, T, d_model)
        return self.generator(states)  # (B, T, tgt_vocab)


def parameter_count(
    src_vocab: int,
    tgt_vocab: int,
    d_model: int = 512,
    num_layers: int = 6,
    d_ff: int = 2048,
    share_embeddings: bool = False,
    norm_first: bool = False,
) -> dict[str, int]:
    """The number of trainable parameters of ``Transformer(...)``, from the
    formula (no model built).

    Returns a breakdown by part and the ``"total"``. The head count does not
    appear: the heads split d_model, they do not add weights.
    """
    src_vocab = check_int(src_vocab, "src_vocab", 1)
    tgt_vocab = check_int(tgt_vocab, "tgt_vocab", 1)
    d = check_int(d_model, "d_model", 1)
    num_layers = check_int(num_layers, "num_layers", 1)
    d_ff = check_int(d_ff, "d_ff", 1)
    _check_bool(share_embeddings, "share_embeddings")
    _check_bool(norm_first, "norm_first")
    if share_embeddings and src_vocab != tgt_vocab:
        raise ValueError(
            f"share_embeddings needs src_vocab == tgt_vocab, "
            f"got {src_vocab} and {tgt_vocab}"
        )
    mha = 4 * (d * d + d)  # W_q, W_k, W_v, W_o, each with a bias
    ffn = (d * d_ff + d_ff) + (d_ff * d + d)  # two linear layers
    norm = 2 * d  # gamma and beta
    parts = {
        "encoder layers": num_layers * (mha + ffn + 2 * norm),
        "decoder layers": num_layers * (2 * mha + ffn + 3 * norm),
        "final norms": 2 * norm if norm_first else 0,
        "source embedding": src_vocab * d,
        "target embedding": 0 if share_embeddings else tgt_vocab * d,
        # the output bias is never shared
        "output projection": tgt_vocab
        if share_embeddings
        else tgt_vocab * d + tgt_vocab,
    }
    parts["total"] = sum(parts.values())
    return parts


def shape_trace(
    model: nn.Module, *inputs, max_depth: int = 3
) -> list[tuple[str, str, tuple[int, ...]]]:
    """Run ``model(*inputs)`` in eval mode with forward hooks; return
    ``(name, class, output shape)`` for every submodule whose dotted name
    has at most ``max_depth`` parts, in the order they ran.

    The model's train/eval mode is restored afterwards; no gradients are
    recorded.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"model must be an nn.Module, got {type(model).__name__}"
        )
    max_depth = check_int(max_depth, "max_depth", 1)
    rows: list[tuple[str, str, tuple[int, ...]]] = []
    handles = []

    def hook_for(name: str):
        def hook(module, args, output):
            out = output[0] if isinstance(output, (tuple, list)) else output
            if isinstance(out, torch.Tensor):
                rows.append((name, type(module).__name__, tuple(out.shape)))

        return hook

    skip = (nn.ModuleList, nn.Dropout)
    for name, module in model.named_modules():
        shallow = name and len(name.split(".")) <= max_depth
        if shallow and not isinstance(module, skip):
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
    pairs = ((ours.w_1, theirs.linear1), (ours.w_2, theirs.linear2))
    for mine, other in pairs:
        if mine.weight.shape != other.weight.shape:
            raise ValueError(
                f"FFN shapes differ: ours {tuple(mine.weight.shape)}, "
                f"theirs {tuple(other.weight.shape)}"
            )
        mine.weight.copy_(other.weight)
        mine.bias.copy_(other.bias)


def _check_pair(ours, our_type, theirs, their_type) -> None:
    if not isinstance(ours, our_type):
        raise TypeError(
            f"ours must be a utils {our_type.__name__}, "
            f"got {type(ours).__name__}"
        )
    if not isinstance(theirs, their_type):
        raise TypeError(
            f"theirs must be an nn.{their_type.__name__}, "
            f"got {type(theirs).__name__}"
        )


@torch.no_grad()
def load_torch_encoder_layer_weights(
    ours: EncoderLayer, theirs: nn.TransformerEncoderLayer
) -> EncoderLayer:
    """Copy an ``nn.TransformerEncoderLayer``'s weights into our
    ``EncoderLayer`` (same sizes). Returns ``ours``."""
    _check_pair(ours, EncoderLayer, theirs, nn.TransformerEncoderLayer)
    load_torch_mha_weights(ours.self_attn, theirs.self_attn)
    _copy_ffn(ours.ffn, theirs)
    _copy_residual_norm(ours.sub1, theirs.norm1)
    _copy_residual_norm(ours.sub2, theirs.norm2)
    return ours


@torch.no_grad()
def load_torch_decoder_layer_weights(
    ours: DecoderLayer, theirs: nn.TransformerDecoderLayer
) -> DecoderLayer:
    """Copy an ``nn.TransformerDecoderLayer``'s weights into our
    ``DecoderLayer`` (same sizes). Returns ``ours``."""
    _check_pair(ours, DecoderLayer, theirs, nn.TransformerDecoderLayer)
    load_torch_mha_weights(ours.self_attn, theirs.self_attn)
    load_torch_mha_weights(ours.cross_attn, theirs.multihead_attn)
    _copy_ffn(ours.ffn, theirs)
    norms = ((ours.sub1, theirs.norm1), (ours.sub2, theirs.norm2))
    for sub, norm in norms + ((ours.sub3, theirs.norm3),):
        _copy_residual_norm(sub, norm)
    return ours
