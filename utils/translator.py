"""Chapter 8's translator: one config, the model it describes, its training
run and a cache of that run.

- ``TranslatorConfig``: every setting of the model, the data and the recipe,
  with its default, in one dataclass (as nanoGPT's ``GPTConfig``);
  ``dataclasses.replace(cfg, warmup_steps=1)`` gives a variant.
- ``build_translator(cfg)``: the ``utils.model.Transformer`` it describes,
  with random weights.
- ``train_translator(cfg, splits=None)``: trains one from scratch on the number
  task of ``utils.translation`` (or on the ``splits`` a caller passes),
  deterministically; returns ``(model, history)``.
- ``load_or_train_translator(cfg)``: the same, cached in a file keyed by the
  config, the data and the numeric mode.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import pathlib
import time

import torch

from .checks import check_bool, check_int, check_number, check_probability
from .decoding import greedy_decode
from .model import Transformer
from .runtime import threads
from .training import (
    Progress,
    evaluate_loss,
    load_checkpoint,
    noam_scheduler,
    paper_adam,
    save_checkpoint,
    train_step,
)
from .translation import (
    Vocab,
    balance_by_size,
    encode_batch,
    group_pairs,
    make_batches,
    make_splits,
    source_vocab,
    target_vocab,
)

__all__ = [
    "TranslatorConfig",
    "build_translator",
    "train_translator",
    "load_or_train_translator",
]


@dataclasses.dataclass(frozen=True)
class TranslatorConfig:
    """Every setting of chapter 8's translator, and its default."""

    # the model: a small Post-Norm Transformer
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 1
    d_ff: int = 128
    dropout: float = 0.1
    norm_first: bool = False
    max_len: int = 64
    # the data: sources of at most max_train_words words are trained on;
    # each number size (1-99, 100-999, 1,000-9,999, 10,000+) fills at least
    # min_size_share of an epoch, by repetition
    max_train_words: int = 6
    min_size_share: float = 0.1
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
        for name in ("d_model", "num_heads", "num_layers", "d_ff"):
            check_int(getattr(self, name), name, 1)
        for name in ("max_len", "max_train_words", "warmup_steps"):
            check_int(getattr(self, name), name, 1)
        for name in ("batch_size", "steps", "eval_every", "n_valid_exact"):
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
    if not isinstance(cfg, TranslatorConfig):
        raise TypeError(
            f"cfg must be a TranslatorConfig, got {type(cfg).__name__}"
        )


def build_translator(
    cfg: TranslatorConfig,
    vocab_src: Vocab | None = None,
    vocab_tgt: Vocab | None = None,
) -> Transformer:
    """The Transformer that ``cfg`` describes, with random weights (seed
    torch first for a fixed draw); the vocabularies default to the task's."""
    _check_config(cfg)
    vocab_src = vocab_src or source_vocab()
    vocab_tgt = vocab_tgt or target_vocab()
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
    """Greedy outputs for ``src``; a row is right if it equals any of its
    ``refs`` (the targets of every pair with that source)."""
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
    """The first ``n`` distinct sources of ``pairs`` as pairs, and the
    targets of every pair with each of those sources."""
    refs: dict[tuple, list] = {}
    for src, tgt in pairs:
        key = tuple(src)
        if key in refs or len(refs) < n:
            refs.setdefault(key, []).append(list(tgt))
    return [(list(k), v[0]) for k, v in refs.items()], list(refs.values())


