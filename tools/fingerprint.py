"""A fingerprint of the numerics the course relies on: one short hash per
operation.

    python -m tools.fingerprint      prints {"operation": "hash", ...} as JSON

Each hash covers the exact bits of one result; together they cover every
kind of operation the chapters' stored outputs depend on, from elementwise
maths to a few training steps of every model the chapters train (README,
"Proven on any machine"). Two runs that print the same fingerprint compute
these bit for bit alike: ``tests/test_numeric_mode.py`` compares
fingerprints across numeric modes and across CPUs (natively and under
qemu's Intel and AMD models).

Left out: ``torch.sqrt``. ATen sends it to MKL's vector maths, whose last bits
differ between CPUs even on MKL's vendor-neutral branch (measured: natively
on an AMD EPYC and under qemu's Haswell), so nothing the course stores or
asserts exactly goes through it; that is why the optimiser is fused
(``utils.training.adam``). ``tests/test_repo.py`` checks every Adam is.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import json
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def _h(x) -> str:
    if isinstance(x, torch.Tensor):
        x = x.detach().contiguous().numpy()
    return hashlib.sha1(np.ascontiguousarray(x).tobytes()).hexdigest()[:12]


def _weights(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def _operations(out: dict[str, str]) -> None:
    torch.manual_seed(0)
    x = torch.randn(4, 48, 64, requires_grad=True)  # (B, T, d)
    w = torch.randn(64, 96)
    xd = x.detach()
    out["randn"] = _h(x)
    out["matmul"] = _h(x @ w)
    out["linear"] = _h(F.linear(x, w.T, torch.randn(96)))
    out["bmm"] = _h(torch.bmm(x, x.transpose(1, 2)))
    out["softmax"] = _h(torch.softmax(x, -1))
    out["log_softmax"] = _h(torch.log_softmax(x, -1))
    out["layer_norm"] = _h(F.layer_norm(x, (64,)))
    _elementwise(out, xd)
    out["gelu"] = _h(F.gelu(x))
    spread = [xd.var(-1), xd.std(0), xd.norm(dim=-1)]
    out["var_norm"] = _h(torch.cat([t.flatten() for t in spread]))
    out["conv1d"] = _h(F.conv1d(x.transpose(1, 2), torch.randn(8, 64, 3)))
    q = x.view(4, 48, 4, 16).transpose(1, 2)  # (B, h, T, d_head)
    out["sdpa"] = _h(F.scaled_dot_product_attention(q, q, q, is_causal=True))
    mha = nn.MultiheadAttention(64, 4, batch_first=True)
    o, a = mha(xd, xd, xd)
    out["nn_multihead"] = _h(torch.cat([o.flatten(), a.flatten()]))
    recurrent = [m(64, 32, batch_first=True) for m in (nn.RNN, nn.GRU)]
    out["rnn_gru"] = _h(torch.cat([m(xd)[0].flatten() for m in recurrent]))
    _backward_and_draws(out, x)

    from utils.layers import LayerNorm

    out["course_layer_norm"] = _h(LayerNorm(64)(xd))


def _elementwise(out: dict[str, str], xd: torch.Tensor) -> None:
    """The elementwise maths, float32 and float64, on positive inputs."""
    pos = xd.abs() + 0.1
    for name in "exp log sin cos tanh erf sigmoid rsqrt".split():
        fn = getattr(torch, name)
        out[name] = _h(fn(pos))
        out[name + "64"] = _h(fn(pos.double()))
    out["pow"] = _h(pos.pow(1.5))
    out["div"] = _h(xd / pos)


def _backward_and_draws(out: dict[str, str], x: torch.Tensor) -> None:
    """A backward pass through attention and LayerNorm, cross-entropy's
    gradient with label smoothing, dropout's and sampling's draws."""
    loss = (torch.softmax(x @ x.transpose(1, 2), -1) @ x).pow(2).mean()
    loss = loss + F.layer_norm(x, (64,)).pow(3).mean()
    loss.backward()
    out["backward"] = _h(x.grad)
    logits = torch.randn(64, 17, requires_grad=True)
    target = torch.randint(0, 17, (64,))
    F.cross_entropy(logits, target, label_smoothing=0.1).backward()
    out["cross_entropy"] = _h(logits.grad)
    probs = torch.softmax(torch.randn(16, 30), -1)
    dropped = F.dropout(torch.ones(500), 0.1)
    drawn = torch.multinomial(probs, 4, replacement=True)
    out["random_draws"] = _h(torch.cat([dropped, drawn.flatten()]).float())


def _optimisers(out: dict[str, str]) -> None:
    from utils.training import adam, noam_scheduler, paper_adam

    torch.manual_seed(1)
    runs = []
    for make in (
        lambda p: (adam(p, lr=1e-2), None),
        lambda p: (o := paper_adam(p), noam_scheduler(o, 32, 10, 0.5)),
        lambda p: (
            o := adam(p, lr=5e-3),
            torch.optim.lr_scheduler.OneCycleLR(o, 5e-3, total_steps=10),
        ),
    ):
        params = [torch.randn(300, requires_grad=True) for _ in range(2)]
        opt, sched = make(params)
        for _ in range(4):
            for p in params:
                p.grad = torch.randn(300)
            opt.step()
            if sched is not None:
                sched.step()
        runs.append(torch.cat([p.detach() for p in params]))
    out["adam"] = _h(torch.cat(runs))


def _steps(model, opt, loss_fn, sched=None) -> torch.Tensor:
    """Three optimiser steps of ``loss_fn(model)``; the weights after."""
    for _ in range(3):
        loss = loss_fn(model)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
    return _weights(model)


def _ch1(out: dict[str, str]) -> None:
    """Chapter 1: a CNN and a tiny Transformer on the motif task."""
    from utils.priors import MotifCNN, TinyTransformer, train_classifier
    from utils.toy_tasks import make_motif_data

    x, y = make_motif_data(64, seed=0)
    weights = []
    for make in (MotifCNN, TinyTransformer):
        torch.manual_seed(0)
        model = make()
        train_classifier(model, x, y, steps=3, batch_size=32)
        weights.append(_weights(model))
    out["ch1_priors"] = _h(torch.cat(weights))


def _ch2_ch4(out: dict[str, str]) -> None:
    """Chapter 2: the one- and two-head copier (the sweep's model), and
    chapter 4: each position scheme; a few steps each, no test set (a
    large one costs a minute under emulation and adds no kind of
    operation). One generator draws both chapters' batches."""
    from tools.runs.sweep_ch02 import CopyTwo, copy_batch, copy_loss
    from utils.position_probe import POSITION_KINDS, PositionProbe
    from utils.position_probe import previous_token_batch
    from utils.training import adam

    def steps(model, batch, loss_fn) -> torch.Tensor:
        opt = adam(model.parameters(), lr=1e-2)
        return _steps(model, opt, lambda m: loss_fn(m, batch()))

    def position_loss(model, batch):
        ids, y = batch
        return F.cross_entropy(model(ids).flatten(0, 1), y.flatten())

    gen = torch.Generator().manual_seed(0)
    weights = []
    for heads in (1, 2):
        torch.manual_seed(0)
        model = CopyTwo(heads)
        weights.append(steps(model, lambda: copy_batch(64, gen), copy_loss))
    out["ch2_heads"] = _h(torch.cat(weights))
    weights = []
    for kind in POSITION_KINDS:
        torch.manual_seed(0)
        model = PositionProbe(16, kind, max_len=32)
        batch = functools.partial(previous_token_batch, 64, 16, 16, gen)
        weights.append(steps(model, batch, position_loss))
    out["ch4_positions"] = _h(torch.cat(weights))


def _ch7(out: dict[str, str]) -> None:
    """Chapter 7: utils.model.Transformer."""
    from utils.model import Transformer
    from utils.training import adam

    torch.manual_seed(0)
    model = Transformer(20, 20, d_model=32, num_heads=4, num_layers=2, d_ff=64)
    opt = adam(model.parameters(), lr=1e-3)
    src = torch.randint(3, 20, (8, 10))
    tgt = torch.randint(3, 20, (8, 9))

    def loss(m):
        logits = m(src, tgt[:, :-1])  # (B, T, V)
        return F.cross_entropy(logits.transpose(1, 2), tgt[:, 1:])

    out["transformer_training"] = _h(_steps(model, opt, loss))


def _ch8_ch9(out: dict[str, str]) -> None:
    """Chapters 8-9: the pronouncer's recipe (dropout on, label smoothing,
    paper_adam with the warm-up schedule), on chapter 9's vocabularies."""
    from tools.runs import ambiguous
    from utils.loss import masked_cross_entropy
    from utils.pronouncer import PronouncerConfig, build_pronouncer
    from utils.training import noam_scheduler, paper_adam

    cfg = dataclasses.replace(PronouncerConfig(), warmup_steps=2)
    torch.manual_seed(0)
    model = build_pronouncer(cfg, ambiguous.VOCAB_SRC, ambiguous.VOCAB_TGT)
    opt = paper_adam(model.parameters())
    sched = noam_scheduler(opt, cfg.d_model, cfg.warmup_steps, cfg.factor)
    src = torch.randint(3, len(ambiguous.VOCAB_SRC), (16, 12))
    tgt = torch.randint(3, len(ambiguous.VOCAB_TGT), (16, 10))
    model.train()

    def loss(m):
        return masked_cross_entropy(
            m(src, tgt[:, :-1]), tgt[:, 1:], tgt[:, 1:] != 0,
            label_smoothing=0.1,
        )  # fmt: skip

    out["translator_training"] = _h(_steps(model, opt, loss, sched))


def _ch10(out: dict[str, str]) -> None:
    """Chapter 10: the three objectives on words, then a pronouncer whose
    encoder starts from the last of them (the prefix LM), handed over row
    for row as a masked LM is (the hash predates encoder_state's kind)."""
    from utils import finetuning, pretraining, pronunciation
    from utils.pronouncer import PronouncerConfig, train_pronouncer

    split = pronunciation.split_words(20, 20, 0)
    words = [w for w, _ in split["train"][:200]]
    weights = []
    for kind in pretraining.OBJECTIVES:
        lm, losses = pretraining.train_lm(kind, words, steps=3, batch=32)
        weights += [_weights(lm), torch.tensor(losses)]
    cfg = PronouncerConfig(d_model=64, d_ff=256, num_layers=2, steps=3,
                           eval_every=3, n_valid_exact=4)  # fmt: skip
    data = {"train": split["train"][:64], "valid": split["valid"][:4]}
    pairs, vocabs = pronunciation.pronouncer_data(data, stress=False)
    tuned, _ = train_pronouncer(
        cfg, pairs, progress=False, vocabs=vocabs,
        init=finetuning.encoder_state(lm),
    )  # fmt: skip
    weights.append(_weights(tuned))
    out["ch10_pretraining"] = _h(torch.cat(weights))


def _gpt(out: dict[str, str]) -> None:
    """Chapter 11's trainer: a few steps of a tiny GPT (PyTorch's fused
    causal attention forward and backward, fused AdamW, clipping, two
    parts' dropout streams), then the course's attention in eval mode."""
    from tools.runs import train_gpt
    from utils.layers import evaluating

    recipe = dataclasses.replace(train_gpt.RECIPES["tiny"], steps=3, warmup=1)
    gen = torch.Generator().manual_seed(0)
    stream = torch.randint(recipe.model.vocab_size, (2000,), generator=gen)
    model, losses, _ = train_gpt.fit(recipe, {"ids": {"train": stream}})
    with evaluating(model):
        logits = model(stream[None, : recipe.model.context])
    out["ch11_gpt"] = _h(
        torch.cat([_weights(model), torch.tensor(losses), logits.flatten()])
    )


# qemu-user's models of the two vendors' CPUs (both with AVX2, neither with
# AVX-512): MKL, oneDNN and glibc see another CPU and must compute alike
QEMU_CPUS = ("Haswell", "EPYC")


def command(qemu_cpu: str | None = None) -> list[str]:
    """This module as a command, on ``qemu_cpu`` (emulated) or natively."""
    cmd = [sys.executable, "-m", "tools.fingerprint"]
    if qemu_cpu is not None:
        # the same program, shown another CPU by the emulator
        cmd = ["qemu-x86_64", "-cpu", qemu_cpu, *cmd]
    return cmd


# what a run's environment may change in its results: the numeric modes'
# variables, the course's own, the loader's, the interpreter's
NUMERIC = ("ATEN_", "MKL_", "ONEDNN_", "DNNL_", "OPENBLAS_", "NPY_", "GLIBC_",
           "OMP_", "KMP_", "COURSE_", "LD_", "PYTHON", "TORCH")  # fmt: skip


def _sources(root, module: str = "tools.fingerprint") -> list:
    """The course's files ``module`` runs: itself and all its imports reach
    under ``root`` (those inside functions too), so an edit elsewhere, to a
    chapter's tool say, keeps the emulated fingerprints."""
    found, todo = set(), [module]
    while todo:
        name = todo.pop()
        stem = root.joinpath(*name.split("."))
        init = stem / "__init__.py"
        path = init if init.is_file() else stem.with_suffix(".py")
        if path in found or not path.is_file():
            continue  # seen, or not the course's (torch, json...)
        found.add(path)
        package = name if path == init else name.rpartition(".")[0]
        todo += [package] if package else []
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                todo += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):  # from .x / from utils
                level = node.level
                up = package.rsplit(".", level - 1)[0] if level else ""
                base = ".".join(filter(None, (up, node.module)))
                # `from utils import finetuning` names a module, or not
                todo += [base] + [f"{base}.{a.name}" for a in node.names]
    return sorted(found)


