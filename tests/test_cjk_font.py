"""``proof.runtime.ensure_cjk_font``, faked (no apt-get run, no font file
touched): install one, or nothing if known, or say figures stay English."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import types

import pytest
from matplotlib import font_manager

from proof import labels, runtime
from tests.conftest import raises


class _Font:
    def __init__(self, name: str):
        self.name = name


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """A machine with no CJK font (DejaVu Sans only, an empty font folder),
    commands recorded instead of run, the notice not said yet."""
    state = types.SimpleNamespace(commands=[], apt="/usr/bin/apt-get")
    monkeypatch.setattr(
        font_manager.fontManager, "ttflist", [_Font("DejaVu Sans")]
    )
    files = tmp_path / "noto"
    files.mkdir()
    monkeypatch.setattr(runtime, "CJK_FILES", str(files / "*.ttc"))
    monkeypatch.setattr(runtime.shutil, "which", lambda name: state.apt)

    def run(command, **kwargs):
        state.commands.append(command)
        if command[1:2] == ["install"]:  # the package puts its file in place
            (files / "NotoSansCJK-Regular.ttc").write_bytes(b"")
        return subprocess.CompletedProcess(command, 0, "", "")

    def addfont(path):
        font_manager.fontManager.ttflist.append(_Font("Noto Sans CJK SC"))

    monkeypatch.setattr(runtime.subprocess, "run", run)
    monkeypatch.setattr(font_manager.fontManager, "addfont", addfont)
    monkeypatch.setitem(labels._state, "told", False)
    monkeypatch.setitem(labels._state, "language", labels._state["language"])
    labels.cjk_font.cache_clear()
    yield state
    labels.cjk_font.cache_clear()


@pytest.fixture
def colab(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("c"))


def test_in_colab_with_apt_it_installs_and_registers(machine, colab, capsys):
    assert labels.cjk_font() is None
    assert runtime.ensure_cjk_font() is True
    install = "install -y -qq --no-install-recommends fonts-noto-cjk".split()
    assert machine.commands == [[machine.apt, *install]]
    assert labels.cjk_font() == "Noto Sans CJK SC"
    printed = capsys.readouterr().out
    assert "Installed fonts-noto-cjk" in printed
    assert labels.NO_FONT not in printed


def test_stale_package_lists_are_updated_before_a_second_try(
    machine, monkeypatch
):
    recorded = runtime.subprocess.run

    def fails_before_update(command, **kwargs):
        updated = [machine.apt, "update", "-qq"] in machine.commands
        if command[1:2] == ["install"] and not updated:
            machine.commands.append(command)  # "Unable to locate package"
            return subprocess.CompletedProcess(command, 100, "", "")
        return recorded(command, **kwargs)

    monkeypatch.setattr(runtime.subprocess, "run", fails_before_update)
    assert runtime.ensure_cjk_font(install=True) is True
    assert [c[1] for c in machine.commands] == ["install", "update", "install"]


def test_a_font_already_known_installs_nothing(machine, colab, capsys):
    font_manager.fontManager.ttflist.append(_Font("Noto Sans CJK JP"))
    assert runtime.ensure_cjk_font() is True
    assert machine.commands == []
    assert capsys.readouterr().out == ""


def test_a_font_file_matplotlib_missed_is_registered_not_installed(machine):
    folder = pathlib.Path(runtime.CJK_FILES).parent
    (folder / "NotoSansCJK-Regular.ttc").write_bytes(b"")
    assert runtime.ensure_cjk_font(install=True) is True
    assert machine.commands == []
    assert labels.cjk_font() == "Noto Sans CJK SC"


def test_no_font_and_no_apt_says_so_once_and_returns_false(
    machine, colab, capsys
):
    machine.apt = None
    assert runtime.ensure_cjk_font() is False
    assert machine.commands == []
    assert capsys.readouterr().out == labels.NO_FONT + "\n"
    # setup(language="zh") finds no font either: the notice is not repeated
    assert labels.set_language("zh") == "en"
    assert capsys.readouterr().out == ""


def test_outside_colab_nothing_is_installed(machine, capsys):
    assert runtime.ensure_cjk_font() is False
    assert machine.commands == []
    assert labels.NO_FONT in capsys.readouterr().out


def test_install_must_be_a_bool(machine):
    raises(TypeError, "install", runtime.ensure_cjk_font, install="yes")
