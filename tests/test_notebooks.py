"""Jupyter notebooks: code cells linted as one program, in order; positions as cell and line
in every output format; ``--fix`` writes back into the JSON keeping its formatting; ``# noqa``
per cell line; notebooks found by default; IPython magics neutralised. The notebooks are
written at test time."""

from __future__ import annotations

import json

import pytest

from reflint import notebook
from reflint.cli import main


def cell(*lines, kind="code"):
    src = [ln + "\n" for ln in lines[:-1]] + [lines[-1]] if lines else []
    c = {"cell_type": kind, "metadata": {}, "source": src}
    if kind == "code":
        c = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
             "source": src}
    return c


def write_nb(path, cells, indent=1, trailing="\n", language="python"):
    nb = {"cells": cells,
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": language,
                                      "name": "python3"},
                       "language_info": {"name": language}},
          "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(nb, indent=indent, ensure_ascii=False) + trailing
    path.write_text(text, encoding="utf-8")
    return text


CELLS = [
    cell("# Refs", kind="markdown"),
    cell("%matplotlib inline", "import jax", "import jax.numpy as jnp",
         "x_ref = jax.new_ref(jnp.zeros(3))"),
    cell("!pip install jax", "files = !ls", "y = jnp.sin(x_ref) + 1",
         "z = x_ref * 2  # noqa: REF007", "jnp.sin?"),
    cell("%%timeit", "w = x_ref + 1"),  # a cell magic's cell is not Python: not linted
    cell("x_ref = jnp.ones(3)", "v = jnp.cos(x_ref)"),  # rebound: an Array from here on
]


@pytest.fixture
def nb(tmp_path):
    p = tmp_path / "demo.ipynb"
    write_nb(p, CELLS)
    return p


