"""Training helpers: the warm-up schedule, the paper's Adam, a generic loop,
the translator.

- ``noam_lr(step, d_model, warmup_steps, factor)``: the schedule of Vaswani et
  al. (2017), ``factor * d_model^-0.5 * min(step^-0.5, step *
  warmup_steps^-1.5)`` (linear rise, then ``step^-0.5`` decay);
  ``noam_scheduler`` wraps it in a ``LambdaLR``.
- ``paper_adam(params)``: Adam with betas (0.9, 0.98) and eps 1e-9, as in the
  paper.
- ``train_step`` / ``evaluate_loss`` / ``evaluate_perplexity``: one
  teacher-forced update and held-out scores (the evaluators restore the
  train/eval mode they found).
- ``Progress``: a progress bar that a notebook stores as one final line of at
  most 79 columns.
- ``train_translator`` / ``load_or_train_translator``: chapter 8's model on the
  number task of ``utils.translation``, trained deterministically, cached in a
  file keyed by its settings.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import pathlib
import sys
import time
from typing import Iterable

import torch
from torch import nn

from .checks import check_int, check_number
from .decoding import greedy_decode
from .loss import masked_cross_entropy
from .model import Transformer
from .runtime import course_seed, evaluating, numeric_fingerprint, threads
from .translation import (
    Vocab,
    encode_batch,
    group_pairs,
    make_batches,
    make_splits,
    source_vocab,
    target_vocab,
)

__all__ = [
    "noam_lr",
    "noam_scheduler",
    "paper_adam",
    "train_step",
    "evaluate_loss",
    "evaluate_perplexity",
    "Progress",
    "TRANSLATOR_DEFAULTS",
    "new_translator",
    "train_translator",
    "load_or_train_translator",
]


def noam_lr(
    step: int, d_model: int, warmup_steps: int, factor: float = 1.0
) -> float:
    """Learning rate at ``step`` (counted from 1): rises linearly to
    ``warmup_steps``, then decays.

    ``factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)``;
    the peak, at ``step == warmup_steps``, is ``factor / sqrt(d_model *
    warmup_steps)``.
    """
    check_int(step, "step", 1)
    check_int(d_model, "d_model", 1)
    check_int(warmup_steps, "warmup_steps", 1)
    factor = check_number(factor, "factor")
    if not factor > 0:
        raise ValueError(f"factor must be > 0, got {factor!r}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def noam_scheduler(
    optimizer: torch.optim.Optimizer,
    d_model: int,
    warmup_steps: int,
    factor: float = 1.0,
) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` that sets every group's learning rate to ``noam_lr``
    exactly.

    ``LambdaLR`` multiplies each group's initial lr by the lambda and counts
    from 0, so the lambda divides by that initial lr and shifts the count by
    one (the formula starts at 1). Call ``scheduler.step()`` after each
    ``optimizer.step()``.
    """
    noam_lr(
        1, d_model, warmup_steps, factor
    )  # validate now, not at the first step
    lambdas = []
    for group in optimizer.param_groups:
        base = group["lr"]
        if not base > 0:
            raise ValueError(
                f"the optimizer's lr must be > 0 (it is divided out), "
                f"got {base!r}"
            )
        lambdas.append(
            lambda i, base=base: (
                noam_lr(i + 1, d_model, warmup_steps, factor) / base
            )
        )
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambdas)


def paper_adam(params, lr: float = 1.0) -> torch.optim.Adam:
    """Adam with the paper's betas (0.9, 0.98) and eps 1e-9; a scheduler
    overwrites ``lr``."""
    return torch.optim.Adam(params, lr=lr, betas=(0.9, 0.98), eps=1e-9)


