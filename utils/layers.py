"""The Transformer's layers (chapter 7), assembled by ``utils.model``. Masks
are rank 4 ``(B|1, 1, Lq, Lk)``, True = may attend."""

from __future__ import annotations

import contextlib
import math
from functools import partial

import torch
from torch import nn
from torch.nn.functional import gelu, relu

from .attention import (
    AttentionCache,
    MultiHeadAttention,
    load_torch_mha_weights,
)
from .checks import (
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_number,
    check_probability,
    check_tensor,
)

__all__ = [
    "evaluating",
    "xavier_init",
    "ACTIVATIONS",
    "FeedForward",
    "Embeddings",
    "LayerNorm",
    "Residual",
    "EncoderLayer",
    "DecoderLayer",
    "Stack",
    "load_torch_encoder_layer_weights",
    "load_torch_decoder_layer_weights",
]


@contextlib.contextmanager
def evaluating(model):
    """Eval mode and no grad inside the block, the model's mode after:
    how a model is run to be scored, decoded or inspected."""
    was_training = getattr(model, "training", None)
    if isinstance(model, nn.Module):
        model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        if isinstance(model, nn.Module):
            model.train(was_training)


def xavier_init(module: nn.Module) -> nn.Module:
    """Xavier (Glorot) uniform for every matrix of ``module`` (a parameter
    of 2+ dims), in ``parameters()`` order, as common reference
    implementations start a Transformer; returns ``module``."""
    for p in check_instance(module, "module", nn.Module).parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    return module


# the FFN's: the paper's ReLU, or the tanh form of GELU GPT-2 was trained with
ACTIVATIONS = {"relu": relu, "gelu_tanh": partial(gelu, approximate="tanh")}


class FeedForward(nn.Module):
    """``w_2(dropout(act(w_1 x)))``, the same MLP at every position;
    ``act`` is ``ACTIVATIONS[activation]``."""

    def __init__(
        self, d_model: int, d_ff: int, dropout: float = 0.0, activation="relu"
    ):
        super().__init__()
        d_model = check_int(d_model, "d_model", 1)
        d_ff = check_int(d_ff, "d_ff", 1)
        self.w_1, self.w_2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(check_probability(dropout, "dropout"))
        check_choice(activation, "activation", [*ACTIVATIONS])
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # (B, T, d_model) -> (B, T, d_ff) -> (B, T, d_model)
        act = ACTIVATIONS[self.activation]
        return self.w_2(self.dropout(act(self.w_1(x))))


class Embeddings(nn.Module):
    """Token lookup times sqrt(d_model) (not drowned by the positions).
    The ids' values are checked where a model takes them (an id outside
    the vocabulary fails here with nn.Embedding's IndexError)."""

    def __init__(self, vocab: int, d_model: int, *, name: str = "ids"):
        super().__init__()
        self.vocab = check_int(vocab, "vocab", 1)
        self.d_model = check_int(d_model, "d_model", 1)
        self.name = name
        self.lut = nn.Embedding(self.vocab, self.d_model)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        # (B, T) -> (B, T, d_model)
        if ids.dtype not in (torch.int32, torch.int64):
            ids = ids.long()  # nn.Embedding reads int32 and int64 only
        return self.lut(ids) * math.sqrt(self.d_model)


