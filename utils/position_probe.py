"""Chapter 4's experiment: which position scheme lets one attention layer
find the previous token, also at twice the trained length?"""

from __future__ import annotations

import torch
from torch import nn

from .checks import check_choice, check_heads, check_int
from .positional import _check_d_model, apply_rotary, sinusoidal_encoding
from .layers import evaluating
from .training import adam, train

__all__ = [
    "POSITION_KINDS",
    "PositionProbe",
    "previous_token_batch",
    "train_position_probe",
]

POSITION_KINDS = ("none", "learned", "sinusoidal", "rope")


class PositionProbe(nn.Module):
    """Attention, FFN, read-out: ``ids (B, T) -> logits (B, T, vocab)``;
    ``position``: ``"none"``, ``"learned"``, ``"sinusoidal"`` or ``"rope"``."""

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

    def forward(
        self, ids: torch.Tensor, max_offset: int | None = None
    ) -> torch.Tensor:
        """``max_offset``: hide every key more than that many places away
        from its query (``None``: every key is seen)."""
        if max_offset is not None:
            max_offset = check_int(max_offset, "max_offset", 0)
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
        scores = q @ k.transpose(-2, -1) / q.size(-1) ** 0.5  # (B, h, T, T)
        if max_offset is not None:
            pos = torch.arange(t, device=ids.device)
            far = (pos[:, None] - pos[None, :]).abs() > max_offset
            scores = scores.masked_fill(far, float("-inf"))
        att = torch.softmax(scores, -1)
        x = x + self.out((att @ v).transpose(1, 2).flatten(2))  # (B, T, d)
        x = x + self.ffn(x)
        return self.read_out(x)  # (B, T, vocab)


def previous_token_batch(
    batch: int, length: int, vocab: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random ids ``(batch, length)`` and the token at t - 1 (-100 at 0)."""
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
    """Train at ``length``; accuracy there (``acc_train_len``), at ``2 *
    length`` on seen and new positions (``acc_double_seen``, ``_new``), and
    at ``2 * length`` with keys over ``length - 1`` places away hidden: no
    offset unseen in training (``acc_double_window``, from position 1)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = PositionProbe(vocab, position, max_len=2 * length)
    opt = adam(model.parameters(), lr=lr)
    batches = (
        previous_token_batch(batch, length, vocab, gen) for _ in range(steps)
    )

    def loss_fn(model, batch):
        ids, target = batch
        logits = model(ids)  # (B, L, vocab)
        return nn.functional.cross_entropy(
            logits.flatten(0, 1), target.flatten()
        )

    losses = train(model, opt, batches, loss_fn, steps, progress=False)
    result = {"position": position, "seed": seed, "loss": losses[-1]}
    with evaluating(model):
        ids, target = previous_token_batch(512, length, vocab, gen)
        right = (model(ids).argmax(-1) == target)[:, 1:]  # (512, L - 1)
        result["acc_train_len"] = right.float().mean().item()
        ids, target = previous_token_batch(512, 2 * length, vocab, gen)
        right = model(ids).argmax(-1) == target  # (512, 2L)
        # positions seen in training, and the new ones L..2L-1
        result["acc_double_seen"] = right[:, 1:length].float().mean().item()
        result["acc_double_new"] = right[:, length:].float().mean().item()
        # the same sequences, keys beyond the trained offsets hidden
        near = model(ids, max_offset=length - 1).argmax(-1) == target
        result["acc_double_window"] = near[:, 1:].float().mean().item()
    return result
