"""Chapter 8's pronouncer: its config (like nanoGPT's ``GPTConfig``), the
``Transformer`` it describes, its deterministic training run and the stored
model (``load_pronouncer``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import pathlib
from functools import partial

import torch

from .batches import Vocab, encode_batch, group_pairs, make_batches
from .batches import source_blocks
from .checks import check_bool, check_instance, check_int, check_number
from .checks import check_probability
from .decoding import greedy_decode
from .model import Transformer
from .parallel import DataParallel, Resumable, World, split_parts
from .finetuning import load_part, param_groups
from .pronunciation import letter_vocab, phoneme_vocab
from .training import (
    evaluate_loss,
    linear_scheduler,
    noam_scheduler,
    paper_adam,
    teacher_forced_loss,
    threads,
    train,
)

__all__ = [
    "PronouncerConfig",
    "build_pronouncer",
    "train_pronouncer",
    "load_pronouncer",
    "STORED_PRONOUNCER",
]


@dataclasses.dataclass(frozen=True)
class PronouncerConfig:
    """Every setting of chapter 8's pronouncer, and its default."""

    # the model: a small Post-Norm Transformer
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 1
    d_ff: int = 128
    dropout: float = 0.1
    norm_first: bool = False
    max_len: int = 64
    # the recipe: label-smoothed loss, paper_adam, the warm-up schedule
    # (warmup=False: the same peak and decay, without the ramp)
    label_smoothing: float = 0.1
    warmup_steps: int = 100
    warmup: bool = True
    factor: float = 0.5
    # the last cooldown_steps steps: the rate falls linearly towards 0
    cooldown_steps: int = 0
    batch_size: int = 128
    steps: int = 600
    seed: int = 0
    # every eval_every steps: validation loss, and greedy exact match on
    # the first n_valid_exact validation pairs
    eval_every: int = 50
    n_valid_exact: int = 200
    # the public recipes' schedule instead of the paper's: peak_lr > 0
    # rises linearly over warmup_steps, then falls linearly to 0 at steps
    peak_lr: float = dataclasses.field(default=0.0, repr=False)
    # clip > 0: the gradient's norm clipped to it before each step
    clip: float = dataclasses.field(default=0.0, repr=False)
    # each batch computed in parts, the step taken on their mean gradient
    # (utils.parallel: what `parts` data-parallel processes compute)
    parts: int = dataclasses.field(default=1, repr=False)
    # n_train_exact > 0: greedy exact match on that many training words too
    n_train_exact: int = dataclasses.field(default=0, repr=False)
    # not a field: the retired numbers task's data settings, which every
    # stored record holds at these values (as_dict writes, from_dict takes)
    RETIRED = {"max_train_words": 6, "min_size_share": 0.0}

    def __post_init__(self):
        sizes = ("d_model", "num_heads", "num_layers", "d_ff", "max_len")
        sizes += ("warmup_steps", "batch_size", "steps")
        for name in (*sizes, "eval_every", "n_valid_exact", "parts"):
            check_int(getattr(self, name), name, 1)
        for name in ("seed", "cooldown_steps", "n_train_exact"):
            check_int(getattr(self, name), name, 0)
        if self.cooldown_steps >= self.steps:
            raise ValueError(
                f"cooldown_steps must be < steps ({self.steps}), "
                f"got {self.cooldown_steps}"
            )
        check_bool(self.norm_first, "norm_first")
        check_bool(self.warmup, "warmup")
        check_probability(self.dropout, "dropout")
        check_probability(self.label_smoothing, "label_smoothing")
        check_number(self.factor, "factor", 0.0, min_inclusive=False)
        check_number(self.peak_lr, "peak_lr", 0.0)
        check_number(self.clip, "clip", 0.0)
        if self.peak_lr and self.cooldown_steps:
            raise ValueError(
                "peak_lr's schedule decays over the whole run: "
                f"cooldown_steps must be 0, got {self.cooldown_steps}"
            )
        check_int(self.batch_size, "batch_size (at least parts)", self.parts)

    def as_dict(self) -> dict:
        """The settings as stored runs record them, ``RETIRED`` included:
        the public recipe's fields (``peak_lr`` to ``n_train_exact``) are
        left out while at their defaults, so older records still match."""
        out = {**self.RETIRED, **dataclasses.asdict(self)}
        for f in dataclasses.fields(self)[-4:]:
            if out[f.name] == f.default:
                del out[f.name]
        return out

    @classmethod
    def from_dict(cls, record: dict) -> PronouncerConfig:
        """The config of a stored record (``as_dict``'s form): its
        ``RETIRED`` settings must hold their values, other keys be fields."""
        record = dict(check_instance(record, "record", dict))
        old = {k: record.pop(k) for k in cls.RETIRED if k in record}
        if any(v != cls.RETIRED[k] for k, v in old.items()):
            raise ValueError(f"record's retired {old} must be {cls.RETIRED}")
        return cls(**record)