def _check_batch(src, tgt) -> None:
    for name, t in (("src", src), ("tgt", tgt)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(
                f"{name} must be a tensor of ids, got {type(t).__name__}"
            )
        if t.dtype.is_floating_point or t.dtype == torch.bool:
            raise TypeError(
                f"{name} must hold integer ids, got dtype {t.dtype}"
            )
    if tgt.dim() != 2 or tgt.size(1) < 2:
        raise ValueError(
            f"tgt must be (batch, length >= 2) with BOS first, "
            f"got {tuple(tgt.shape)}"
        )


def train_step(
    model: nn.Module,
    src: torch.Tensor,
    tgt: torch.Tensor,
    optimizer: torch.optim.Optimizer,
    scheduler=None,
    label_smoothing: float = 0.0,
    pad_id: int = 0,
) -> float:
    """One teacher-forced update (all target positions in parallel). Returns
    the loss.

    The model is put in train mode (dropout on): that is what a training step
    means.
    """
    _check_batch(src, tgt)
    model.train()
    dec_in, dec_out = tgt[:, :-1], tgt[:, 1:]  # shifted right / the answers
    logits = model(src, dec_in)  # (B, T, V)
    loss = masked_cross_entropy(
        logits, dec_out, dec_out != pad_id, label_smoothing
    )
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss.item()


def evaluate_loss(
    model: nn.Module,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    label_smoothing: float = 0.0,
    pad_id: int = 0,
) -> float:
    """Mean cross-entropy per real target token over ``batches``,
    teacher-forced, dropout off.

    Every token weighs the same (batches are summed, not averaged). The model's
    train/eval mode is restored afterwards.
    """
    check_number(label_smoothing, "label_smoothing", 0.0, 1.0)
    total = count = 0.0
    with evaluating(model):
        for src, tgt in batches:
            _check_batch(src, tgt)
            dec_in, dec_out = tgt[:, :-1], tgt[:, 1:]
            real = dec_out != pad_id
            n = int(real.sum())
            loss = masked_cross_entropy(
                model(src, dec_in), dec_out, real, label_smoothing
            )
            total += loss.item() * n
            count += n
    if count == 0:
        raise ValueError("batches hold no real target token")
    return total / count


def evaluate_perplexity(
    model: nn.Module,
    batches: Iterable[tuple[torch.Tensor, torch.Tensor]],
    pad_id: int = 0,
) -> float:
    """``exp`` of the unsmoothed mean cross-entropy per real target token
    (``evaluate_loss``)."""
    return math.exp(evaluate_loss(model, batches, 0.0, pad_id))


class Progress:
    """A progress bar for loops, stored by a notebook as ONE line of at most 79
    columns.

    In a Jupyter kernel it is a display that is updated in place (so the saved
    notebook keeps only its final state); elsewhere it writes tqdm's line to
    stderr. ``update(n=1)`` advances; ``close()`` draws the final line.
    ``enabled=False`` shows nothing.
    """

    def __init__(
        self,
        total: int,
        desc: str = "training",
        enabled: bool = True,
        ncols: int = 79,
        every: float = 0.5,
    ):
        check_int(total, "total", 1)
        self.total, self.desc, self.enabled, self.ncols, self.every = (
            total,
            desc,
            enabled,
            ncols,
            every,
        )
        self.n, self.start, self.last = 0, time.perf_counter(), -math.inf
        self._handle = self._bar = None
        if not enabled:
            return
        try:
            from IPython import get_ipython
            from IPython.display import Pretty, display

            in_kernel = get_ipython() is not None and hasattr(
                get_ipython(), "kernel"
            )
        except ImportError:
            in_kernel = False
        if in_kernel:
            self._pretty = Pretty
            self._handle = display(Pretty(self.line()), display_id=True)
        else:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=desc,
                ncols=ncols,
                ascii=True,
                file=sys.stderr,
            )

    def line(self) -> str:
        """The bar as text, e.g. ``training: 100%|####| 900/900 [00:20<00:00,
        45.0it/s]``."""
        from tqdm import tqdm

        return tqdm.format_meter(
            self.n,
            self.total,
            time.perf_counter() - self.start,
            ncols=self.ncols,
            prefix=self.desc,
            ascii=True,
        )

    def update(self, n: int = 1) -> None:
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        elif (
            self._handle is not None
            and time.perf_counter() - self.last > self.every
        ):
            self.last = time.perf_counter()
            self._handle.update(self._pretty(self.line()))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self._handle is not None:
            self._handle.update(self._pretty(self.line()))


# How many validation pairs the training loop decodes for its exact-match
# curve.
VALID_EXACT = 200

