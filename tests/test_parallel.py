"""utils.parallel in one process (tests/test_ddp.py: in two): gradients of a
batch in parts, their dropout streams, the cut, resumed runs, the schedule."""

from __future__ import annotations

import itertools

import pytest
import torch

from tools.runs.numbers_task import source_vocab, target_vocab
from utils.batches import encode_batch
from utils.model import Transformer
from utils.parallel import DataParallel, Resumable, Streams, World
from utils.parallel import split_parts
from utils.training import linear_scheduler, teacher_forced_loss, train
from tests.conftest import raises

pytestmark = pytest.mark.usefixtures("one_thread")


def _model(dropout=0.3):
    torch.manual_seed(0)
    sizes = dict(d_model=16, num_heads=2, num_layers=1, d_ff=32)
    vocabs = len(source_vocab()), len(target_vocab())
    return Transformer(*vocabs, dropout=dropout, **sizes)


def _pairs():
    pairs = [([i % 10, (i * 7) % 10], [(i * 3) % 10] * 3) for i in range(8)]
    src, tgt = source_vocab(), target_vocab()
    pairs = [([src.itos[4 + a] for a in s], [tgt.itos[4 + b] for b in t])
             for s, t in pairs]  # fmt: skip
    return pairs, src, tgt


def test_split_parts_is_even_and_keeps_the_order():
    assert split_parts(list(range(7)), 2) == [[0, 1, 2], [3, 4, 5, 6]]
    assert split_parts(list(range(4)), 1) == [[0, 1, 2, 3]]
    raises(ValueError, "does not split into 3", split_parts, [1, 2], 3)


def test_world_checks_and_which_parts_are_mine():
    assert list(World().mine(2)) == [0, 1]  # alone: every part
    assert list(World(1, 2).mine(2)) == [1]
    raises(ValueError, "parts must equal", World(0, 2).mine, 4)
    raises(ValueError, "rank must be < size", World, 2, 2)
    with pytest.raises(TypeError):
        World(0, 2.0)


def test_streams_are_apart_and_leave_the_global_one_alone():
    streams = Streams(5, range(2))
    torch.manual_seed(123)
    before = torch.get_rng_state()
    with streams.part(0):
        a = torch.rand(3)
    with streams.part(1):
        b = torch.rand(3)
    with streams.part(0):
        a2 = torch.rand(3)  # part 0's stream goes on
    assert torch.equal(torch.get_rng_state(), before)
    torch.manual_seed(5)
    assert torch.equal(a, torch.rand(3)) and torch.equal(a2, torch.rand(3))
    torch.manual_seed(6)
    assert torch.equal(b, torch.rand(3))


def test_a_step_in_parts_is_the_mean_of_the_parts_gradients():
    pairs, src, tgt = _pairs()
    halves = [encode_batch(h, src, tgt) for h in split_parts(pairs, 2)]
    model = _model(dropout=0.0)  # no dropout: plain averaging
    parallel, batch = DataParallel(2, seed=0), dict(enumerate(halves))
    loss = parallel.backward(model, teacher_forced_loss, batch)
    got = [p.grad.clone() for p in model.parameters()]
    parts, losses = [], []
    for half in halves:
        model.zero_grad()
        losses.append(teacher_forced_loss(model, half))
        losses[-1].backward()
        parts.append([p.grad.clone() for p in model.parameters()])
    for g, g0, g1 in zip(got, *parts):
        assert torch.equal(g, (g0 + g1) / 2)
    assert loss.item() == ((losses[0] + losses[1]) / 2).item()


def test_each_part_draws_its_dropout_from_its_own_stream():
    """Part i's dropout is ``manual_seed(seed + i)``'s, step after step, so
    the two parts drop different units, as two processes would."""
    pairs, src, tgt = _pairs()
    halves = [encode_batch(h, src, tgt) for h in split_parts(pairs, 2)]
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # the weights stay
    parallel = DataParallel(2, seed=10)
    batches = itertools.repeat(dict(enumerate(halves)))
    losses = train(model, opt, batches, teacher_forced_loss, 2,
                   progress=False, parallel=parallel)  # fmt: skip
    gens = [torch.Generator().manual_seed(10 + i) for i in range(2)]
    mine = []
    for _ in range(2):
        step = []
        for half, gen in zip(halves, gens):
            torch.set_rng_state(gen.get_state())
            step.append(teacher_forced_loss(model, half))
            gen.set_state(torch.get_rng_state())
        mine.append(((step[0] + step[1]) / 2).item())
    assert losses == mine
    assert losses[0] != losses[1]  # the streams went on: new units dropped


def test_linear_schedule_rises_then_falls_to_zero():
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=2.0)
    sched = linear_scheduler(opt, warmup_steps=4, steps=10)
    seen = []
    for _ in range(10):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen[:4] == [0.5, 1.0, 1.5, 2.0]  # up to the peak at step 4
    assert seen[4:] == pytest.approx([2.0 * k / 7 for k in range(6, 0, -1)])
    assert seen[-1] > 0 and opt.param_groups[0]["lr"] == 0.0  # then zero
    raises(ValueError, "steps", linear_scheduler, opt, warmup_steps=4, steps=3)


def _resumable_run(path, steps=6, **resume):
    """A two-part run (dropout, Adam, a schedule), checkpointed at ``path``."""
    pairs, src, tgt = _pairs()
    halves = dict(enumerate(encode_batch(h, src, tgt)
                            for h in split_parts(pairs, 2)))  # fmt: skip
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = linear_scheduler(opt, 2, steps)
    parallel = DataParallel(2, seed=3)
    run = Resumable(path, model, opt, sched, steps=steps, every=4,
                    parallel=parallel, **resume)  # fmt: skip
    losses = (run.resume() or {"losses": []})["losses"]
    save = run.hook(lambda: {"losses": losses})
    train(model, opt, itertools.repeat(halves), teacher_forced_loss, steps,
          scheduler=sched, start=len(losses), progress=False,
          parallel=parallel,
          hooks=[lambda s, x: losses.append(x), save])  # fmt: skip
    return losses, model


def test_a_resumable_run_stopped_and_continued_is_the_same_run(tmp_path):
    whole, model = _resumable_run(None)
    path = tmp_path / "run.pt"
    first, _ = _resumable_run(path, stop_at=3)
    assert first == whole[:3]  # stopped after step 3, and saved it
    again, resumed = _resumable_run(path)  # steps 4-6: the streams restored
    assert again == whole
    for a, b in zip(model.parameters(), resumed.parameters()):
        assert torch.equal(a, b)
    late, _ = _resumable_run(tmp_path / "late.pt", max_seconds=0.0)
    assert late == whole[:1]  # out of time: stopped after one step
    assert (tmp_path / "late.pt").is_file()
    raises(ValueError, "stop_at", _resumable_run, None, stop_at=0)
