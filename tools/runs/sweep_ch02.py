"""The seed sweep behind chapter 2's "is it the heads or the parameters?".

    python -m tools.runs.sweep_ch02 [N_SEEDS]   (default: seeds 0-29; a minute)

One head of width 32 against two of width 16, the same parameters, on a task
that needs two tokens per query: the chapter's models and settings, trained
on more seeds than the chapter trains live. Every run's test accuracy goes to
``book/data/ch02_heads.json``, which the chapter plots and checks its claims
against; ``tests/test_sweep_ch02.py`` re-trains seeds of it.
"""

from __future__ import annotations

import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

from tools import ROOT
from tools.numerics import numeric_mode
from tools.runs import write_json
from utils.attention import MultiHeadAttention
from utils.training import adam, threads, train

OUT = ROOT / "book" / "data" / "ch02_heads.json"
N_SEEDS = 30
HEADS = (1, 2)
# the chapter's vocabulary, sequence length, d_model; the positions asked
V_TOY, T_TOY, D_TOY = 32, 8, 32
TARGETS = (1, 5)
STEPS, BATCH, LR, TEST_SIZE = 150, 128, 1e-2, 2000


class CopyTwo(nn.Module):
    """Embeddings -> one attention layer asked at the last position -> 2
    answers."""

    def __init__(self, num_heads: int):
        super().__init__()
        # one extra id: the query "?"
        self.tok = nn.Embedding(V_TOY + 1, D_TOY)
        self.pos = nn.Embedding(T_TOY + 1, D_TOY)
        self.attn = MultiHeadAttention(D_TOY, num_heads)
        self.read = nn.Linear(D_TOY, len(TARGETS) * V_TOY)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (B, T+1) -> logits (B, 2, V)."""
        x = self.tok(ids) + self.pos.weight[: ids.size(1)]  # (B, T+1, d)
        out, _ = self.attn(x[:, -1:], x, x)  # only the last position asks
        return self.read(out[:, 0]).view(-1, len(TARGETS), V_TOY)


def copy_batch(
    n: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """n random sequences with "?" appended, and their two answers: (n, T+1),
    (n, 2)."""
    x = torch.randint(0, V_TOY, (n, T_TOY), generator=gen)
    ids = torch.cat([x, torch.full((n, 1), V_TOY)], dim=1)
    return ids, x[:, list(TARGETS)]


def copy_loss(model: nn.Module, batch) -> torch.Tensor:
    """Cross-entropy of the two answers."""
    ids, y = batch
    return F.cross_entropy(model(ids).transpose(1, 2), y)


def train_copy(num_heads: int, seed: int, steps: int = STEPS) -> dict:
    """Train one model as the chapter does; its test accuracies and parameter
    count."""
    with threads(1):  # tiny matrices: one thread is faster, and never stalls
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(100 + seed)
        model = CopyTwo(num_heads)
        opt = adam(model.parameters(), lr=LR)
        batches = (copy_batch(BATCH, gen) for _ in range(steps))
        train(model, opt, batches, copy_loss, steps, progress=False)
        ids, y = copy_batch(TEST_SIZE, torch.Generator().manual_seed(999))
        with torch.no_grad():
            right = model(ids).argmax(-1) == y  # (TEST_SIZE, 2)
    return {
        "both": round(right.all(-1).float().mean().item(), 4),
        "per_token": [round(a, 4) for a in right.float().mean(0).tolist()],
        "parameters": sum(p.numel() for p in model.parameters()),
    }


def main(n_seeds: int = N_SEEDS) -> dict:
    start = time.perf_counter()
    runs = {}
    for num_heads in HEADS:
        runs[str(num_heads)] = []
        for seed in range(n_seeds):
            row = {"seed": seed, **train_copy(num_heads, seed)}
            runs[str(num_heads)].append(row)
            print(f"heads {num_heads} seed {seed:2d}: {row}", flush=True)
    data = {
        "about": "chapter 2, 'Is it the heads or the parameters?': test "
        "accuracy of each seed; written by python -m tools.runs.sweep_ch02",
        "settings": {
            "vocabulary": V_TOY,
            "length": T_TOY,
            "d_model": D_TOY,
            "targets": list(TARGETS),
            "steps": STEPS,
            "batch": BATCH,
            "lr": LR,
            "test_size": TEST_SIZE,
        },
        "numeric_mode": numeric_mode.stamp(),
        "runs": runs,
    }
    write_json(OUT, data)
    print(
        f"wrote {OUT.relative_to(ROOT)} in {time.perf_counter() - start:.0f} s"
    )
    return data


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else N_SEEDS)
