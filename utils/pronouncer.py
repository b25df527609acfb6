"""Chapter 8's pronouncer: its config (like nanoGPT's ``GPTConfig``), the
``Transformer`` it describes and its deterministic training run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import pathlib
import time

import torch
import torch.nn.functional as F
from torch import nn

from .batches import Vocab, encode_batch, group_pairs, make_batches
from .checks import check_bool, check_instance, check_int, check_number
from .checks import check_probability
from .decoding import greedy_decode
from .model import Transformer
from .training import (
    evaluate_loss,
    load_checkpoint,
    noam_scheduler,
    paper_adam,
    save_checkpoint,
    teacher_forced_loss,
    threads,
    train,
)

__all__ = [
    "PronouncerConfig",
    "build_pronouncer",
    "train_pronouncer",
    "Ensemble",
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
    # the retired numbers task's data settings, kept because stored runs
    # record them (tools/numbers_task.py reads them; here min_size_share
    # must be 0: the pairs are trained on as given)
    max_train_words: int = 6
    min_size_share: float = 0.0
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

    def __post_init__(self):
        sizes = ("d_model", "num_heads", "num_layers", "d_ff", "max_len")
        sizes += ("max_train_words", "warmup_steps", "batch_size", "steps")
        for name in (*sizes, "eval_every", "n_valid_exact"):
            check_int(getattr(self, name), name, 1)
        check_int(self.seed, "seed", 0)
        check_int(self.cooldown_steps, "cooldown_steps", 0)
        if self.cooldown_steps >= self.steps:
            raise ValueError(
                f"cooldown_steps must be < steps ({self.steps}), "
                f"got {self.cooldown_steps}"
            )
        check_bool(self.norm_first, "norm_first")
        check_bool(self.warmup, "warmup")
        check_probability(self.dropout, "dropout")
        check_probability(self.label_smoothing, "label_smoothing")
        check_number(self.min_size_share, "min_size_share", 0.0, 0.25)
        check_number(self.factor, "factor", 0.0, min_inclusive=False)


def _check_config(cfg) -> None:
    check_instance(cfg, "cfg", PronouncerConfig)


def build_pronouncer(
    cfg: PronouncerConfig, vocab_src: Vocab, vocab_tgt: Vocab
) -> Transformer:
    """The Transformer ``cfg`` describes, random weights (seed first)."""
    _check_config(cfg)
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


def _exact_match(model, src, refs, vocab_tgt: Vocab) -> float:
    """Share of greedy outputs for ``src`` equal to any of their ``refs``."""
    longest = max(len(t) for targets in refs for t in targets)
    out = greedy_decode(
        model,
        src,
        longest + 3,  # room for EOS, and for an output a little too long
        vocab_tgt.bos_id,
        vocab_tgt.eos_id,
        pad_id=vocab_tgt.pad_id,
    )
    right = sum(
        vocab_tgt.decode(row) in targets
        for row, targets in zip(out.cpu(), refs)
    )
    return right / len(refs)


def _first_sources(pairs, n: int) -> tuple[list, list]:
    """The first ``n`` distinct sources of ``pairs``, with all targets."""
    refs: dict[tuple, list] = {}
    for src, tgt in pairs:
        key = tuple(src)
        if key in refs or len(refs) < n:
            refs.setdefault(key, []).append(list(tgt))
    return [(list(k), v[0]) for k, v in refs.items()], list(refs.values())


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
    the first steps.
    """
    _check_config(cfg)
    if cfg.min_size_share != 0:
        raise ValueError(
            f"cfg.min_size_share must be 0 (balance the pairs before "
            f"passing them), got {cfg.min_size_share}"
        )
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
    device = torch.device(device if device is not None else "cpu")
    vocab_src, vocab_tgt = vocabs
    valid = make_batches(
        splits["valid"], 500, vocab_src, vocab_tgt, seed=None, device=device
    )
    exact_pairs, exact_refs = _first_sources(
        splits["valid"], cfg.n_valid_exact
    )
    exact_src, _ = encode_batch(exact_pairs, vocab_src, vocab_tgt, device)
    pad = vocab_tgt.pad_id

    with threads(1) if device.type == "cpu" else contextlib.nullcontext():
        torch.manual_seed(cfg.seed)
        model = build_pronouncer(cfg, vocab_src, vocab_tgt).to(device)
        if init is not None:
            _load_part(model, init)
        groups, scales = _param_groups(model, init, init_lr)
        optimizer = paper_adam(groups)
        scheduler = noam_scheduler(
            optimizer,
            cfg.d_model,
            cfg.warmup_steps,
            cfg.factor,
            cfg.warmup,
            cfg.steps,
            cfg.cooldown_steps,
            scales,
        )
        history = {
            "train_loss": [],
            "lr": [],
            "valid_step": [],
            "valid_loss": [],
            "valid_exact": [],
            "config": dataclasses.asdict(cfg),
        }
        place = {"epoch": 0, "batches": []}  # the epoch, its batches left
        if checkpoint is not None and pathlib.Path(checkpoint).is_file():
            saved = load_checkpoint(checkpoint, model, optimizer, scheduler)
            if saved["history"]["config"] != history["config"]:
                raise ValueError(f"checkpoint {checkpoint} is of another cfg")
            history, place["epoch"] = saved["history"], saved["epoch"]
            if place["epoch"]:  # the batches of this epoch not trained on yet
                seed = cfg.seed * 1000 + place["epoch"] - 1
                batches = group_pairs(splits["train"], cfg.batch_size, seed)
                place["batches"] = batches[::-1][: saved["left"]]
        before, start = history.pop("seconds", 0.0), time.perf_counter()

        def batches():  # epoch after epoch, each in a new order
            while True:
                if not place["batches"]:
                    seed = cfg.seed * 1000 + place["epoch"]
                    groups = group_pairs(splits["train"], cfg.batch_size, seed)
                    place["batches"] = groups[::-1]
                    place["epoch"] += 1
                pairs = place["batches"].pop()
                yield encode_batch(pairs, vocab_src, vocab_tgt, device)

        def loss_fn(model, batch):  # and the rate this step is taken at
            history["lr"].append(optimizer.param_groups[0]["lr"])
            return teacher_forced_loss(model, batch, cfg.label_smoothing, pad)

        def evaluate(step: int, loss: float) -> None:
            history["train_loss"].append(loss)
            if step % cfg.eval_every == 0 or step == cfg.steps:
                history["valid_step"].append(step)
                history["valid_loss"].append(
                    evaluate_loss(model, valid, cfg.label_smoothing, pad)
                )
                history["valid_exact"].append(
                    _exact_match(model, exact_src, exact_refs, vocab_tgt)
                )

        def save_or_stop(step: int, loss: float) -> bool:
            late = max_seconds is not None and (
                time.perf_counter() - start > max_seconds
            )
            if checkpoint is not None and (
                step % checkpoint_every == 0 or step == cfg.steps or late
            ):
                seconds = time.perf_counter() - start
                save_checkpoint(
                    checkpoint,
                    model,
                    optimizer,
                    scheduler,
                    epoch=place["epoch"],
                    left=len(place["batches"]),
                    history={**history, "seconds": before + seconds},
                )
            return late or (stop_after is not None and step >= stop_after)

        train(
            model,
            optimizer,
            batches(),
            loss_fn,
            cfg.steps,
            scheduler=scheduler,
            start=len(history["train_loss"]),
            hooks=(evaluate, save_or_stop),
            progress=progress,
        )
        history["seconds"] = before + time.perf_counter() - start
    model.requires_grad_(True)  # a frozen part stays frozen only in training
    model.eval()
    return model, history


