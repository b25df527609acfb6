"""Train chapter 11's stored GPT on Shakespeare (byte-level BPE tokens).

    python -m tools.train_gpt                  # the stored run (resumes)
    python -m tools.train_gpt --minutes 20     # stop after 20 min; again: on
    python -m tools.train_gpt --steps 200 --out /tmp/g --fresh   # a test run

It restarts itself in the portable numeric mode and trains on one thread,
deterministically: batch ``s`` is drawn from a generator seeded by the run's
seed and ``s``, dropout from torch's random state (saved), so a run stopped
and started again continues bit for bit. The whole state is saved to
``_build/ch11/checkpoint.pt`` (``OUT/ch11_checkpoint.pt`` with another
``--out``) every ``--every-minutes`` minutes (at a step's
end) and when ``--minutes`` runs out. Every ``eval_every`` steps a row goes
to ``OUT/ch11_run.jsonl``: the step, the learning rate, the mean training
loss since the last row, training and validation bits per character. At the
end: ``OUT/ch11_gpt.pt`` (the tokenizer's merges, the config, the weights in
fp16) and ``OUT/ch11_run.json`` (the recipe, the numeric mode, the first
steps' losses for the chapter's exact replay, the whole loss curve, and the
validation and test bits per character of the fp16 weights).

Bits per character: the total cross-entropy of a split's token stream in
nats (``utils.gpt.stream_nats``: windows of the context, half overlapping,
the first token predicted after the work separator's tokens) / ln 2 / the
split's characters, so it compares with character models.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib
import time
from typing import Callable

from tools import numeric_mode

if __name__ == "__main__":  # before torch is imported
    numeric_mode.reexec_in("portable", "tools.train_gpt")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from tools import ROOT  # noqa: E402
from utils import bpe, shakespeare  # noqa: E402
from utils.gpt import GPT, GPTConfig, num_parameters, stream_nats  # noqa: E402
from utils.copying import SpanIndex  # noqa: E402
from utils.layers import evaluating  # noqa: E402
from utils.training import threads, train  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Recipe:
    """The model's sizes and how it is trained."""

    vocab_size: int = 1024
    context: int = 256
    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 4
    d_ff: int = 512
    dropout: float = 0.0
    batch: int = 16
    steps: int = 5000
    lr: float = 2e-3
    min_lr: float = 2e-4
    warmup: int = 200
    weight_decay: float = 0.1
    betas: tuple = (0.9, 0.95)
    clip: float = 1.0
    seed: int = 0
    eval_every: int = 250
    replay_steps: int = 20  # the first steps' losses, for the chapter

    def config(self) -> GPTConfig:
        names = [f.name for f in dataclasses.fields(GPTConfig)]
        return GPTConfig(**{n: getattr(self, n) for n in names})


# Chosen with throughput measured on this machine (one thread, portable
# mode: 0.82 s a step of 16 x 256 tokens at d_model 128 and 4 layers when
# idle, 1.2-1.8 s under the other work) and two short runs: the learning
# rate 2e-3 did a little better than 4e-3 after 400 steps (validation
# 2.53 vs 2.55 bits/char), and at 2e-3 a 1200-step run was at 2.30 after
# 800 steps. 3400 steps (14 million tokens, 7 passes over the training
# works) fit the 90-minute budget at 1.3 s a step with the evaluations.
RECIPE = Recipe(steps=3400, eval_every=300)
CHECKPOINT = ROOT / "_build" / "ch11" / "checkpoint.pt"
OUT = ROOT / "book" / "data"


# ---------------------------------------------------------------- the data
def token_streams(recipe: Recipe) -> dict:
    """The BPE merges learned on the training works, each split's token
    ids and character count, and the work separator's tokens (the context
    the first token of a split is predicted from)."""
    texts = shakespeare.split_works()
    merges = bpe.train_bpe(texts["train"], recipe.vocab_size)
    out = {"merges": merges, "chars": {}, "ids": {}}
    for split, text in texts.items():
        out["ids"][split] = torch.tensor(bpe.encode(text, merges))
        out["chars"][split] = len(text)
    out["prefix"] = torch.tensor(bpe.encode(shakespeare.SEPARATOR, merges))
    return out


