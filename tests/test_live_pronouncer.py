"""The live pronouncer (book/pronouncer_live.md) equals PyTorch in
Chromium, in both editions (English at 390 px, Chinese at 1280 px), on the
site served by tests/conftest.py with every outside request blocked, for 50
held-out words and a few invented ones: greedy phonemes exactly, the beam
list (beam 4, alpha 0; alpha 1 called directly) within ``SCORE_TOL``, every
cross-attention weight of the greedy run within ``ATTENTION_TOL``. Also:
weights not loaded before the click, the scripts under ``SCRIPT_BYTES``,
bad input refused without a console error, the keystroke-to-answer time
under a wide bound (printed), file:// works, an unknown export version
refused. Screenshots: _build/screenshots/live_pronouncer-*.jpeg. The
engine alone, fast under Node: tests/test_pronouncer_export.py."""

from __future__ import annotations

import statistics

import pytest
import torch

from tests import live_pages as lp
from tools.editions import export_pronouncer as ex
from utils import pronunciation as pr
from utils.pronouncer import load_pronouncer

pytestmark = pytest.mark.slow

LIVE = lp.LivePage(
    "pronouncer", "pl", ".pl-input", "PronouncerLive", ex.VERSION, 30_000
)
SCRIPT_BYTES = 50_000  # the widget's scripts, loaded with the page
SCORE_TOL = 1e-4  # summed log-probabilities; seen: below 1e-5
ATTENTION_TOL = 1e-5  # softmax weights in [0, 1]; seen: below 3e-6
LATENCY_BOUND_MS = 1000  # here about 10 ms; loaded machines are slower
INVENTED = ["blorptastic", "zyxquv", "transformerize", "a", "ngwe"]
BAD = {
    "": "empty",
    "12345": "digits",
    "a" * 80: "80 letters",
    "пример": "Cyrillic",
    "汉字": "Chinese characters",
    "café": "an accent",
}
EDITIONS = {"en": (390, 844), "zh": (1280, 800)}
# beam search with alpha = 1 (the widget shows alpha = 0), called directly
ALPHA_WORDS = INVENTED[:3]


def _test_words() -> list[str]:
    test = pr.split_words()["test"]
    step = len(test) // 50
    return [w for w, _ in test[::step][:50]]


@pytest.fixture(scope="module")
def expected():
    """PyTorch's answers for every word typed, on the stored checkpoint."""
    model, _, stress = load_pronouncer()
    vocab = pr.phoneme_vocab(stress)
    out = {}
    for word in [*_test_words(), *INVENTED]:
        greedy = pr.pronounce(model, [word], stress=stress)[0]
        beam = pr.pronounce_beam(model, [word], 4, num_return=4, stress=stress)
        src = pr.encode_words([word])
        ys = torch.tensor([vocab.encode(list(greedy), bos=True, eos=False)])
        with torch.no_grad():
            memory, src_mask = model.encode(src)
            model.decode(ys, memory, src_mask)
        attention = [  # (layers, heads, T, S)
            layer.cross_attn.last_weights[0] for layer in model.decoder.layers
        ]
        out[word] = {
            "greedy": " ".join(greedy),
            "beam": [(" ".join(p), s) for p, s in beam[0]],
            "attention": torch.stack(attention),
        }
        if word in ALPHA_WORDS:  # length normalisation, alpha = 1
            normed = pr.pronounce_beam(
                model, [word], 4, num_return=4, alpha=1.0, stress=stress
            )
            out[word]["beam_alpha1"] = [(" ".join(p), s) for p, s in normed[0]]
    return out


def _answer(page, word: str) -> dict:
    """Type ``word`` (the input event runs the model) and read the answer
    from the page: phonemes and scores from the DOM, the attention the
    heatmaps were drawn from."""
    page.fill(".pronouncer-live .pl-input", word)
    page.wait_for_function(
        "w => document.querySelector('.pronouncer-live').dataset.word === w",
        arg=word.strip().lower(),
        timeout=10_000,
    )
    return page.evaluate(
        """() => {
          const root = document.querySelector('.pronouncer-live');
          const g = root.querySelector('.pl-greedy');
          const last = window.PronouncerLive.last;
          return {
            state: root.dataset.state,
            message: root.querySelector('.pl-message').textContent,
            greedy: g ? g.dataset.phonemes : null,
            beam: [...root.querySelectorAll('.pl-beam li')].map(
              (li) => [li.dataset.phonemes, Number(li.dataset.score)]),
            attention: last.greedy ? last.greedy.attention : null,
            ms: last.greedyMs === undefined ? null : last.greedyMs,
            beamMs: last.beamMs === undefined ? null : last.beamMs,
            heatmaps: root.querySelectorAll('canvas.pl-heat').length,
          };
        }"""
    )


def _mismatches(word: str, got: dict, want: dict) -> list[str]:
    problems = []
    if got["greedy"] != want["greedy"]:
        problems.append(
            f"{word}: greedy {got['greedy']!r} != {want['greedy']!r}"
        )
    names = [p for p, _ in got["beam"]]
    if names != [p for p, _ in want["beam"]]:
        problems.append(f"{word}: beam {got['beam']} != {want['beam']}")
    else:
        for (p, s), (_, t) in zip(got["beam"], want["beam"]):
            if abs(s - t) > SCORE_TOL:
                problems.append(f"{word}: beam {p!r} score {s} != {t}")
    found, worst = lp.attention_gap(word, got["attention"], want["attention"])
    if not found and worst > ATTENTION_TOL:
        found.append(f"{word}: attention differs by {worst:.2e}")
    return problems + found