def build_pronouncer(
    cfg: PronouncerConfig, vocab_src: Vocab, vocab_tgt: Vocab
) -> Transformer:
    """The Transformer ``cfg`` describes, random weights (seed first)."""
    check_instance(cfg, "cfg", PronouncerConfig)
    return Transformer(
        len(vocab_src),
        len(vocab_tgt),
        d_model=cfg.d_model,
        num_heads=cfg.num_heads,
        num_layers=cfg.num_layers,
        d_ff=cfg.d_ff,
        dropout=cfg.dropout,
        pad_id=vocab_src.pad_id,
        max_len=cfg.max_len,
        norm_first=cfg.norm_first,
    )


def _right(model, src, refs, vocab_tgt: Vocab) -> int:
    """How many greedy outputs for ``src`` equal one of their ``refs``."""
    longest = max(len(t) for targets in refs for t in targets)
    out = greedy_decode(
        model,
        src,
        longest + 3,  # room for EOS, and for an output a little too long
        vocab_tgt.bos_id,
        vocab_tgt.eos_id,
        pad_id=vocab_tgt.pad_id,
    )
    return sum(
        vocab_tgt.decode(row) in targets
        for row, targets in zip(out.cpu(), refs)
    )


def train_pronouncer(
    cfg: PronouncerConfig,
    splits: dict,
    vocabs: tuple[Vocab, Vocab],
    device: torch.device | str | None = None,
    progress: bool = True,
    checkpoint: str | pathlib.Path | None = None,
    checkpoint_every: int = 500,
    max_seconds: float | None = None,
    init: dict[str, torch.Tensor] | None = None,
    stop_after: int | None = None,
    init_lr: float = 1.0,
    world: World | None = None,
    hooks=(),
    loss=None,
) -> tuple[Transformer, dict]:
    """Train ``cfg``'s pronouncer from scratch, deterministically ->
    ``(model in eval mode, history)``.

    ``splits``: ``"train"``, ``"valid"`` (source, target) pairs; ``vocabs``:
    (source, target). ``history``: per step ``"train_loss"``, ``"lr"``;
    every ``cfg.eval_every`` steps ``"valid_step"``, ``"valid_loss"``,
    ``"valid_exact"`` (greedy, any target right); ``"config"``,
    ``"seconds"``. ``checkpoint``: saved every ``checkpoint_every`` steps,
    continued if present (same result). ``max_seconds``: stop and save.
    ``init``: name -> tensor over the random weights; ``init_lr``: their
    rate as a share of the others' (0 freezes them). ``stop_after``: only
    the first steps. ``world``: this process's place among ``cfg.parts``
    data-parallel processes (``utils.parallel``; they share the
    validation, process 0 saves); alone, a process computes every part in
    turn, to the same bits. Each ``hook(model, step, loss)`` runs after
    every step (after the validation and the checkpoint). ``loss(model,
    batch)``: the training loss instead of the label-smoothed cross-entropy
    (validation still scores that).
    """
    check_instance(cfg, "cfg", PronouncerConfig)
    check_int(checkpoint_every, "checkpoint_every", 1)
    if max_seconds is not None:
        check_number(max_seconds, "max_seconds", 0.0)
    if stop_after is not None:
        check_int(stop_after, "stop_after", 1)
    check_number(init_lr, "init_lr", 0.0, 1.0)
    if init_lr != 1.0 and init is None:
        raise ValueError(
            f"init_lr={init_lr!r} needs init (the weights it slows)"
        )
    world = World() if world is None else check_instance(world, "world", World)
    world.mine(cfg.parts)  # the parts must fit the processes
    device = torch.device(device if device is not None else "cpu")
    vocab_src, vocab_tgt = vocabs
    valid = make_batches(
        splits["valid"], 500, vocab_src, vocab_tgt, seed=None, device=device
    )
    block = 250 if cfg.parts > 1 else None  # the processes share blocks
    exact = {  # greedy exact match on the first distinct sources
        key: source_blocks(splits[part], n, block, vocabs, device)
        for key, part, n in (
            ("valid_exact", "valid", cfg.n_valid_exact),
            ("train_exact", "train", cfg.n_train_exact),
        )
        if n
    }
    pad = vocab_tgt.pad_id

    with threads(1) if device.type == "cpu" else contextlib.nullcontext():
        torch.manual_seed(cfg.seed)
        model = build_pronouncer(cfg, vocab_src, vocab_tgt).to(device)
        if init is not None:
            load_part(model, init)
        groups, scales = param_groups(model, init, init_lr)
        optimizer, scheduler = _optimizer(cfg, groups, scales)
        parallel = None
        if cfg.parts > 1:
            parallel = DataParallel(cfg.parts, cfg.seed * cfg.parts, world)
        world.broadcast(model)  # every process starts from process 0's
        history = {
            "train_loss": [],
            "lr": [],
            "valid_step": [],
            "valid_loss": [],
            "valid_exact": [],
            "config": cfg.as_dict(),
        }
        place = {"epoch": 0, "batches": []}  # the epoch, its batches left
        run = Resumable(
            checkpoint,
            model,
            optimizer,
            scheduler,
            steps=cfg.steps,
            every=checkpoint_every,
            max_seconds=max_seconds,
            world=world,
            parallel=parallel,
        )
        saved = run.resume()
        if saved is not None:
            if saved["history"]["config"] != history["config"]:
                raise ValueError(f"checkpoint {checkpoint} is of another cfg")
            history, place["epoch"] = saved["history"], saved["epoch"]
            if place["epoch"]:  # the batches of this epoch not trained on yet
                seed = cfg.seed * 1000 + place["epoch"] - 1
                batches = group_pairs(splits["train"], cfg.batch_size, seed)
                place["batches"] = batches[::-1][: saved["left"]]
        before = history.pop("seconds", 0.0)

        def batches():  # epoch after epoch, each in a new order
            while True:
                if not place["batches"]:
                    seed = cfg.seed * 1000 + place["epoch"]
                    groups = group_pairs(splits["train"], cfg.batch_size, seed)
                    place["batches"] = groups[::-1]
                    place["epoch"] += 1
                pairs = place["batches"].pop()
                history["lr"].append(optimizer.param_groups[0]["lr"])
                if parallel is None:
                    yield encode_batch(pairs, vocab_src, vocab_tgt, device)
                    continue
                parts = split_parts(pairs, cfg.parts)
                yield {
                    i: encode_batch(parts[i], vocab_src, vocab_tgt, device)
                    for i in world.mine(cfg.parts)
                }

        def loss_fn(model, batch):
            if loss is not None:
                return loss(model, batch)
            return teacher_forced_loss(model, batch, cfg.label_smoothing, pad)

        def evaluate(step: int, loss: float) -> None:
            history["train_loss"].append(loss)
            if step % cfg.eval_every == 0 or step == cfg.steps:
                history["valid_step"].append(step)
                history["valid_loss"].append(
                    evaluate_loss(model, valid, cfg.label_smoothing, pad)
                )
                for key, blocks in exact.items():
                    right = world.map(
                        lambda b: _right(model, *b, vocab_tgt), blocks
                    )
                    words = sum(len(refs) for _, refs in blocks)
                    history.setdefault(key, []).append(sum(right) / words)

        save = run.hook(
            lambda: {
                "epoch": place["epoch"],
                "left": len(place["batches"]),
                "history": {**history, "seconds": before + run.seconds},
            }
        )

        def stop(step: int, loss: float) -> bool:
            return stop_after is not None and step >= stop_after

        train(
            model,
            optimizer,
            batches(),
            loss_fn,
            cfg.steps,
            scheduler=scheduler,
            clip=cfg.clip or None,
            start=len(history["train_loss"]),
            hooks=(evaluate, save, *[partial(h, model) for h in hooks], stop),
            progress=progress and world.rank == 0,
            parallel=parallel,
        )
        history["seconds"] = before + run.seconds
    model.requires_grad_(True)  # a frozen part stays frozen only in training
    model.eval()
    return model, history