def _inputs(qemu_cpu: str, env: dict[str, str]) -> str:
    """A hash of all a run's hashes depend on: the course's code, Python,
    every installed package, qemu, this CPU and the numeric variables."""
    from importlib.metadata import distributions

    from tools import ROOT
    from tools.numerics.numeric_mode import cpu_name

    h = hashlib.sha256(f"{sys.version} {qemu_cpu} {cpu_name()}".encode())
    for path in _sources(ROOT):
        h.update(f"{path.relative_to(ROOT)}".encode() + path.read_bytes())
    packages = sorted(f"{d.name}=={d.version}" for d in distributions())
    qemu = subprocess.run(["qemu-x86_64", "--version"], capture_output=True)
    numeric = {k: v for k, v in env.items() if k.startswith(NUMERIC)}
    h.update(json.dumps([packages, str(qemu.stdout), numeric]).encode())
    return h.hexdigest()[:16]


def emulated(env: dict[str, str]) -> dict[str, dict[str, str]]:
    """The fingerprint under each of ``QEMU_CPUS``, all at once (minutes
    each, which other tests overlap). At the priority of the tests: niced,
    they starved beside a busy process and timed out. A warm run reuses
    what a run with the same inputs (``_inputs``) stored in
    ``_build/fingerprint/``: emulation is deterministic."""
    from tools import ROOT

    kept = {c: ROOT / "_build" / "fingerprint" / f"{c}-{_inputs(c, env)}.json"
            for c in QEMU_CPUS}  # fmt: skip
    runs = {
        cpu: subprocess.Popen(command(cpu), cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for cpu, path in kept.items() if not path.exists()
    }  # fmt: skip
    try:  # an hour: a hang, not a slow machine
        done = {c: run.communicate(timeout=3600) for c, run in runs.items()}
    finally:  # none left running after a failure
        for run in runs.values():
            run.kill()
    for cpu, (stdout, stderr) in done.items():
        if runs[cpu].returncode != 0:
            raise RuntimeError(f"the fingerprint on {cpu} failed:\n{stderr}")
        kept[cpu].parent.mkdir(parents=True, exist_ok=True)
        part = kept[cpu].with_suffix(".part")  # the file whole, or none
        part.write_text(stdout.strip().splitlines()[-1])
        part.replace(kept[cpu])
    return {cpu: json.loads(path.read_text()) for cpu, path in kept.items()}


def fingerprint() -> dict[str, str]:
    """Every hash, in this order: the global seed's draws run on from one
    step to the next."""
    out: dict[str, str] = {}
    for step in (_operations, _optimisers, _ch1, _ch2_ch4, _ch7, _ch8_ch9,
                 _ch10, _gpt):  # fmt: skip
        step(out)
    a = np.random.default_rng(0).standard_normal((64, 96))
    out["np_exp"] = _h(np.exp(a))
    out["np_exp32"] = _h(np.exp(a.astype(np.float32)))
    out["np_sin"] = _h(np.sin(a))
    out["np_matmul"] = _h(a @ a.T)
    return out


if __name__ == "__main__":
    print(json.dumps(fingerprint(), sort_keys=True))