class LayerNorm(nn.Module):
    """As ``nn.LayerNorm``: biased variance, eps inside the root."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = check_int(d_model, "d_model", 1)
        self.eps = check_number(
            eps, "eps", 0, min_inclusive=False, finite=True
        )
        self.weight = nn.Parameter(torch.ones(self.d_model))
        self.bias = nn.Parameter(torch.zeros(self.d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # (..., d_model) -> same shape
        check_tensor(x, "x", floating=True, min_ndim=1)
        check_tensor(x, "x", shape=(*x.shape[:-1], self.d_model))
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # biased: / d
        # times rsqrt, as ATen's kernel does: torch.sqrt goes to MKL's
        # vector maths, whose last bits differ between CPUs
        return (
            self.weight * (x - mean) * torch.rsqrt(var + self.eps) + self.bias
        )

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


class Residual(nn.Module):
    """One sublayer with its residual and LayerNorm, Post-Norm or Pre-Norm."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = check_bool(norm_first, "norm_first")

    def forward(self, x: torch.Tensor, sublayer) -> torch.Tensor:
        if self.norm_first:  # Pre-Norm: x + F(LN(x))
            return x + self.dropout(sublayer(self.norm(x)))
        # Post-Norm: LN(x + F(x))
        return self.norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    """Self-attention then FFN: ``forward(x (B, S, d), mask (B|1, 1, S, S)
    or None, cache=None)``. With an ``AttentionCache``, ``x`` is only the
    new positions and ``mask (B|1, 1, n, t)`` covers all t cached and new
    keys (GPT's generation). ``causal=True`` (no mask, no cache): causal
    self-attention by PyTorch's fused kernel, the weights never formed
    (GPT's training)."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        activation: str = "relu",
    ):
        super().__init__()  # Residual checks norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout, activation)
        self.sub1 = Residual(d_model, dropout, norm_first)
        self.sub2 = Residual(d_model, dropout, norm_first)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        cache: AttentionCache | None = None,
        causal: bool = False,
    ) -> torch.Tensor:
        def attend(y):  # queries, keys and values all from y
            return self.self_attn(y, y, y, mask, cache=cache)[0]

        x = self.sub1(x, self.self_attn.causal if causal else attend)
        return self.sub2(x, self.ffn)


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention, FFN: ``forward(x (B, T, d),
    memory (B, S, d), src_mask (B, 1, 1, S), tgt_mask (B, 1, T, T), cache)``.
    With ``cache`` (a ``(self, cross)`` pair), ``x`` is only the new
    positions and ``tgt_mask (B, 1, T, t)`` covers all t."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
    ):
        super().__init__()  # Residual checks norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.sub1, self.sub2, self.sub3 = (
            Residual(d_model, dropout, norm_first) for _ in range(3)
        )

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        tgt_mask: torch.Tensor | None = None,
        cache: tuple[AttentionCache, AttentionCache] | None = None,
    ) -> torch.Tensor:
        own, cross = (None, None) if cache is None else cache

        def self_attend(y):  # the target's own, under tgt_mask
            return self.self_attn(y, y, y, tgt_mask, cache=own)[0]

        def cross_attend(y):  # keys and values: the encoder's memory
            return self.cross_attn(y, memory, memory, src_mask, cache=cross)[0]

        x = self.sub1(x, self_attend)
        x = self.sub2(x, cross_attend)
        return self.sub3(x, self.ffn)


class Stack(nn.Module):
    """``num_layers`` layers run in turn (+ LayerNorm if Pre-Norm)."""

    def __init__(
        self, make_layer, num_layers: int, d_model: int, norm_first: bool
    ):
        super().__init__()
        num_layers = check_int(num_layers, "num_layers", 1)
        self.layers = nn.ModuleList(make_layer() for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    def forward(
        self, x: torch.Tensor, *args, cache=None, **kwargs
    ) -> torch.Tensor:
        """Each layer gets ``args``, ``kwargs`` and its own ``cache[i]``."""
        for i, layer in enumerate(self.layers):
            own = None if cache is None else cache[i]
            x = layer(x, *args, cache=own, **kwargs)
        return self.norm(x)


def _copy_residual_norm(ours: Residual, theirs: nn.LayerNorm) -> None:
    ours.norm.weight.copy_(theirs.weight)
    ours.norm.bias.copy_(theirs.bias)


def _copy_ffn(ours: FeedForward, theirs: nn.Module) -> None:
    pairs = ((ours.w_1, theirs.linear1), (ours.w_2, theirs.linear2))
    for mine, other in pairs:
        check_tensor(other.weight, "theirs' FFN", shape=mine.weight.shape)
        mine.weight.copy_(other.weight)
        mine.bias.copy_(other.bias)


@torch.no_grad()
def _load_layer(ours, theirs, kind: type, their_kind: type):
    """Both loaders in one: a decoder layer is an encoder layer plus the
    cross-attention and a third norm, copied in the same order."""
    check_instance(ours, "ours", kind, f"a utils {kind.__name__}")
    what = f"an nn.{their_kind.__name__}"
    check_instance(theirs, "theirs", their_kind, what)
    load_torch_mha_weights(ours.self_attn, theirs.self_attn)
    norms = [(ours.sub1, theirs.norm1), (ours.sub2, theirs.norm2)]
    if kind is DecoderLayer:
        load_torch_mha_weights(ours.cross_attn, theirs.multihead_attn)
        norms.append((ours.sub3, theirs.norm3))
    _copy_ffn(ours.ffn, theirs)
    for sub, norm in norms:
        _copy_residual_norm(sub, norm)
    return ours


def load_torch_encoder_layer_weights(
    ours: EncoderLayer, theirs: nn.TransformerEncoderLayer
) -> EncoderLayer:
    """``nn.TransformerEncoderLayer``'s weights -> ``ours``; returns it."""
    return _load_layer(ours, theirs, EncoderLayer, nn.TransformerEncoderLayer)


def load_torch_decoder_layer_weights(
    ours: DecoderLayer, theirs: nn.TransformerDecoderLayer
) -> DecoderLayer:
    """``nn.TransformerDecoderLayer``'s weights -> ``ours``; returns it."""
    return _load_layer(ours, theirs, DecoderLayer, nn.TransformerDecoderLayer)
