"""The encoder-decoder Transformer of Vaswani et al. (2017) from
``utils.layers`` (chapter 7): source ids ``(B, S)`` and shifted-right target
ids ``(B, T)`` -> logits ``(B, T, tgt_vocab)``, masks built from ``pad_id``;
``decode(..., cache=model.start_cache())`` generates step by step."""

from __future__ import annotations

import torch
from torch import nn

from .cache import KVCache
from .checks import (
    check_at_most,
    check_bool,
    check_ids,
    check_instance,
    check_int,
    check_mask,
    check_tensor,
)
from .layers import DecoderLayer, Embeddings, EncoderLayer, Stack
from .layers import evaluating, xavier_init
from .masks import decoder_mask, padding_mask
from .positional import PositionalEncoding

__all__ = ["Transformer", "parameter_count", "shape_trace"]


class Transformer(nn.Module):
    """``forward(src (B, S), tgt (B, T)) -> logits (B, T, tgt_vocab)``;
    ``tgt`` starts with BOS, both need >= 1 position. ``norm_first``:
    Pre-Norm (default Post-Norm, the paper's). ``share_embeddings`` ties both
    embeddings and the output (needs ``src_vocab == tgt_vocab``)."""

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
        # the sizes are checked by the layers built below, under these names
        _check_vocabs(src_vocab, tgt_vocab, share_embeddings)
        pad_id = check_int(pad_id, "pad_id", 0)
        last = min(src_vocab, tgt_vocab) - 1
        check_at_most(pad_id, "pad_id", last, "the last id of a vocabulary")
        self.pad_id = pad_id
        self.src_embed = Embeddings(src_vocab, d_model, name="src")
        d_model = self.d_model = self.src_embed.d_model  # checked: an int
        self.tgt_embed = Embeddings(tgt_vocab, d_model, name="tgt")
        self.pos = PositionalEncoding(d_model, dropout, max_len)
        sizes = (d_model, num_heads, d_ff, dropout, norm_first)
        self.encoder = Stack(
            lambda: EncoderLayer(*sizes), num_layers, d_model, norm_first
        )
        self.decoder = Stack(
            lambda: DecoderLayer(*sizes), num_layers, d_model, norm_first
        )
        self.num_heads = self.decoder.layers[0].self_attn.num_heads
        self.generator = nn.Linear(d_model, tgt_vocab)
        xavier_init(self)  # every matrix, before any weight is shared
        if share_embeddings:
            self.tgt_embed.lut.weight = self.src_embed.lut.weight
            self.generator.weight = self.src_embed.lut.weight

    @staticmethod
    def _check_sequence(ids, name: str, vocab: int | None = None):
        """Kind, rank, length; with ``vocab``, the values too (one
        synchronisation with the device: once per call of the model)."""
        check_ids(ids, name, vocab, ndim=2)
        check_int(ids.size(1), f"{name} must hold at least one position:", 1)
        return ids

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """src ``(B, S)`` -> memory ``(B, S, d)``, mask ``(B, 1, 1, S)``."""
        self._check_sequence(src, "src", self.src_embed.vocab)
        src_mask = padding_mask(src, self.pad_id)  # (B, 1, 1, S)
        x = self.pos(self.src_embed(src))  # (B, S, d_model)
        return self.encoder(x, src_mask), src_mask

    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        """tgt ``(B, T)`` + ``encode``'s output -> states ``(B, T, d)``;
        with ``cache``, ``tgt`` is only the new positions."""
        self._check_sequence(tgt, "tgt", self.tgt_embed.vocab)
        b, t = tgt.shape
        shape = (b, "src_len", self.d_model)
        check_tensor(memory, "memory", floating=True, shape=shape)
        if src_mask is not None:
            check_tensor(src_mask, "src_mask", ndim=4)
            scores = (b, self.num_heads, t, memory.size(1))
            check_mask(src_mask, "src_mask", scores)
        if cache is None:
            start, layer_caches = 0, None
            tgt_mask = decoder_mask(tgt, self.pad_id)  # (B, 1, T, T)
        else:
            check_instance(cache, "cache", KVCache)
            start, layer_caches = cache.length, cache.layers
            tgt_mask = cache.extend(tgt, self.pad_id)  # (B, 1, T, start + T)
        x = self.pos(self.tgt_embed(tgt), offset=start)  # (B, T, d_model)
        return self.decoder(x, memory, src_mask, tgt_mask, cache=layer_caches)

    def start_cache(self) -> KVCache:
        """An empty key/value cache for ``decode(..., cache=...)``."""
        return KVCache(len(self.decoder.layers))

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        memory, src_mask = self.encode(src)  # checks src
        self._check_sequence(tgt, "tgt")  # its values: in decode
        if src.size(0) != tgt.size(0):
            raise ValueError(
                f"src and tgt must share the batch size, got src "
                f"{tuple(src.shape)}, tgt {tuple(tgt.shape)}"
            )
        states = self.decode(tgt, memory, src_mask)  # (B, T, d_model)
        return self.generator(states)  # (B, T, tgt_vocab)


def _check_vocabs(src_vocab, tgt_vocab, share_embeddings) -> None:
    src_vocab = check_int(src_vocab, "src_vocab", 1)
    tgt_vocab = check_int(tgt_vocab, "tgt_vocab", 1)
    shared = check_bool(share_embeddings, "share_embeddings")
    if shared and src_vocab != tgt_vocab:
        raise ValueError(
            f"share_embeddings needs one vocab, got {src_vocab}, {tgt_vocab}"
        )


def parameter_count(
    src_vocab: int,
    tgt_vocab: int,
    d_model: int = 512,
    num_layers: int = 6,
    d_ff: int = 2048,
    share_embeddings: bool = False,
    norm_first: bool = False,
) -> dict[str, int]:
    """Parameters of ``Transformer(...)`` by part and ``"total"`` (formula)."""
    _check_vocabs(src_vocab, tgt_vocab, share_embeddings)
    d = check_int(d_model, "d_model", 1)
    num_layers = check_int(num_layers, "num_layers", 1)
    d_ff = check_int(d_ff, "d_ff", 1)
    check_bool(norm_first, "norm_first")
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
    """``(name, class, output shape)`` of submodules up to ``max_depth``."""
    check_instance(model, "model", nn.Module, "an nn.Module")
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
    try:
        with evaluating(model):
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return rows
