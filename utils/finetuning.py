"""Fine-tuning (chapter 10): a pre-trained stack's weights handed to chapter
8's pronouncer, the recipe and label budgets of its fine-tuning runs, and
the pre-trained weights' own rate (or frozen)."""

from __future__ import annotations

import dataclasses
import random

import torch
from torch import nn

from .checks import check_choice, check_instance, check_int
from .objectives import BOS, EOS, MASK, OBJECTIVES
from .pretraining import TinyLM

__all__ = [
    "encoder_state",
    "seq2seq_state",
    "tune_config",
    "label_order",
    "param_groups",
    "load_part",
]


def encoder_state(lm: TinyLM, kind: str = "mlm") -> dict[str, torch.Tensor]:
    """A ``kind`` LM's weights as a ``Transformer``'s encoder; a causal or
    prefix LM never reads EOS (a random row): its [BOS] row becomes EOS."""
    check_instance(lm, "lm", TinyLM)
    check_choice(kind, "kind", OBJECTIVES)
    rows = lm.embed.lut.weight[:MASK].detach().clone()
    if kind != "mlm":
        rows[EOS] = rows[BOS]
    state = {"src_embed.lut.weight": rows}
    for name, value in lm.encoder.state_dict().items():
        state["encoder." + name] = value.detach()
    return {k: v.clone() for k, v in state.items()}


def seq2seq_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """A denoising model's weights for the pronouncer: all but the
    target side's embedding and output layer (letters there, phonemes in
    the pronouncer), the source embedding without the sentinels."""
    state = {}
    for name, value in model.state_dict().items():
        if name.startswith(("tgt_embed.", "generator.")):
            continue
        if name == "src_embed.lut.weight":
            value = value[:MASK]  # PAD, BOS, EOS, a-z: letter_vocab's ids
        state[name] = value.detach().clone()
    return state


def tune_config(base, steps: int, seed: int):
    """Chapter 10's fine-tuning recipe: last third a cooldown, one eval."""
    check_int(steps, "steps", 3)
    check_int(seed, "seed", 0)
    return dataclasses.replace(
        base,
        steps=steps,
        cooldown_steps=steps // 3,
        eval_every=steps,
        seed=seed,
    )


def label_order(entries: list, seed: int) -> list:
    """``entries`` reshuffled for ``seed``: label budgets nest."""
    order = list(entries)
    random.Random(1000 + seed).shuffle(order)
    return order


def param_groups(model: nn.Module, init, init_lr: float):
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


def load_part(model: nn.Module, init) -> None:
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