def _param_groups(model: Transformer, init, init_lr: float):
    """The optimiser's groups: the new weights at the full rate, ``init``'s
    at ``init_lr`` of it (frozen at 0), as practitioners fine-tune."""
    if init is None or init_lr == 1.0:
        return model.parameters(), None
    new, old = [], []
    for name, p in model.named_parameters():
        (old if name in init else new).append(p)
    if init_lr == 0.0:
        for p in old:
            p.requires_grad_(False)
        return new, None
    return [{"params": new}, {"params": old}], (1.0, init_lr)


def _load_part(model: Transformer, init) -> None:
    """Copy ``init``'s tensors into ``model`` (names, shapes must match)."""
    check_instance(init, "init", dict)
    state = model.state_dict()
    unknown = sorted(set(init) - set(state))
    if unknown:
        raise ValueError(f"init has names the model lacks: {unknown[:3]}")
    for name, value in init.items():
        if tuple(value.shape) != tuple(state[name].shape):
            raise ValueError(
                f"init[{name!r}] has shape {tuple(value.shape)}, "
                f"the model's is {tuple(state[name].shape)}"
            )
    model.load_state_dict({**state, **init})


class _Caches(list):
    """The members' key/value caches, grown and reordered together."""

    @property
    def length(self) -> int:
        return self[0].length

    def reorder(self, rows: torch.Tensor) -> None:
        for cache in self:
            cache.reorder(rows)


class Ensemble(nn.Module):
    """Trained Transformers as one model: the mean of their next-token
    probabilities. The members' states sit side by side on the last axis,
    so ``utils.decoding`` (greedy, beam) decodes it unchanged."""

    def __init__(self, members) -> None:
        super().__init__()
        ok = isinstance(members, (list, tuple)) and len(members) > 0
        if not ok or not all(isinstance(m, Transformer) for m in members):
            kinds = [type(m).__name__ for m in members] if ok else members
            raise TypeError(f"members must be a list of Transformers: {kinds}")
        sizes = {(m.generator.out_features, m.pad_id) for m in members}
        if len(sizes) > 1:
            raise ValueError(
                f"members must share the output vocabulary "
                f"and PAD, got (size, pad) {sorted(sizes)}"
            )
        self.members = nn.ModuleList(members)
        self.widths = [m.d_model for m in members]

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """src ``(B, S)`` -> memories ``(B, S, sum of d_model)``, mask."""
        out = [m.encode(src) for m in self.members]
        return torch.cat([memory for memory, _ in out], dim=-1), out[0][1]

    def decode(self, tgt, memory, src_mask, cache=None) -> torch.Tensor:
        """-> each member's states, side by side ``(B, T, sum of d_model)``;
        ``cache``: ``start_cache()``'s, one per member."""
        caches = cache if cache is not None else [None] * len(self.members)
        parts = zip(self.members, memory.split(self.widths, dim=-1), caches)
        states = [m.decode(tgt, x, src_mask, cache=c) for m, x, c in parts]
        return torch.cat(states, dim=-1)

    def start_cache(self) -> _Caches:
        return _Caches(m.start_cache() for m in self.members)

    def generator(self, states: torch.Tensor) -> torch.Tensor:
        """-> log of the members' mean probability ``(..., V)``."""
        parts = zip(self.members, states.split(self.widths, dim=-1))
        logs = [F.log_softmax(m.generator(x).float(), -1) for m, x in parts]
        return torch.logsumexp(torch.stack(logs), dim=0) - math.log(len(logs))
