"""A cache that cannot hide findings (issue 29): entries are authenticated with this
machine's secret, a committed or linked cache folder is not used, and cached (or any)
messages are printed with control characters made visible."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from reflint import cli
from reflint.cache import Cache, load_secret, tracked_by_git
from reflint.diagnostics import Diagnostic
from reflint.output import format_concise, format_github, format_text, printable
from reflint.settings import Settings

BAD = "import jax\nx_ref = jax.new_ref(1)\ny = x_ref + 1\n"


@pytest.fixture(autouse=True)
def own_secret(tmp_path, monkeypatch):
    monkeypatch.setenv("REFLINT_CACHE_SECRET", str(tmp_path / "home" / "secret"))


def _entries(directory):
    return [os.path.join(d, f) for d, _, fs in os.walk(directory) for f in fs
            if f.endswith(".json")]


def test_a_well_formed_forged_entry_does_not_hide_a_finding(tmp_path):
    p = tmp_path / "a.py"
    p.write_text(BAD)
    cache = Cache(str(tmp_path / "cache"))
    first = cli.check_paths([str(p)], Settings(), 1, cache=cache)
    assert first[0].diagnostics
    (entry,) = _entries(cache.directory)
    with open(entry) as fh:
        data = json.load(fh)
    # What an attacker can compute: the key; not the secret. An empty, well-formed entry:
    for mac in (None, data["mac"], "0" * 64):
        forged = {"key": data["key"], "path": data["path"], "diagnostics": []}
        if mac is not None:
            forged["mac"] = mac
        with open(entry, "w") as fh:
            json.dump(forged, fh)
        again = cli.check_paths([str(p)], Settings(), 1, cache=Cache(cache.directory))
        assert [d.code for d in again[0].diagnostics] == ["REF007"]


def test_an_entry_from_another_machine_is_a_miss(tmp_path, monkeypatch):
    p = tmp_path / "a.py"
    p.write_text(BAD)
    cache = Cache(str(tmp_path / "cache"))
    cli.check_paths([str(p)], Settings(), 1, cache=cache)
    other = Cache(str(tmp_path / "cache"), secret=os.urandom(32))
    assert other.get(cache.key(str(p), BAD.encode(), Settings()), str(p)) is None
    same = Cache(str(tmp_path / "cache"))
    assert same.get(cache.key(str(p), BAD.encode(), Settings()), str(p)) is not None


def test_the_secret_is_private_and_not_followed_through_a_link(tmp_path):
    path = tmp_path / "s" / "secret"
    secret = load_secret(str(path))
    assert secret and len(secret) >= 32 and load_secret(str(path)) == secret
    assert os.stat(path).st_mode & 0o077 == 0
    os.chmod(path, 0o644)
    assert load_secret(str(path)) is None  # readable by others: not trusted
    link = tmp_path / "s" / "link"
    os.symlink(path, link)
    assert load_secret(str(link)) is None


def test_a_linked_cache_folder_is_never_written_through(tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.py").write_text(BAD)
    os.symlink(outside, tree / ".reflint_cache")
    cache = Cache(str(tree / ".reflint_cache"))
    assert cache.disabled and "symbolic link" in capsys.readouterr().err
    res = cli.check_paths([str(tree / "a.py")], Settings(), 1, cache=cache)
    assert res[0].diagnostics and not list(outside.iterdir())
    # A link one level down (v1 -> elsewhere) as well.
    real = tree / "real_cache"
    real.mkdir()
    os.symlink(outside, real / "v1")
    cache = Cache(str(real))
    cli.check_paths([str(tree / "a.py")], Settings(), 1, cache=cache)
    assert not list(outside.iterdir())


@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
                    reason="needs git")
def test_a_committed_cache_is_ignored(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text(BAD)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    r = subprocess.run([sys.executable, "-m", "reflint", "check", "a.py"], cwd=repo,
                       capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 1
    assert not tracked_by_git(str(repo / ".reflint_cache"))
    # Commit the cache (forcing past its .gitignore), as a careless or hostile commit would.
    subprocess.run(git + ["add", "-f", ".reflint_cache"], check=True)
    assert tracked_by_git(str(repo / ".reflint_cache"))
    r = subprocess.run([sys.executable, "-m", "reflint", "check", "a.py"], cwd=repo,
                       capture_output=True, text=True)
    assert r.returncode == 1 and "tracked by git" in r.stderr


def test_control_characters_are_made_visible_in_text_outputs():
    msg = "x\x1b[2J\x1b]0;pwned\x07 \u202egnp.exe\r\nend\x9b"
    d = Diagnostic(path="a\x1b[31m.py", line=1, column=1, code="REF007", name="n",
                   message=msg, end_line=1, end_column=2)
    source = "y = \x1b[2Jx_ref + 1\n"
    for text in (format_text([d], {d.path: source}), format_concise([d]),
                 format_github([d])):
        assert not any(c in text for c in "\x1b\x07\x9b\u202e\r"), repr(text)
    assert printable("a\tb") == "a\tb"  # tabs stay
    assert len(printable("\x1b[2J")) == 4  # one character each: carets stay aligned


def test_a_cached_message_is_escaped_when_printed(tmp_path, monkeypatch):
    """Even an authentic entry (written by this machine) holding escape sequences cannot
    reach the terminal raw."""
    p = tmp_path / "a.py"
    p.write_text(BAD)
    args = [sys.executable, "-m", "reflint", "check", "--cache-dir", str(tmp_path / "cache"),
            str(p)]
    subprocess.run(args, capture_output=True, env=dict(os.environ))
    (entry,) = _entries(tmp_path / "cache")
    with open(entry) as fh:
        data = json.load(fh)
    data["diagnostics"][0]["message"] = "\x1b[2Jcleared"
    data["mac"] = Cache(str(tmp_path / "cache"))._mac(data["key"], data["path"],
                                                      data["diagnostics"])
    with open(entry, "w") as fh:
        json.dump(data, fh)
    r = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ))
    assert "cleared" in r.stdout and "\x1b" not in r.stdout