class Windows:
    """Training batches ``(batch, context + 1)``: random windows of the
    training stream, batch ``s`` drawn from a generator seeded by
    ``(seed, s)`` alone, so a resumed run draws the same ones."""

    def __init__(self, stream: torch.Tensor, recipe: Recipe, step: int = 0):
        self.stream, self.recipe, self.step = stream.long(), recipe, step
        self.offsets = torch.arange(recipe.context + 1)

    def __iter__(self):
        return self

    def __next__(self) -> torch.Tensor:
        self.step += 1
        gen = torch.Generator().manual_seed(
            self.recipe.seed * 1_000_003 + self.step
        )
        high = self.stream.numel() - self.recipe.context - 1
        starts = torch.randint(high, (self.recipe.batch,), generator=gen)
        return self.stream[starts[:, None] + self.offsets]


def lr_factor(recipe: Recipe) -> Callable[[int], float]:
    """Linear warm-up to ``lr``, then a cosine down to ``min_lr``."""

    def factor(step: int) -> float:
        if step < recipe.warmup:
            return (step + 1) / recipe.warmup
        done = (step - recipe.warmup) / max(1, recipe.steps - recipe.warmup)
        cos = 0.5 * (1 + math.cos(math.pi * min(1.0, done)))
        return (recipe.min_lr + (recipe.lr - recipe.min_lr) * cos) / recipe.lr

    return factor


