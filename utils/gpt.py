"""A decoder-only GPT (chapter 11), assembled from the course's own layers.

One stack of ``num_layers`` Pre-Norm blocks (masked self-attention, then the
FFN, each ``x + F(LN(x))``), learned position embeddings, a final LayerNorm
and an output layer that reuses the token embedding matrix (tied weights):
GPT-2's design (``utils.gpt2`` loads its weights). Each position sees itself
and those before it (the causal mask): one pass scores every next token.

- ``GPTConfig``: the sizes; ``GPT(config)``; ``forward(ids) -> logits``.
- ``GPT.generate``: sampling one token at a time through a key/value cache
  (``utils.attention.AttentionCache`` in every block); ``use_cache=False``
  recomputes every visible position instead and draws the same tokens.
  Each step is ``GPT.next_logits`` through a ``Window``.
- ``num_parameters(config)``: the parameter count, from the formula.
- ``load_gpt(path)``: tools/runs/train_gpt.py's stored model and merges.
- ``utils.stream_scoring`` scores a long token stream with it.
- ``torch_reference`` / ``load_torch_gpt_weights``: the same blocks built
  from PyTorch's ``nn.TransformerEncoderLayer(norm_first=True)``, to compare.
"""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from typing import ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from .attention import AttentionCache
from .checks import check_bool, check_choice, check_heads, check_ids
from .checks import check_instance, check_int, check_probability
from .layers import ACTIVATIONS, EncoderLayer, Stack
from .layers import load_torch_encoder_layer_weights
from .sampling import sample

__all__ = [
    "GPTConfig",
    "GPTBlock",
    "GPT",
    "Window",
    "num_parameters",
    "load_gpt",
    "torch_reference",
    "load_torch_gpt_weights",
]


@dataclasses.dataclass(frozen=True)
class GPTConfig:
    """The sizes of a ``GPT``. ``context`` is the most positions it sees at
    once (the rows of the position embedding)."""

    vocab_size: int = 1024
    context: int = 256
    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 4
    d_ff: int = 512
    dropout: float = 0.0
    # the FFN's; not a field: stored configs stay as they were (utils.gpt2)
    activation: ClassVar[str] = "relu"

    def __post_init__(self):
        for name in ("vocab_size", "context", "d_model", "d_ff", "num_layers"):
            check_int(getattr(self, name), name, 1)
        check_heads(self.d_model, self.num_heads)
        check_probability(self.dropout, "dropout")
        check_choice(self.activation, "activation", [*ACTIVATIONS])


def num_parameters(config: GPTConfig) -> int:
    """The parameter count of ``GPT(config)``, from the formula:
    ``V d`` (tokens; the output layer shares it) ``+ C d`` (positions)
    ``+ L (4 d^2 + 4 d`` (W_q, W_k, W_v, W_o and biases)
    ``+ 2 d d_ff + d_ff + d`` (the FFN) ``+ 4 d)`` (two LayerNorms)
    ``+ 2 d`` (the final LayerNorm)."""
    check_instance(config, "config", GPTConfig)
    v, c, d, f = config.vocab_size, config.context, config.d_model, config.d_ff
    per_block = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d
    return v * d + c * d + config.num_layers * per_block + 2 * d


class GPTBlock(EncoderLayer):
    """GPT's block: the course's ``EncoderLayer`` in Pre-Norm, with its
    forward as it is (``mask (1|B, 1, n, t)`` and a ``cache`` while
    generating; ``causal=True``, PyTorch's fused kernel, while training)."""

    def __init__(
        self, d_model, num_heads, d_ff, dropout, activation: str = "relu"
    ):
        super().__init__(d_model, num_heads, d_ff, dropout, True, activation)


@dataclasses.dataclass
class Window:
    """What ``GPT.generate`` carries from one token to the next: the visible
    window's first position ``start``; with ``use_cache``, every block's
    cache and how many tokens of the sequence they hold (``fed``)."""

    start: int
    use_cache: bool = True
    caches: list[AttentionCache] | None = None
    fed: int = 0