def train_translator(
    cfg: TranslatorConfig,
    splits: dict | None = None,
    device: torch.device | str | None = None,
    progress: bool = True,
    vocabs: tuple[Vocab, Vocab] | None = None,
    checkpoint: str | pathlib.Path | None = None,
    checkpoint_every: int = 500,
    max_seconds: float | None = None,
    init: dict[str, torch.Tensor] | None = None,
    stop_after: int | None = None,
) -> tuple[Transformer, dict]:
    """Train the translator that ``cfg`` describes from scratch,
    deterministically.

    Data: ``splits`` (a dict with ``"train"`` and ``"valid"`` lists of
    ``(source tokens, target tokens)`` pairs; default ``make_splits(cfg.seed,
    cfg.max_train_words)``) and ``vocabs`` (default: the task's). Each epoch
    is the training pairs, balanced by ``balance_by_size``, in
    length-bucketed batches reshuffled per epoch. Optimiser: ``paper_adam``
    with ``noam_scheduler``; loss: label-smoothed cross-entropy. On CPU the
    loop uses one thread (tiny matrices; robust on a busy machine),
    restored after.

    Returns ``(model, history)``; the model is in eval mode on ``device``.
    ``history`` holds per step ``"train_loss"`` and ``"lr"``, every
    ``cfg.eval_every`` steps (and at the last) ``"valid_step"``,
    ``"valid_loss"`` (same smoothing) and ``"valid_exact"`` (greedy exact
    match on the first ``cfg.n_valid_exact`` distinct validation sources,
    right if equal to the target of any pair with that source; decoding
    draws no random numbers, so it leaves the run unchanged), the
    ``"config"`` used and the wall-clock ``"seconds"`` (the only value that
    varies).

    ``checkpoint``: a file that holds the whole state of the run (weights,
    optimiser, schedule, random state, place in the epoch, history), written
    every ``checkpoint_every`` steps and at the end; when it exists, the run
    continues from it and gives the same result as one never stopped.
    ``max_seconds``: stop (saving the checkpoint) after that much time in
    this call; ``len(history["train_loss"]) < cfg.steps`` then.
    ``init``: weights (name -> tensor, a part of the model's state dict,
    e.g. a pre-trained encoder) put over the random ones before training;
    the rest is drawn exactly as without it. ``stop_after``: only the
    first steps of the run (to replay a stored run's beginning).
    """
    _check_config(cfg)
    check_bool(progress, "progress")
    check_int(checkpoint_every, "checkpoint_every", 1)
    if max_seconds is not None:
        check_number(max_seconds, "max_seconds", 0.0)
    if stop_after is not None:
        check_int(stop_after, "stop_after", 1)
    device = torch.device(device if device is not None else "cpu")
    vocab_src, vocab_tgt = vocabs or (source_vocab(), target_vocab())
    if splits is None:
        splits = make_splits(cfg.seed, max_train_words=cfg.max_train_words)
    train = balance_by_size(splits["train"], cfg.min_size_share)
    valid = make_batches(
        splits["valid"], 500, vocab_src, vocab_tgt, seed=None, device=device
    )
    exact_pairs, exact_refs = _first_sources(
        splits["valid"], cfg.n_valid_exact
    )
    exact_src, _ = encode_batch(exact_pairs, vocab_src, vocab_tgt, device)
    pad = vocab_tgt.pad_id

    cpu = device.type == "cpu"
    with threads(1) if cpu else contextlib.nullcontext():
        torch.manual_seed(cfg.seed)
        model = build_translator(cfg, vocab_src, vocab_tgt).to(device)
        if init is not None:
            _load_part(model, init)
        optimizer = paper_adam(model.parameters())
        scheduler = noam_scheduler(
            optimizer,
            cfg.d_model,
            cfg.warmup_steps,
            cfg.factor,
            cfg.warmup,
            cfg.steps,
            cfg.cooldown_steps,
        )
        history = {
            "train_loss": [],
            "lr": [],
            "valid_step": [],
            "valid_loss": [],
            "valid_exact": [],
            "config": dataclasses.asdict(cfg),
        }
        epoch, batches = 0, []
        if checkpoint is not None and pathlib.Path(checkpoint).is_file():
            saved = load_checkpoint(checkpoint, model, optimizer, scheduler)
            if saved["history"]["config"] != history["config"]:
                raise ValueError(f"checkpoint {checkpoint} is of another cfg")
            history, epoch = saved["history"], saved["epoch"]
            if epoch:  # the batches of this epoch not trained on yet
                seed = cfg.seed * 1000 + epoch - 1
                batches = group_pairs(train, cfg.batch_size, seed)[::-1]
                batches = batches[: saved["left"]]
        done = len(history["train_loss"])
        bar = Progress(cfg.steps, "training", enabled=progress)
        bar.update(done)
        before, start = history.pop("seconds", 0.0), time.perf_counter()
        for step in range(done + 1, cfg.steps + 1):
            if not batches:  # a new epoch, in a new order
                seed = cfg.seed * 1000 + epoch
                batches = group_pairs(train, cfg.batch_size, seed)[::-1]
                epoch += 1
            src, tgt = encode_batch(
                batches.pop(), vocab_src, vocab_tgt, device
            )
            history["lr"].append(optimizer.param_groups[0]["lr"])
            loss = train_step(
                model, src, tgt, optimizer, scheduler, cfg.label_smoothing, pad
            )
            history["train_loss"].append(loss)
            if step % cfg.eval_every == 0 or step == cfg.steps:
                history["valid_step"].append(step)
                history["valid_loss"].append(
                    evaluate_loss(model, valid, cfg.label_smoothing, pad)
                )
                history["valid_exact"].append(
                    _exact_match(model, exact_src, exact_refs, vocab_tgt)
                )
            bar.update()
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
                    epoch=epoch,
                    left=len(batches),
                    history={**history, "seconds": before + seconds},
                )
            if late or (stop_after is not None and step >= stop_after):
                break
        bar.close()
        history["seconds"] = before + time.perf_counter() - start
    model.eval()
    return model, history