@pytest.mark.parametrize("edition", EDITIONS)
def test_live_pronouncer_equals_pytorch(
    open_page, site_url, screenshot, expected, edition
):
    width, height = EDITIONS[edition]
    url = LIVE.url(site_url, edition)
    context, page, problems, fetched = open_page(url, width, height)
    try:
        before = list(fetched)
        assert not any(LIVE.weights in u for u in before), "weights before"
        button = page.inner_text(".pronouncer-live .pl-load")
        assert button == (
            "加载发音模型" if edition == "zh" else "Load the pronouncer"
        )
        lp.load(page, LIVE)
        assert any(LIVE.weights in u for u in fetched), "no weights after"
        # before the click the widget costs its scripts only (the rest is
        # the theme, fonts and MathJax every page of the site loads)
        scripts = ("/_static/pronouncer/", "/_static/engine/")
        own = lp.site_bytes(u for u in before if any(s in u for s in scripts))
        assert 0 < own < SCRIPT_BYTES, f"the widget loads {own} bytes before"
        print(
            f"\n{edition}: {lp.site_bytes(before) / 1e6:.2f} MB before the "
            f"click (the widget's scripts {own / 1e3:.0f} kB), "
            f"{lp.site_bytes(fetched) / 1e6:.2f} MB after"
        )
        for word, want in expected.items():
            got = _answer(page, word)
            assert got["state"] == "done", (word, got["message"])
            problems += _mismatches(word, got, want)
            layers, heads = want["attention"].shape[:2]
            if got["heatmaps"] != layers * heads:
                problems.append(f"{word}: {got['heatmaps']} heatmaps")
        for word in ALPHA_WORDS:
            got = page.evaluate(
                "w => window.PronouncerLive.model.beam(w, 4, 4, 1)"
                ".map((r) => [r.phonemes.join(' '), r.score])",
                word,
            )
            want = expected[word]["beam_alpha1"]
            same = [p for p, _ in got] == [p for p, _ in want] and all(
                abs(s - t) <= SCORE_TOL for (_, s), (_, t) in zip(got, want)
            )
            if not same:
                problems.append(f"{word}: alpha=1 beam {got} != {want}")
        for word, kind in BAD.items():
            got = _answer(page, word)
            if got["state"] != "error" or not got["message"].strip():
                problems.append(f"{kind} input: no message ({got['state']})")
            if got["greedy"] is not None:
                problems.append(f"{kind} input: an answer {got['greedy']}")
        # keystroke -> greedy answer: the whole word typed key by key
        times, beams = [], []
        for word in _test_words()[:10]:
            page.fill(".pronouncer-live .pl-input", "")
            page.type(".pronouncer-live .pl-input", word)
            got = _answer(page, word)
            times.append(got["ms"])
            beams.append(got["beamMs"])
        print(
            f"{edition}: keystroke to greedy answer, median "
            f"{statistics.median(times):.1f} ms, max {max(times):.1f} ms; "
            f"beam search after it, median {statistics.median(beams):.1f} ms"
        )
        assert max(times) < LATENCY_BOUND_MS, times
        _answer(page, "pronunciation")
        if lp.wider_than_window(page):
            problems.append(f"page wider than the window at {width} px")
        screenshot(page, f"live_pronouncer-{edition}-{width}")
    finally:
        context.close()
    assert not problems, "\n".join(problems[:30])


def test_live_pronouncer_works_from_a_file(open_page, built_site, expected):
    """Opened from file:// (no server): the weights load by a <script>, and
    they are the model's fp32 weights exactly (fp16 decoded without loss)."""
    model, _, _ = load_pronouncer()
    state = model.state_dict()
    opened = lp.opened_from_a_file(open_page, built_site, LIVE, state)
    with opened as (page, problems):
        for word in [*_test_words()[:3], *INVENTED[:2]]:
            problems += _mismatches(word, _answer(page, word), expected[word])


def test_live_pronouncer_refuses_an_unknown_export(open_page, site_url):
    lp.refuses_an_unknown_export(open_page, site_url, LIVE)


def test_the_export_is_the_checkpoint(tmp_path):
    """The exported fp16 numbers decode to exactly the model's weights (the
    export checks it as it writes) and the build re-exports only when the
    checkpoint changes."""
    data = lp.exports_again_only_on_change(ex, tmp_path)
    assert (data["format"], data["format_version"]) == (ex.FORMAT, 2)
    assert len(data["phonemes"]["tokens"]) == 42
    assert len(data["examples"]) == 39 and len(data["test"]) == 12000
    model, cfg, _ = load_pronouncer()
    assert [n for n, _, _ in data["tensors"]] == list(model.state_dict())
    arch = data["architecture"]
    assert arch["norm"] == ("pre" if cfg.norm_first else "post")
    assert (arch["d_model"], arch["num_decoder_layers"]) == (
        cfg.d_model,
        cfg.num_layers,
    )