class GPT(nn.Module):
    """Decoder-only Transformer language model.

    ``forward(ids (B, T)) -> logits (B, T, V)``: ``logits[:, t]`` scores
    the token after ``ids[:, :t + 1]``. ``T`` is at most
    ``config.context``.
    """

    def __init__(self, config: GPTConfig, fused: bool = False):
        super().__init__()
        self.config = check_instance(config, "config", GPTConfig)
        # fused: training attends through PyTorch's fused causal kernel
        # (faster; other rounding, so a run replays only as it was trained)
        self.fused = check_bool(fused, "fused")
        c = config
        # plain lookups, as in GPT-2: the course's Embeddings scales by
        # sqrt(d_model) to stand out against sinusoidal positions; learned
        # positions start as small as the tokens
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.pos_emb = nn.Embedding(c.context, c.d_model)
        self.drop = nn.Dropout(c.dropout)
        args = c.d_model, c.num_heads, c.d_ff, c.dropout, c.activation
        block = partial(GPTBlock, *args)  # a new block at each call
        # Pre-Norm: the Stack ends with the final LayerNorm
        self.stack = Stack(block, c.num_layers, c.d_model, norm_first=True)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """GPT-2's initialisation: weights N(0, 0.02), biases 0, and the
        layers that write into the residual stream (W_o, the FFN's second)
        scaled by 1/sqrt(2 L), so the stream's variance does not grow with
        depth. LayerNorms start as the identity."""
        for name, p in self.named_parameters():
            if "norm" in name:
                p.fill_(1.0 if name.endswith("weight") else 0.0)
            elif name.endswith("bias"):
                p.zero_()
            else:
                std = 0.02
                if name.endswith(("w_o.weight", "w_2.weight")):
                    std /= math.sqrt(2 * self.config.num_layers)
                p.normal_(0.0, std)

    def _run(self, ids: torch.Tensor, start: int, caches=None) -> torch.Tensor:
        """Logits ``(B, n, V)`` of ``ids`` ``(B, n)`` placed at positions
        ``start .. start + n - 1``, attending to the ``start`` positions
        the ``caches`` (one ``AttentionCache`` per block) hold."""
        n = ids.size(1)
        pos = torch.arange(start, start + n, device=ids.device)
        x = self.drop(self.tok_emb(ids) + self.pos_emb(pos))
        if self.fused and self.training and caches is None:
            x = self.stack(x, causal=True)  # the blocks' fused attention
        else:  # query start + i sees keys 0 .. start + i: (1, 1, n, start + n)
            keys = torch.arange(start + n, device=ids.device)
            mask = (keys[None, :] <= pos[:, None])[None, None]
            x = self.stack(x, mask, cache=caches)
        return x @ self.tok_emb.weight.T  # tied output layer

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        check_ids(ids, "ids", self.config.vocab_size, ndim=2)
        n = check_int(ids.size(1), "ids' length", 1)
        if n > self.config.context:
            raise ValueError(
                f"ids has {n} positions, more than context="
                f"{self.config.context}"
            )
        return self._run(ids.long(), 0)

    def loss(self, ids: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy (nats) of predicting ``ids[:, 1:]`` from
        ``ids[:, :-1]``; ids ``(B, T + 1)``."""
        logits = self(ids[:, :-1])
        targets = ids[:, 1:].reshape(-1).long()
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets)

    @torch.no_grad()
    def generate(
        self,
        ids: torch.Tensor,
        new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
    ) -> torch.Tensor:
        """Append ``new_tokens`` sampled tokens to the prompt ``ids``
        ``(B, T)``; returns ``(B, T + new_tokens)``. Each draw is
        ``utils.sampling.sample`` (temperature 0: greedy).

        The model sees at most ``context`` positions. When the visible
        window is full it restarts from its last ``context // 2`` tokens
        (the cache is refilled from them): positions are learned, so a
        window sliding by one would need every key recomputed at each step.
        ``use_cache=False`` runs the whole visible window at each step
        instead: the same tokens by a slower road (tests/test_gpt.py).
        """
        check_ids(ids, "ids", self.config.vocab_size, ndim=2)
        check_int(ids.size(1), "ids' length", 1)
        new_tokens = check_int(new_tokens, "new_tokens", 0)
        was_training = self.training
        self.eval()
        try:
            out, window = ids.long(), self.start_window(ids, use_cache)
            for _ in range(new_tokens):
                logits = self.next_logits(out, window)  # (B, V)
                nxt = sample(logits, temperature, top_k, top_p, generator)
                out = torch.cat([out, nxt[:, None]], dim=1)
            return out
        finally:
            self.train(was_training)

    def start_window(self, ids: torch.Tensor, use_cache=True) -> Window:
        """The window ``generate`` starts with, for the prompt ``ids``
        ``(B, T)``: its last ``context`` positions at most."""
        check_bool(use_cache, "use_cache")
        return Window(max(0, ids.size(1) - self.config.context), use_cache)

    def next_logits(self, out: torch.Tensor, window: Window) -> torch.Tensor:
        """One step of ``generate``: the logits ``(B, V)`` of the token
        after ``out`` ``(B, T)``, read through ``window`` (updated here: a
        full window restarts, the caches take the tokens not yet fed)."""
        check_instance(window, "window", Window)
        context = self.config.context
        if out.size(1) - window.start > context:  # the window is full
            window.start, window.caches = out.size(1) - context // 2, None
        if not window.use_cache:
            return self._run(out[:, window.start :], 0)[:, -1]
        if window.caches is None:
            window.caches = [AttentionCache() for _ in self.stack.layers]
            window.fed = window.start
        # only the tokens not yet cached, at their positions
        fed, window.fed = window.fed, out.size(1)
        logits = self._run(out[:, fed:], fed - window.start, window.caches)
        return logits[:, -1]


@torch.no_grad()
def load_gpt(path) -> tuple[GPT, dict[tuple[int, int], int]]:
    """The model ``tools/runs/train_gpt.py`` stores (``{"config", "merges",
    "state_dict"}``, weights in fp16) in eval mode, computing in fp32, and
    its BPE merges as ``utils.bpe`` takes them: ``{(left, right): id}``."""
    stored = torch.load(path, map_location="cpu", weights_only=True)
    keys = {"config", "merges", "state_dict"}
    if not isinstance(stored, dict) or set(stored) != keys:
        raise ValueError(f"{path}: not a stored GPT (tools/runs/train_gpt.py)")
    model = GPT(GPTConfig(**stored["config"]))
    weights = {k: v.float() for k, v in stored["state_dict"].items()}
    model.load_state_dict(weights)
    merges = {(a, b): 256 + i for i, (a, b) in enumerate(stored["merges"])}
    return model.eval(), merges


def torch_reference(config: GPTConfig) -> nn.TransformerEncoder:
    """PyTorch's own layers at ``config``'s sizes: ``num_layers``
    ``nn.TransformerEncoderLayer(norm_first=True)`` (the FFN's activation
    as ours) and a final ``nn.LayerNorm``. Run it with a causal mask."""
    check_instance(config, "config", GPTConfig)
    layer = nn.TransformerEncoderLayer(
        config.d_model,
        config.num_heads,
        config.d_ff,
        config.dropout,
        ACTIVATIONS[config.activation],
        batch_first=True,
        norm_first=True,
    )
    return nn.TransformerEncoder(
        layer,
        config.num_layers,
        norm=nn.LayerNorm(config.d_model),
        enable_nested_tensor=False,
    )


@torch.no_grad()
def load_torch_gpt_weights(ours: GPT, theirs: nn.TransformerEncoder) -> GPT:
    """Copy the blocks and the final LayerNorm of ``torch_reference(config)``
    into ``ours`` (the embeddings are not in it). Returns ``ours``."""
    check_instance(ours, "ours", GPT, "a utils GPT")
    check_instance(theirs, "theirs", nn.TransformerEncoder)
    layers = ours.stack.layers
    if len(theirs.layers) != len(layers) or theirs.norm is None:
        raise ValueError(
            f"theirs must have {len(layers)} layers and a final norm, got "
            f"{len(theirs.layers)} layers and norm={theirs.norm}"
        )
    for mine, other in zip(layers, theirs.layers):
        load_torch_encoder_layer_weights(mine, other)
    ours.stack.norm.load_state_dict(theirs.norm.state_dict())
    return ours
