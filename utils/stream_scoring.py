"""Scoring a long text with a language model (chapter 11), statically and
as a model that keeps learning as it reads.

``stream_nats``: the total cross-entropy of a long token stream, read in
overlapping windows (bits per character = nats / ln 2 / characters).

``dynamic_nats``: dynamic evaluation (Krause et al., 2018). A static model
scores a new play with what it knew when training stopped; it cannot learn
that this play's speakers are ROMEO and JULIET. Dynamic evaluation reads
the stream in the same windows and, after scoring each, takes one gradient
step (plain SGD) on the tokens it has just scored, so the next window is
predicted by a model that has read everything before it. No token is
trained on before it is scored: the score stays an honest code length,
like an adaptive compressor's (PPMd, ``utils.ppmd``).

``score_windows``: the windows both read.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from .checks import check_ids, check_instance, check_int, check_number
from .gpt import GPT
from .layers import evaluating

__all__ = ["score_windows", "stream_nats", "dynamic_nats"]


def score_windows(
    length: int, first: int, context: int, stride: int | None = None
) -> list[tuple[int, int, int]]:
    """The windows that score tokens ``first..length-1`` of a stream, as
    ``(start, end, done)``: window ``stream[start:end]`` (at most
    ``context + 1`` tokens: inputs ``[:-1]``, targets ``[1:]``) scores the
    targets at index ``done`` and after, the ones no window before it
    did. Windows start ``stride`` apart (default ``context // 2``)."""
    stride = context // 2 if stride is None else stride
    stride = check_int(stride, "stride", 1)
    if stride > context:
        raise ValueError(f"stride must be at most context={context}")
    spans, done, start = [], first, 0
    while done < length:
        start = min(start, max(0, length - context - 1))
        end = min(start + context + 1, length)
        spans.append((start, end, done))
        done, start = end, start + stride
    return spans


def stream_nats(
    model: GPT,
    ids: torch.Tensor,
    prefix: torch.Tensor | None = None,
    stride: int | None = None,
    batch: int = 16,
) -> float:
    """Total cross-entropy in nats of every token of ``ids`` ``(N,)``, each
    predicted from the tokens before it: ``prefix`` ``(P,)`` (not scored;
    at least one token, e.g. a separator's, so the first token of ``ids`` is
    predicted too) then ``ids``.

    A stream longer than the context is read in windows of ``context``
    tokens that start ``stride`` (default ``context // 2``) apart; each
    window scores only the tokens the windows before it did not, so every
    token but the first few has at least ``context - stride`` tokens of
    history. Eval mode, no gradients; the model's mode is restored after.
    """
    check_instance(model, "model", GPT)
    check_ids(ids, "ids", model.config.vocab_size, ndim=1)
    check_int(ids.numel(), "ids' length", 1)
    if prefix is None:
        raise ValueError("prefix must hold at least one token, got None")
    check_ids(prefix, "prefix", model.config.vocab_size, ndim=1)
    check_int(prefix.numel(), "prefix's length", 1)
    batch = check_int(batch, "batch", 1)
    full = torch.cat([prefix.long(), ids.long()])
    spans = score_windows(
        full.numel(), prefix.numel(), model.config.context, stride
    )
    total = torch.zeros((), dtype=torch.float64)
    with evaluating(model):
        for i in range(0, len(spans), batch):
            group = spans[i : i + batch]
            width = max(end - s for s, end, _ in group)
            rows = torch.zeros(len(group), width, dtype=torch.long)
            keep = torch.zeros(len(group), width - 1, dtype=torch.bool)
            for r, (s, end, done) in enumerate(group):
                rows[r, : end - s] = full[s:end]
                keep[r, done - s - 1 : end - s - 1] = True
            logp = model(rows[:, :-1]).log_softmax(-1)
            nll = -logp.gather(-1, rows[:, 1:, None])[..., 0]
            total += nll[keep].double().sum()
    return float(total)


def dynamic_nats(
    model: GPT,
    ids: torch.Tensor,
    prefix: torch.Tensor,
    lr: float,
    stride: int | None = None,
    windows: int | None = None,
) -> torch.Tensor:
    """Cross-entropy in nats of each window's new tokens ``(W,)`` float64,
    reading ``prefix`` then ``ids`` in the windows of ``stream_nats``
    (``stride`` apart, default ``context // 2``); after each window, one SGD
    step of rate ``lr`` on the mean loss of the tokens it scored. A copy of
    ``model`` learns (eval mode: no dropout); ``model`` is left as it was.
    ``windows``: stop after that many (a replay)."""
    check_instance(model, "model", GPT)
    context = model.config.context
    check_ids(ids, "ids", model.config.vocab_size, ndim=1)
    check_ids(prefix, "prefix", model.config.vocab_size, ndim=1)
    check_int(prefix.numel(), "prefix's length", 1)
    lr = check_number(lr, "lr", 0.0)
    full = torch.cat([prefix.long(), ids.long()])
    spans = score_windows(full.numel(), prefix.numel(), context, stride)
    if windows is not None:
        spans = spans[: check_int(windows, "windows", 1)]
    reader = GPT(model.config).eval()  # model's weights, not its state
    reader.load_state_dict(model.state_dict())
    opt = torch.optim.SGD(reader.parameters(), lr=lr)
    out = torch.zeros(len(spans), dtype=torch.float64)
    for i, (s, end, done) in enumerate(spans):
        logits = reader(full[None, s : end - 1])[0]  # (T, V)
        nll = F.cross_entropy(
            logits[done - s - 1 :], full[done:end], reduction="none"
        )
        out[i] = nll.detach().double().sum()
        if not torch.isfinite(out[i]):
            raise ValueError(
                f"dynamic evaluation diverged at window {i} with lr={lr}: "
                "take a smaller rate"
            )
        if lr > 0:  # learn from what was just scored, never ahead
            opt.zero_grad()
            nll.mean().backward()
            opt.step()
    return out
