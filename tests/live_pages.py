"""What the tests of the two live pages share (the pronouncer's and the
GPT's): tests/test_pronouncer_export.py and tests/test_gpt_export.py run
their scripts under Node on exports of small random models and on tampered
exports; tests/test_live_pronouncer.py and tests/test_live_gpt.py drive the
built pages in Chromium (the fixtures of tests/conftest.py).
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import pathlib
import subprocess
import tempfile
import urllib.parse

import numpy as np
import pytest
import torch

from tools.editions.build_book import HTML

# ---------- under Node ----------

# The start of a driver script: exported(weights, Model, global,
# ExportError) is the model the page's script builds from a weights.js
# file, evaluated as the page's <script> tag would; an export it refuses
# prints {"refused": message} and ends the script.
PRELUDE = r"""
const fs = require("fs");
const vm = require("vm");
function exported(weights, Model, global, ExportError) {
  const page = { window: {}, atob };
  vm.runInNewContext(fs.readFileSync(weights, "utf8"), page);
  try {
    return new Model(page.window[global]);
  } catch (err) {
    if (!(err instanceof ExportError)) throw err;
    console.log(JSON.stringify({ refused: err.message }));
    process.exit(0);
  }
}
"""


def run_node(node: str, driver: str, *args, timeout: int = 300) -> dict:
    """PRELUDE + ``driver`` run by Node with ``args`` (process.argv[2:]);
    its output, JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        script = pathlib.Path(tmp) / "driver.js"
        script.write_text(PRELUDE + driver)
        done = subprocess.run(
            [node, str(script), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def read_export(path: pathlib.Path, prefix: str) -> tuple[str, dict]:
    """A weights.js file: its head (comments and ``prefix``) and data."""
    text = pathlib.Path(path).read_text()
    start = text.index(prefix) + len(prefix)
    return text[:start], json.loads(text[start:].rstrip().rstrip(";"))


def write_export(path: pathlib.Path, head: str, data: dict) -> pathlib.Path:
    pathlib.Path(path).write_text(head + json.dumps(data) + ";\n")
    return path


DROP = object()


def edited(data: dict, field: str, value) -> dict:
    """A copy of ``data`` with ``field`` ("architecture.norm", "tensors.0.1")
    set to ``value``, removed (``DROP``) or, for a function, set to its
    value of the old one."""
    data = json.loads(json.dumps(data))
    *path, last = field.split(".")
    node = data
    for key in path:
        node = node[int(key) if isinstance(node, list) else key]
    key = int(last) if isinstance(node, list) else last
    if value is DROP:
        del node[key]
    else:
        node[key] = value(node[key]) if callable(value) else value
    return data


def tampered(weights: pathlib.Path, prefix: str, change, out) -> pathlib.Path:
    """``weights`` with one change, (field, value) as ``edited`` takes them,
    written to ``out``; None: a file without the export at all."""
    if change is None:
        out.write_text("// nothing here\n")
        return out
    head, data = read_export(weights, prefix)
    return write_export(out, head, edited(data, *change))


def spread_norms(model) -> None:
    """LayerNorm weights near 1 and biases near 0, but random: they count."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(torch.randn_like(p) * 0.5 + name.endswith("weight"))


def exports_again_only_on_change(ex, tmp_path: pathlib.Path) -> dict:
    """The build exports the stored checkpoint once, then not again until
    the checkpoint changes; the export's data."""
    out = tmp_path / "weights.js"
    assert ex.ensure(out=out) and not ex.ensure(out=out)
    changed = tmp_path / "other.pt"
    changed.write_bytes(ex.CHECKPOINT.read_bytes() + b"\0")
    assert not ex.is_current(out, changed)
    return read_export(out, ex.PREFIX)[1]


# ---------- in Chromium ----------


@dataclasses.dataclass(frozen=True)
class LivePage:
    name: str  # book/{name}_live, .{name}-live, _static/{name}/weights.js
    prefix: str  # its classes': prefix-load, prefix-status
    ready: str  # shown once the model is loaded
    api: str  # the widget's window object (.model: the model)
    version: int  # the export's format version
    timeout: int  # ms to load

    page = property(lambda self: f"book/{self.name}_live")
    root = property(lambda self: f".{self.name}-live")
    weights = property(lambda self: f"_static/{self.name}/weights.js")

    def url(self, site_url: str, edition: str = "en") -> str:
        """The page in the served site, in that edition."""
        return f"{site_url}/{'zh/' if edition == 'zh' else ''}{self.page}.html"


def site_bytes(urls) -> int:
    """The size on disk of the site files behind ``urls``."""
    total = 0
    for url in set(urls):
        path = urllib.parse.unquote(urllib.parse.urlparse(url).path)
        path = path.split("/html/", 1)[-1] if "/html/" in path else path
        file = HTML / path.lstrip("/")
        if file.is_file():
            total += file.stat().st_size
    return total


def load(page, live: LivePage) -> None:
    page.click(f"{live.root} .{live.prefix}-load")
    page.wait_for_selector(f"{live.root} {live.ready}", timeout=live.timeout)


def attention_gap(name: str, got, want: torch.Tensor):
    """The page's attention weights against PyTorch's: ``([problem], the
    largest difference)``, a problem (and infinity) if the shapes differ."""
    got = torch.tensor(got)
    if got.shape != want.shape:
        shapes = f"{tuple(got.shape)} != {tuple(want.shape)}"
        return [f"{name}: attention {shapes}"], float("inf")
    return [], (got - want).abs().max().item()


def wider_than_window(page) -> bool:
    return page.evaluate(
        "document.documentElement.scrollWidth > window.innerWidth"
    )


@contextlib.contextmanager
def opened_from_a_file(open_page, built_site, live: LivePage, state_dict):
    """The page opened from file:// (no server) and loaded, as (page,
    problems); at the end, no problem may be left. The weights load by
    <script> tags and are the model's fp32 weights exactly (fp16 decoded
    without loss); each that is not is a problem."""
    if built_site.returncode != 0:
        pytest.fail("the site did not build (see test_book.py)")
    url = (HTML / live.page).with_suffix(".html").as_uri()
    context, page, problems, _ = open_page(
        url, 390, 844, base=HTML.as_uri() + "/"
    )
    try:
        load(page, live)
        problems += _weight_problems(page, live, state_dict)
        yield page, problems
    finally:
        context.close()
    assert not problems, "\n".join(problems)


def _weight_problems(page, live: LivePage, state_dict) -> list[str]:
    problems = []
    weights = page.evaluate(
        f"""() => Object.fromEntries(
           Object.entries(window.{live.api}.model.W).map(([k, v]) => {{
             const b = new Uint8Array(v.buffer);
             let s = '';
             for (let i = 0; i < b.length; i += 8192) {{
               s += String.fromCharCode(...b.subarray(i, i + 8192));
             }}
             return [k, btoa(s)];
           }}))"""
    )
    for name, tensor in state_dict.items():
        raw = np.frombuffer(base64.b64decode(weights.pop(name)), dtype="<f4")
        got = torch.from_numpy(raw.copy()).view(tensor.shape)
        if not torch.equal(got, tensor):
            worst = (got - tensor).abs().max().item()
            problems.append(f"weight {name} differs by {worst:.2e}")
    assert not weights, f"tensors the model lacks: {sorted(weights)}"
    return problems


def refuses_an_unknown_export(open_page, site_url, live: LivePage) -> None:
    """weights.js of another format version: the page says why it cannot
    run it, and offers nothing to compute."""
    text = (HTML / live.weights).read_text()
    current = f'"format_version":{live.version},'
    assert current in text
    text = text.replace(current, '"format_version":99,', 1)
    context, page, problems, _ = open_page(live.url(site_url), 390, 844)
    try:
        page.route(
            "**/" + live.weights,
            lambda r: r.fulfill(body=text, content_type="text/javascript"),
        )
        page.click(f"{live.root} .{live.prefix}-load")
        page.wait_for_function(
            f"document.querySelector('{live.root}').dataset.state"
            " === 'refused'",
            timeout=live.timeout,
        )
        status = page.inner_text(f"{live.root} .{live.prefix}-status")
        assert "cannot run the exported model" in status, status
        assert "format version 99" in status, status
        for shown in (live.ready, "input", "textarea"):
            assert page.query_selector(f"{live.root} {shown}") is None
    finally:
        context.close()
    assert not problems, "\n".join(problems)