def run(capsys, *args):
    code = main(["check", "--no-cache", *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cells_are_one_program_and_positions_are_cell_and_line(nb, capsys):
    code, out, _ = run(capsys, nb)
    assert code == 1
    head = [ln for ln in out.splitlines() if "REF" in ln and ln.startswith(str(nb))]
    # cell 2 (code cells count from 1), line 3 of the cell; the name bound in cell 1 is a
    # ref; the noqa on line 4 holds; the %%timeit cell and the rebound x_ref of cell 4 are
    # not findings; the magics do not break the parse (no REF900).
    assert head == [f"{nb}:cell 2:3:13: REF007 x_ref is a Ref passed to jnp.sin, which "
                    "expects an Array (x_ref was created in cell 1, line 4); read it first "
                    "with x_ref[...]"]
    assert "     3 | y = jnp.sin(x_ref) + 1" in out
    assert "Found 1 error in 1 file." in out


def test_json_sarif_github_concise_carry_the_cell(nb, capsys):
    _, out, _ = run(capsys, "--format", "json", nb)
    (d,) = json.loads(out)
    assert (d["cell"], d["line"], d["column"], d["end_line"]) == (2, 3, 13, 3)
    assert d["fix"]["edits"][0]["line"] == 3  # the edit, too, is in the cell's lines
    _, out, _ = run(capsys, "--format", "sarif", nb)
    (r,) = json.loads(out)["runs"][0]["results"]
    assert r["properties"] == {"cell": 2}
    assert r["locations"][0]["physicalLocation"]["region"]["startLine"] == 3
    assert r["message"]["text"].startswith("cell 2, line 3: ")
    _, out, _ = run(capsys, "--format", "github", nb)
    assert "line=3,col=13" in out and "::cell 2, line 3: x_ref is a Ref" in out
    _, out, _ = run(capsys, "--format", "concise", nb)
    assert out.startswith(f"{nb}:cell 2:3:13: REF007 ")


def test_fix_writes_back_keeping_the_json_formatting(tmp_path, capsys):
    for indent, trailing in ((1, "\n"), (2, ""), (4, "\n")):
        p = tmp_path / f"n{indent}.ipynb"
        before = write_nb(p, CELLS, indent=indent, trailing=trailing)
        code, _, err = run(capsys, "--fix", p)
        assert code == 0, err
        after = p.read_text(encoding="utf-8")
        expected = before.replace('"y = jnp.sin(x_ref) + 1\\n"',
                                  '"y = jnp.sin(x_ref[...]) + 1\\n"')
        assert after == expected  # only that line changed: indent, key order, newline kept
        assert "fixed 1 finding" in err
        assert run(capsys, p)[0] == 0


def test_fix_keeps_magics_and_string_sources(tmp_path, capsys):
    p = tmp_path / "s.ipynb"
    cells = [cell("%load_ext autoreload", "import jax", "import jax.numpy as jnp",
                  "r = jax.new_ref(jnp.zeros(2))", "!echo hi", "s = jnp.sum(r)")]
    cells[0]["source"] = "".join(cells[0]["source"])  # a string, as some tools write
    write_nb(p, cells)
    assert run(capsys, "--fix", p)[0] == 0
    src = json.loads(p.read_text())["cells"][0]["source"]
    assert src == ("%load_ext autoreload\nimport jax\nimport jax.numpy as jnp\n"
                   "r = jax.new_ref(jnp.zeros(2))\n!echo hi\ns = jnp.sum(r[...])")


def test_diff_shows_the_json_change(nb, capsys):
    code, out, _ = run(capsys, "--diff", nb)
    assert code == 1
    assert '-    "y = jnp.sin(x_ref) + 1\\n",' in out
    assert '+    "y = jnp.sin(x_ref[...]) + 1\\n",' in out


def test_notebooks_are_discovered_by_default(tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    write_nb(tmp_path / "sub" / "a.ipynb", CELLS)
    (tmp_path / "b.py").write_text("x = 1\n")
    code, out, _ = run(capsys, tmp_path)
    assert code == 1
    assert "a.ipynb:cell 2:3:13: REF007" in out
    assert "in 1 file." in out


def test_noqa_per_cell_line(tmp_path, capsys):
    p = tmp_path / "q.ipynb"
    write_nb(p, [cell("import jax", "import jax.numpy as jnp", "r = jax.new_ref(1.0)"),
                 cell("a = jnp.sin(r)  # noqa: REF007"), cell("b = jnp.cos(r)")])
    code, out, _ = run(capsys, "--format", "concise", p)
    assert code == 1
    assert [ln.split(": ")[0] for ln in out.splitlines() if "REF007" in ln] == \
        [f"{p}:cell 3:1:13"]


def test_syntax_error_and_invalid_json_are_reported_not_raised(tmp_path, capsys):
    p = tmp_path / "bad.ipynb"
    write_nb(p, [cell("import jax"), cell("def f(:")])
    code, out, _ = run(capsys, "--format", "concise", p)
    assert code == 1 and f"{p}:cell 2:1:" in out and "REF900" in out
    q = tmp_path / "broken.ipynb"
    q.write_text("{not json")
    code, out, _ = run(capsys, "--format", "concise", q)
    assert code == 1 and "REF900" in out and "invalid JSON" in out


def test_other_kernels_and_empty_notebooks_are_clean(tmp_path, capsys):
    p = tmp_path / "r.ipynb"
    write_nb(p, [cell("x_ref <- 1", "print(x_ref + 1)")], language="R")
    e = tmp_path / "e.ipynb"
    write_nb(e, [])
    assert run(capsys, p, e)[0] == 0


def test_stdin_with_a_notebook_name(nb, capsys, monkeypatch):
    import io
    import sys

    data = nb.read_bytes()
    monkeypatch.setattr(sys, "stdin", type("S", (), {"buffer": io.BytesIO(data)})())
    code, out, _ = run(capsys, "-", "--stdin-filename", "demo.ipynb")
    assert code == 1 and "demo.ipynb:cell 2:3:13: REF007" in out


def test_neutralised_lines():
    assert notebook._neutral("%time f(x)") == "pass"
    assert notebook._neutral("    !ls") == "    pass"
    assert notebook._neutral("out = !ls -l") == "out = None"
    assert notebook._neutral("jnp.sin?") == "pass"
    assert notebook._neutral("x = a % b") is None
    assert notebook._neutral("y = 1") is None