# The settings of chapter 8's translator; every key is an argument of
# train_translator.
TRANSLATOR_DEFAULTS = dict(
    steps=400,
    batch_size=128,
    d_model=64,
    num_heads=4,
    num_layers=2,
    d_ff=128,
    dropout=0.1,
    label_smoothing=0.1,
    warmup_steps=100,
    factor=1.0,
    eval_every=50,
    max_train_words=6,
    norm_first=False,
)


def new_translator(
    vocab_src: Vocab,
    vocab_tgt: Vocab,
    d_model: int = 64,
    num_heads: int = 4,
    num_layers: int = 2,
    d_ff: int = 128,
    dropout: float = 0.1,
    norm_first: bool = False,
) -> Transformer:
    """The chapter's model: a small ``utils.model.Transformer`` (random
    weights)."""
    return Transformer(
        len(vocab_src),
        len(vocab_tgt),
        d_model=d_model,
        num_heads=num_heads,
        num_layers=num_layers,
        d_ff=d_ff,
        dropout=dropout,
        pad_id=vocab_src.pad_id,
        max_len=64,
        norm_first=norm_first,
    )


def _translator_from(
    cfg: dict, vocab_src: Vocab, vocab_tgt: Vocab
) -> Transformer:
    """``new_translator`` with the model settings of a training config."""
    keys = (
        "d_model",
        "num_heads",
        "num_layers",
        "d_ff",
        "dropout",
        "norm_first",
    )
    return new_translator(vocab_src, vocab_tgt, *(cfg[k] for k in keys))


def train_translator(
    steps: int = TRANSLATOR_DEFAULTS["steps"],
    seed: int = 0,
    device: torch.device | str | None = None,
    progress: bool = True,
    **settings,
) -> tuple[Transformer, Vocab, Vocab, dict]:
    """Train the number translator of ``utils.translation`` from scratch,
    deterministically.

    ``settings`` override ``TRANSLATOR_DEFAULTS`` (batch_size, d_model,
    num_heads, num_layers, d_ff, dropout, label_smoothing, warmup_steps,
    factor, eval_every, max_train_words). Data: ``make_splits(seed)``; epochs
    of length-bucketed batches, reshuffled per epoch. Optimiser: ``paper_adam``
    with ``noam_scheduler``; loss: label-smoothed cross-entropy. On CPU the
    loop uses one thread (tiny matrices; robust on a busy machine), restored
    after.

    Returns ``(model, vocab_src, vocab_tgt, history)``; the model is in eval
    mode on ``device``. ``history`` holds per step ``"train_loss"`` and
    ``"lr"``, every ``eval_every`` steps ``"valid_step"``, ``"valid_loss"``
    (same smoothing) and ``"valid_exact"`` (greedy exact match on the first
    ``VALID_EXACT`` validation pairs; decoding draws no random numbers, so it
    leaves the training run unchanged), the ``"settings"`` used and the
    wall-clock ``"seconds"`` (the only value that varies).
    """
    unknown = set(settings) - set(TRANSLATOR_DEFAULTS)
    if unknown:
        raise TypeError(
            f"unknown settings {sorted(unknown)}; "
            f"known: {sorted(TRANSLATOR_DEFAULTS)}"
        )
    cfg = {**TRANSLATOR_DEFAULTS, **settings, "steps": steps}
    check_int(steps, "steps", 1)
    check_int(seed, "seed", 0)
    for key in ("batch_size", "warmup_steps", "eval_every"):
        check_int(cfg[key], key, 1)
    device = (
        torch.device(device) if device is not None else torch.device("cpu")
    )
    vocab_src, vocab_tgt = source_vocab(), target_vocab()
    splits = make_splits(seed, max_train_words=cfg["max_train_words"])
    valid = make_batches(
        splits["valid"], 500, vocab_src, vocab_tgt, seed=None, device=device
    )
    exact_pairs = splits["valid"][:VALID_EXACT]
    exact_src, _ = encode_batch(exact_pairs, vocab_src, vocab_tgt, device)

    one_thread = (
        threads(1) if device.type == "cpu" else contextlib.nullcontext()
    )
    with one_thread:
        torch.manual_seed(seed)
        model = _translator_from(cfg, vocab_src, vocab_tgt).to(device)
        optimizer = paper_adam(model.parameters())
        scheduler = noam_scheduler(
            optimizer, cfg["d_model"], cfg["warmup_steps"], cfg["factor"]
        )
        history = {
            "train_loss": [],
            "lr": [],
            "valid_step": [],
            "valid_loss": [],
            "valid_exact": [],
            "settings": {**cfg, "seed": seed},
        }
        bar = Progress(steps, "training", enabled=progress)
        start, epoch, batches = time.perf_counter(), 0, []
        for step in range(1, steps + 1):
            if not batches:
                batches = group_pairs(
                    splits["train"],
                    cfg["batch_size"],
                    seed=seed * 1000 + epoch,
                )[::-1]
                epoch += 1
            src, tgt = encode_batch(
                batches.pop(), vocab_src, vocab_tgt, device
            )
            history["lr"].append(optimizer.param_groups[0]["lr"])
            history["train_loss"].append(
                train_step(
                    model,
                    src,
                    tgt,
                    optimizer,
                    scheduler,
                    cfg["label_smoothing"],
                    vocab_tgt.pad_id,
                )
            )
            if step % cfg["eval_every"] == 0 or step == steps:
                history["valid_step"].append(step)
                history["valid_loss"].append(
                    evaluate_loss(
                        model, valid, cfg["label_smoothing"], vocab_tgt.pad_id
                    )
                )
                out = greedy_decode(
                    model,
                    exact_src,
                    12,  # the longest target has 9 characters, plus EOS
                    vocab_tgt.bos_id,
                    vocab_tgt.eos_id,
                    pad_id=vocab_tgt.pad_id,
                )
                right = sum(
                    vocab_tgt.decode(row) == list(tgt)
                    for row, (_, tgt) in zip(out.cpu(), exact_pairs)
                )
                history["valid_exact"].append(right / len(exact_pairs))
            bar.update()
        bar.close()
        history["seconds"] = time.perf_counter() - start
    model.eval()
    return model, vocab_src, vocab_tgt, history