def _load_part(model: Transformer, init) -> None:
    """Copy ``init``'s tensors into ``model``; every name must exist in it
    with the same shape."""
    if not isinstance(init, dict):
        raise TypeError(f"init must be a dict, got {type(init).__name__}")
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


def _cache_path(cfg, splits, device, vocabs, directory) -> pathlib.Path:
    key = {
        "config": dataclasses.asdict(cfg),
        "numeric": __import__("proof.runtime").runtime.numeric_fingerprint(),
        "device": device.type,
    }
    if splits is not None:  # a caller's own data: its content is the key
        key["splits"] = {k: splits[k] for k in ("train", "valid")}
    if vocabs is not None:
        key["vocabs"] = [v.itos for v in vocabs]
    text = json.dumps(key, sort_keys=True).encode()
    name = hashlib.sha256(text).hexdigest()[:12]
    return pathlib.Path(directory) / f"translator-{name}.pt"


def load_or_train_translator(
    cfg: TranslatorConfig,
    splits: dict | None = None,
    device: torch.device | str | None = None,
    progress: bool = True,
    directory: str | pathlib.Path = ".",
    force: bool = False,
    vocabs: tuple[Vocab, Vocab] | None = None,
) -> tuple[Transformer, dict]:
    """``train_translator(cfg, splits, device, progress, vocabs)``, cached:
    the weights and history are saved to ``directory/translator-<hash>.pt``
    and loaded from there next time.

    The hash covers every field of ``cfg`` (the seed included), the data a
    caller passed, the device type and ``numeric_fingerprint()`` (torch
    version, CPU code path, MKL branch): same key, same file, so chapter 9
    reuses chapter 8's run in one checkout and numeric mode, and retrains
    (deterministically) when it runs alone or in another mode.
    ``force=True`` trains (and rewrites the file) even when a cached run
    exists. ``history["cached"]`` says which happened.
    """
    _check_config(cfg)
    check_bool(force, "force")
    device = torch.device(device if device is not None else "cpu")
    path = _cache_path(cfg, splits, device, vocabs, directory)
    if path.is_file() and not force:
        saved = torch.load(path, map_location="cpu", weights_only=False)
        model = build_translator(cfg, *(vocabs or ()))
        model.load_state_dict(saved["state_dict"])
        model.to(device).eval()
        return model, {**saved["history"], "cached": True}
    model, history = train_translator(cfg, splits, device, progress, vocabs)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    tmp = path.with_suffix(".tmp")  # whole or absent, never half written
    torch.save({"state_dict": state, "history": history}, tmp)
    tmp.replace(path)
    return model, {**history, "cached": False}
