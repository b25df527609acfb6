"""proof/heads.py: the previous-letter and next-letter heads that chapters 2
and 4 report over every stored pronouncer."""

from __future__ import annotations

import pytest
import torch

from proof import heads
from utils import pronunciation as pr
from utils.pronouncer import PronouncerConfig, build_pronouncer

TINY = PronouncerConfig(d_model=16, num_heads=2, num_layers=2, d_ff=32)
WORDS = ["chief", "a", "thanking", "ox", "launder"]  # one letter: no pairs

pytestmark = pytest.mark.usefixtures("one_thread")


def _tiny(seed=0):
    torch.manual_seed(seed)
    model = build_pronouncer(TINY, pr.letter_vocab(), pr.phoneme_vocab())
    return model.eval()


def _by_loop(model, words, offsets):
    """The mean weight on the letter k places away, word by word and
    letter by letter, from the weights the last encoder run kept."""
    weights = [ly.self_attn.last_weights for ly in model.encoder.layers]
    out = torch.zeros(len(weights), TINY.num_heads, len(offsets))
    for j, k in enumerate(offsets):
        n = 0
        for b, w in enumerate(words):
            for i in range(len(w)):  # the letters, never EOS or padding
                if 0 <= i + k < len(w):
                    n += 1
                    for ly, wt in enumerate(weights):
                        out[ly, :, j] += wt[b, :, i, i + k]
        out[..., j] /= n
    return out


def test_offset_shares_equal_a_plain_loop():
    model, src = _tiny(), pr.encode_words(WORDS)
    offsets = (-3, -1, 0, 1, 2)
    shares = heads.offset_shares(model, src, offsets)
    torch.testing.assert_close(shares, _by_loop(model, WORDS, offsets))
    # without the encoding: as a model whose encoding adds nothing
    no_pe = heads.offset_shares(model, src, offsets, encoding=False)
    model.pos = torch.nn.Identity()
    torch.testing.assert_close(no_pe, heads.offset_shares(model, src, offsets))
    assert not torch.allclose(no_pe, shares, atol=1e-3)
    with pytest.raises(ValueError, match="8 places away"):
        heads.offset_shares(model, src, (8,))  # "thanking" has 8 letters


def test_neighbour_heads_name_the_strongest_head(tmp_path):
    runs = {}
    for seed in (3, 5):  # two random models, stored as the runs are
        model = _tiny(seed)
        runs[f"s{seed}"] = tmp_path / f"s{seed}.pt"
        config = {**TINY.as_dict(), "stress": True}
        state = {"config": config, "state_dict": model.state_dict()}
        torch.save(state, runs[f"s{seed}"])
    rows = heads.neighbour_heads(WORDS, runs)
    assert [(r["run"], r["neighbour"]) for r in rows] == [
        ("s3", "previous"), ("s3", "next"), ("s5", "previous"), ("s5", "next"),
    ]  # fmt: skip
    src = pr.encode_words(WORDS)
    for r in rows:
        model = _tiny(int(r["run"][1:]))
        j = ["previous", "next"].index(r["neighbour"])
        shares = heads.offset_shares(model, src)[..., j]
        no_pe = heads.offset_shares(model, src, encoding=False)[..., j]
        ly, hd = r["layer"] - 1, r["head"] - 1  # counted from 1
        assert r["share"] == pytest.approx(shares.max().item())
        assert r["share"] == pytest.approx(shares[ly, hd].item())
        assert r["share_no_pe"] == pytest.approx(no_pe[ly, hd].item())
    table = heads.heads_table(rows).splitlines()
    assert len(table) == 2 + len(runs)
    assert table[2].split()[:3] == ["s3", str(rows[0]["layer"]),
                                    str(rows[0]["head"])]  # fmt: skip
    assert f"{rows[3]['share_no_pe']:.1%}" == table[3].split()[-1]


def test_every_stored_run_is_found():
    runs = heads.stored_pronouncers()
    assert list(runs) == ["stored"] + [f"s{n}" for n in range(len(runs) - 1)]
    assert len(runs) >= 8
    for name, path in runs.items():
        assert path.is_file(), path
        if name != "stored":
            assert path.parent.name == name