def _cache_path(
    directory, steps: int, seed: int, settings: dict, device=None
) -> pathlib.Path:
    cfg = {**TRANSLATOR_DEFAULTS, **settings, "steps": steps, "seed": seed}
    cfg["numeric"] = numeric_fingerprint()
    cfg["device"] = torch.device(device if device is not None else "cpu").type
    key = hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[
        :12
    ]
    return pathlib.Path(directory) / f"translator-{key}.pt"


def load_or_train_translator(
    steps: int = TRANSLATOR_DEFAULTS["steps"],
    seed: int | None = None,
    device: torch.device | str | None = None,
    progress: bool = True,
    directory: str | pathlib.Path = ".",
    force: bool = False,
    **settings,
) -> tuple[Transformer, Vocab, Vocab, dict]:
    """``train_translator(...)``, cached: the weights and history are saved to
    ``directory/translator-<hash>.pt`` and loaded from there next time.

    The hash covers the settings, the seed (``None``: ``course_seed()``), the
    device type and ``numeric_fingerprint()`` (torch version, CPU code path,
    MKL branch, threads): same key, same file, so chapter 9 reuses chapter 8's
    run in one checkout and numeric mode, and retrains (deterministically) when
    it runs alone or in another mode. ``force=True`` trains (and rewrites the
    file) even when a cached run exists. ``history["cached"]`` says which
    happened.
    """
    seed = course_seed() if seed is None else seed
    path = _cache_path(directory, steps, seed, settings, device)
    if path.is_file() and not force:
        saved = torch.load(path, map_location="cpu", weights_only=False)
        cfg = saved["history"]["settings"]
        vocab_src, vocab_tgt = source_vocab(), target_vocab()
        model = _translator_from(cfg, vocab_src, vocab_tgt)
        model.load_state_dict(saved["state_dict"])
        model.to(device if device is not None else "cpu").eval()
        return (
            model,
            vocab_src,
            vocab_tgt,
            {**saved["history"], "cached": True},
        )
    model, vocab_src, vocab_tgt, history = train_translator(
        steps, seed, device, progress, **settings
    )
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    torch.save({"state_dict": state, "history": history}, path)
    return model, vocab_src, vocab_tgt, {**history, "cached": False}