def _optimizer(cfg: PronouncerConfig, groups, scales):
    """The paper's Adam with the paper's schedule, or with the public
    recipes' (``cfg.peak_lr > 0``: up, then linearly down to 0)."""
    optimizer = paper_adam(groups, lr=cfg.peak_lr or 1.0)
    if cfg.peak_lr:
        steps = (cfg.warmup_steps, cfg.steps)
        return optimizer, linear_scheduler(optimizer, *steps, scales)
    return optimizer, noam_scheduler(
        optimizer, cfg.d_model, cfg.warmup_steps, cfg.factor, cfg.warmup,
        cfg.steps, cfg.cooldown_steps, scales,
    )  # fmt: skip


# the stored pronouncer, put there by tools/runs/train_pronouncer.py --store
# (its log: book/data/pronouncer.json); the first recipe's seven runs, s0/
# to s6/, are chapter 8's ensemble and its student's teacher
_DATA = pathlib.Path(__file__).resolve().parents[1] / "book" / "data"
STORED_PRONOUNCER = _DATA / "pronouncer.pt"
SEEDS_DIR = _DATA / "pronouncer_seeds"


def load_pronouncer(path=STORED_PRONOUNCER, device=None):
    """A stored pronouncer -> ``(model, cfg, stress)``, in eval mode. Its
    config records ``"stress"`` (whether the phonemes keep their stress
    digits); files older than that key were all trained without (False)."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no pronouncer at {path}: python -m tools.runs.train_pronouncer"
        )
    stored = torch.load(path, map_location="cpu", weights_only=True)
    record = dict(stored["config"])
    stress = check_bool(record.pop("stress", False), f"{path}'s stress")
    cfg = PronouncerConfig.from_dict(record)
    weights = {k: v.float() for k, v in stored["state_dict"].items()}
    vocab, n_out = phoneme_vocab(stress), weights["generator.weight"].size(0)
    if n_out != len(vocab):
        raise ValueError(
            f"{path} has {n_out} outputs, stress={stress} needs {len(vocab)}"
            ": its config must record the stress it was trained with"
        )
    model = build_pronouncer(cfg, letter_vocab(), vocab)
    model.load_state_dict(weights)
    return model.to(device or "cpu").eval(), cfg, stress