def adamw(model: nn.Module, recipe: Recipe) -> torch.optim.AdamW:
    """AdamW on the fused kernel (as ``utils.runtime.adam``: its square
    root is ATen's own, the same bits on every CPU); weight decay on the
    matrices only, not on biases and LayerNorms."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": recipe.weight_decay},
        {"params": rest, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(
        groups, lr=recipe.lr, betas=recipe.betas, fused=True
    )


def bits_per_char(model: GPT, data: dict, split: str) -> float:
    nats = stream_nats(model, data["ids"][split], data["prefix"])
    return nats / math.log(2) / data["chars"][split]


def train_sample_bpc(model: GPT, data: dict, recipe: Recipe) -> float:
    """Bits per character on a fixed sample of the training stream: 32
    windows of the context, every token scored (so the first ones with
    little history: a little above the held-out way of scoring)."""
    gen = torch.Generator().manual_seed(12345)
    stream = data["ids"]["train"]
    high = stream.numel() - recipe.context - 1
    starts = torch.randint(high, (32,), generator=gen)
    rows = stream[starts[:, None] + torch.arange(recipe.context + 1)]
    chars = len(bpe.decode(rows[:, 1:].ravel().tolist(), data["merges"]))
    with evaluating(model):
        logp = model(rows[:, :-1]).log_softmax(-1)
        nll = -logp.gather(-1, rows[:, 1:, None])[..., 0]
    return float(nll.double().sum()) / math.log(2) / chars


def fp16_model(model: GPT) -> tuple[GPT, dict]:
    """The model as stored: weights rounded to fp16, computed in fp32."""
    half = {k: v.half() for k, v in model.state_dict().items()}
    copy = GPT(model.config)
    copy.load_state_dict({k: v.float() for k, v in half.items()})
    return copy.eval(), half


def replay(steps: int, recipe: Recipe = RECIPE) -> list[float]:
    """The first ``steps`` training losses of the run of ``recipe``, made
    again from scratch as ``main`` makes them (the chapter compares them
    with the stored ``replay_loss``: equal in the portable mode)."""
    data = token_streams(recipe)
    torch.manual_seed(recipe.seed)
    model = GPT(recipe.config())
    optimizer = adamw(model, recipe)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor(recipe))
    with threads(1):
        return train(
            model,
            optimizer,
            Windows(data["ids"]["train"], recipe),
            lambda m, batch: m.loss(batch),
            steps,
            scheduler=scheduler,
            clip=recipe.clip,
            progress=False,
        )


def shortest(x: float) -> float:
    """A float32 loss written with the fewest digits that read back as the
    same float32 (compare as ``np.float32(stored) == np.float32(live)``)."""
    return float(str(np.float32(x)))


def finish(
    model: GPT, data: dict, recipe: Recipe, out: pathlib.Path, log: dict
) -> None:
    """Store the fp16 weights and score them (as the chapter loads them)."""
    stored, half = fp16_model(model)
    merges = [list(pair) for pair in data["merges"]]
    torch.save(
        {
            "config": dataclasses.asdict(recipe.config()),
            "merges": merges,
            "state_dict": half,
        },
        out / f"{log['tag']}_gpt.pt",
    )
    for split in ("valid", "test"):
        log[f"{split}_bpc_fp16"] = bits_per_char(stored, data, split)
    log["valid_bpc_fp32"] = bits_per_char(model, data, "valid")
    log["samples"] = samples(stored, data)


SAMPLERS = {  # name: generate()'s keyword arguments
    "greedy": {"temperature": 0.0},
    "T=1.0": {"temperature": 1.0},
    "T=0.8": {"temperature": 0.8},
    "T=1.0, top-k 40": {"temperature": 1.0, "top_k": 40},
    "T=1.0, top-p 0.9": {"temperature": 1.0, "top_p": 0.9},
}
SAMPLE_SEEDS, SAMPLE_TOKENS, SPAN = (0, 1, 2, 3, 4), 500, 50


def samples(model: GPT, data: dict) -> dict:
    """Per sampler, samples of ``SAMPLE_TOKENS`` tokens after the work
    separator (one per seed) and their copy rates: the share of their
    50-character windows found verbatim in the training works."""
    index = SpanIndex(shakespeare.split_works("train"), SPAN)
    prompt = data["prefix"][None]
    out = {}
    for name, kwargs in SAMPLERS.items():
        texts, rates = [], []
        for seed in SAMPLE_SEEDS if kwargs["temperature"] else (0,):
            gen = torch.Generator().manual_seed(seed)
            ids = model.generate(
                prompt, SAMPLE_TOKENS, generator=gen, **kwargs
            )
            text = bpe.decode(
                ids[0, prompt.size(1) :].tolist(), data["merges"]
            )
            texts.append(text)
            rates.append(index.copy_rate(text))
        out[name] = {"kwargs": kwargs, "copy_rate": rates, "text": texts}
    return out


def main(args) -> None:
    given = {
        k: v for k, v in vars(args).items() if k in Recipe.__dataclass_fields__
    }
    recipe = dataclasses.replace(
        RECIPE, **{k: v for k, v in given.items() if v is not None}
    )
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = args.checkpoint or out / f"{args.tag}_checkpoint.pt"
    if args.checkpoint is None and out == OUT:  # not into the book's data
        ckpt = CHECKPOINT
    ckpt = pathlib.Path(ckpt)
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    rows_path = out / f"{args.tag}_run.jsonl"
    if args.fresh:
        for p in (ckpt, rows_path):
            p.unlink(missing_ok=True)
    t0 = time.time()
    data = token_streams(recipe)
    sizes = {k: v.numel() for k, v in data["ids"].items()}
    print(f"tokenised in {time.time() - t0:.0f} s: {sizes} tokens", flush=True)
    torch.manual_seed(recipe.seed)
    model = GPT(recipe.config())
    params = sum(p.numel() for p in model.parameters())
    assert params == num_parameters(model.config)
    optimizer = adamw(model, recipe)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor(recipe))
    start, losses, seconds = 0, [], 0.0
    if ckpt.is_file():
        state = torch.load(ckpt, weights_only=False)
        if state["recipe"] != dataclasses.asdict(recipe):
            raise SystemExit(
                f"{ckpt} holds another recipe's run: --fresh starts over"
            )
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rng"])
        start, losses, seconds = (
            state["step"],
            state["losses"],
            state["seconds"],
        )
        print(f"resumed at step {start}", flush=True)
    if rows_path.is_file():  # rows after the checkpoint are computed again
        rows = [json.loads(x) for x in rows_path.read_text().splitlines()]
        kept = "".join(
            json.dumps(r) + "\n" for r in rows if r["step"] <= start
        )
        rows_path.write_text(kept)
    begun = last_save = tick = time.time()

    def elapsed() -> float:
        return seconds + time.time() - begun

    def save(step: int) -> None:
        nonlocal last_save
        state = {
            "recipe": dataclasses.asdict(recipe),
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": torch.get_rng_state(),
            "step": step,
            "losses": losses,
            "seconds": elapsed(),
        }
        tmp = ckpt.with_suffix(".tmp")
        torch.save(state, tmp)
        tmp.replace(ckpt)  # whole or not at all
        last_save = time.time()

    def hook(step: int, loss: float) -> bool:
        nonlocal tick
        losses.append(loss)
        if step % 50 == 0:
            rate = (time.time() - tick) / 50
            print(f"step {step} loss {loss:.4f} {rate:.2f} s/step", flush=True)
            tick = time.time()
        if step % recipe.eval_every == 0 or step == recipe.steps:
            recent = losses[-recipe.eval_every :]
            row = {
                "step": step,
                "lr": scheduler.get_last_lr()[0],
                "train_loss": sum(recent) / len(recent),
                "train_bpc": train_sample_bpc(model, data, recipe),
                "valid_bpc": bits_per_char(model, data, "valid"),
                "seconds": round(elapsed(), 1),
            }
            with rows_path.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
            tick = time.time()
        out_of_time = (
            args.minutes is not None
            and time.time() - begun > 60 * args.minutes
        ) or step == args.stop_at
        if (
            out_of_time
            or step == recipe.steps
            or time.time() - last_save > 60 * args.every_minutes
        ):
            save(step)
        return out_of_time

    with threads(1):
        train(
            model,
            optimizer,
            Windows(data["ids"]["train"], recipe, start),
            lambda m, batch: m.loss(batch),
            recipe.steps,
            scheduler=scheduler,
            clip=recipe.clip,
            start=start,
            hooks=[hook],
        )
        done = len(losses)
        log = {
            "tag": args.tag,
            "numeric_mode": numeric_mode.stamp(),
            "meta": {
                "what": "tools/train_gpt.py: chapter 11's stored GPT",
                "recipe": dataclasses.asdict(recipe),
                "params": params,
                "data": shakespeare.fingerprint(),
                "tokens": sizes,
                "bits_per_char": "total nats of a split's token stream "
                "(utils.gpt.stream_nats, windows of the context half "
                "overlapping, first token after the separator's tokens) "
                "/ ln 2 / the split's characters",
                "replay_loss": "the first steps' float32 losses, written "
                "shortest: compare as np.float32(stored) == np.float32(live)",
            },
            "steps_done": done,
            "complete": done == recipe.steps,
            "seconds": round(elapsed(), 1),
            "replay_loss": [
                shortest(x) for x in losses[: recipe.replay_steps]
            ],
            "train_loss": [round(x, 4) for x in losses],
        }
        if log["complete"]:
            finish(model, data, recipe, out, log)
    (out / f"{args.tag}_run.json").write_text(json.dumps(log) + "\n")
    state = "complete" if log["complete"] else "stopped; run again to go on"
    print(f"{done} of {recipe.steps} steps ({state}); wrote {out}", flush=True)
    if log["complete"]:
        print({k: v for k, v in log.items() if "bpc" in k}, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for f in dataclasses.fields(Recipe):
        if f.type in ("int", "float"):
            flag = "--" + f.name.replace("_", "-")
            parser.add_argument(flag, dest=f.name, type=eval(f.type))
    parser.add_argument("--minutes", type=float, help="stop after this long")
    parser.add_argument(
        "--every-minutes", type=float, default=5.0, help="checkpoint"
    )
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument(
        "--checkpoint",
        help="default: _build/ch11/ (stored run), else OUT/TAG_checkpoint.pt",
    )
    parser.add_argument("--tag", default="ch11")
    parser.add_argument("--fresh", action="store_true", help="start over")
    parser.add_argument("--stop-at", type=int, help="stop after this step")
    main(parser.parse_args())
