"""``reflint server`` in real editors, where they are installed (Debian: ``apt-get install
neovim``, ``apt-get install emacs-nox elpa-eglot``): each script opens a Pallas kernel with
missing ``[...]``, waits for the diagnostics, applies the quick fix and then "Fix all",
and writes the file. Skipped where the editor is missing."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

pytest.importorskip("pygls")

from lsp_helpers import ROOT, reflint_wrapper  # noqa: E402

EDITORS = os.path.join(ROOT, "tests", "editors")
EXAMPLE = os.path.join(ROOT, "examples", "pallas_rmsnorm.py")


def _expected() -> str:
    with open(EXAMPLE, encoding="utf-8") as fh:
        text = fh.read()
    return text.replace("* g_ref\n", "* g_ref[...]\n").replace("jnp.tanh(x_ref)",
                                                               "jnp.tanh(x_ref[...])")


def _run(cmd, tmp_path):
    work = tmp_path / "project"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)  # eglot's project
    kernel = work / "kernel.py"
    shutil.copyfile(EXAMPLE, kernel)
    env = dict(os.environ, REFLINT=reflint_wrapper(tmp_path),
               TRANSCRIPT=str(tmp_path / "transcript.txt"), HOME=str(tmp_path))
    proc = subprocess.run(cmd + [str(kernel)], cwd=work, env=env, capture_output=True,
                          text=True, timeout=180, check=False)
    transcript = (tmp_path / "transcript.txt").read_text(encoding="utf-8")
    assert proc.returncode == 0, transcript + proc.stderr[-2000:]
    assert kernel.read_text(encoding="utf-8") == _expected(), transcript
    return transcript


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim is not installed")
def test_neovim_builtin_client(tmp_path):
    t = _run(["nvim", "--headless", "-u", os.path.join(EDITORS, "neovim_demo.lua")], tmp_path)
    assert "REF007" in t and "choosing: Read the ref with [...]" in t
    assert "0 diagnostic(s) left" in t


@pytest.mark.skipif(shutil.which("emacs") is None, reason="Emacs is not installed")
def test_emacs_eglot(tmp_path):
    if subprocess.run(["emacs", "--batch", "--eval", "(require 'eglot)"],
                      capture_output=True, check=False).returncode != 0:
        pytest.skip("eglot is not installed")
    t = _run(["emacs", "--batch", "-l", os.path.join(EDITORS, "eglot_demo.el")], tmp_path)
    assert "REF007" in t and "flymake: 0 diagnostic(s) left" in t
