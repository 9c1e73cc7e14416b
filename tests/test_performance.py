"""Speed machinery must not change results: pre-filter, parallel checking, cache, parsing.

These are behaviour tests, not timings (the benchmark is bench/run.py)."""

import json
import os
import random
import re
import shutil
import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from conftest import FIXTURES, ROOT, fixture_files, reflint_cmd
from reflint import cache as cache_mod
from reflint import cli, cstbridge, engine
from reflint.analysis import ModuleAnalysis, _positions_of
from reflint.cache import Cache
from reflint.engine import Prefilter, lint_source, parse_module, prefilter
from reflint.rule import REF_TRIGGERS, all_rules
from reflint.settings import Settings

RULES = all_rules()
EXAMPLES_DIR = os.path.join(ROOT, "examples")


def _example_sources():
    """(name, source) of every rule's documented examples, examples/ and the fixtures."""
    out = []
    for r in RULES:
        bad, good = r.examples()
        out.append((f"{r.code}_example.py", bad))
        out.append((f"{r.code}_use_instead.py", good))
    for root, _, files in os.walk(EXAMPLES_DIR):
        for f in sorted(files):
            if f.endswith(".py"):
                p = os.path.join(root, f)
                with open(p, encoding="utf-8") as fh:
                    out.append((os.path.relpath(p, ROOT), fh.read()))
    for p in fixture_files():
        with open(p, encoding="utf-8") as fh:
            out.append((os.path.relpath(p, FIXTURES), fh.read()))
    return out


SOURCES = _example_sources()


def _write_tree(root):
    """The examples and fixtures as files under ``root``; returns their paths."""
    paths = []
    for name, src in SOURCES:
        p = os.path.join(root, name.replace(os.sep, "__"))
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(src)
        paths.append(p)
    # A file no rule can fire on (skipped by the pre-filter) and one that does not parse.
    with open(os.path.join(root, "plain.py"), "w") as fh:
        fh.write("import numpy as np\n\nx = np.zeros(3) + 1\n")
    with open(os.path.join(root, "broken.py"), "w") as fh:
        fh.write("import jax\nx = jax.new_ref(\n")
    # A file the pre-filter rules out that does not parse either: still REF900.
    with open(os.path.join(root, "plain_broken.py"), "w") as fh:
        fh.write("import numpy as np\n\ndef f(:\n    pass\n")
    return sorted(paths + [os.path.join(root, n)
                           for n in ("plain.py", "broken.py", "plain_broken.py")])


# --------------------------------------------------------------------------------------------
# Pre-filter
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,source", SOURCES, ids=[n for n, _ in SOURCES])
@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
def test_prefilter_keeps_every_finding_per_rule(name, source):
    """For all rules together and for each rule alone: pre-filter on == off."""
    selections = [Settings()] + [Settings(select=frozenset({r.code})) for r in RULES]
    for settings in selections:
        on = lint_source(source, name, settings, use_prefilter=True).diagnostics
        off = lint_source(source, name, settings, use_prefilter=False).diagnostics
        assert on == off, (sorted(settings.select), on, off)


def test_documented_examples_are_candidates_and_fire():
    for r in RULES:
        bad, _ = r.examples()
        assert prefilter(Settings(select=frozenset({r.code}))).search(bad), r.code


def test_ref_triggers_name_every_ref_source_spelling():
    from reflint import api

    rx = re.compile(REF_TRIGGERS)
    for qn, canon in api.CANONICAL.items():
        if canon in api.REF_SOURCES:
            assert rx.search(f"from x import {qn.rsplit('.', 1)[-1]}"), qn
            assert rx.search(qn), qn
    # Whole words only, but any word boundary: attribute, import, annotation string.
    assert not rx.search("reference = RefCount(); my_new_refs = 1")
    assert rx.search("def f(x: 'jax.Ref'): ...")
    assert rx.search("state.AbstractRef")


def test_availability_triggers_name_every_spelling():
    """REF015 fires on any name of the availability table however it is imported: each
    spelling (and each target version) gives the same findings with the pre-filter on."""
    from reflint import api

    for qn in list(api.AVAILABILITY):
        module, _, last = qn.rpartition(".")
        spellings = [f"from {module} import {last}\n",
                     f"from {module} import (\n    {last},\n)\n",
                     f"import {module} as m\nprint(m.{last})\n",
                     f"import {module} as m\nprint(m\\\n    .{last})\n"]
        for source in spellings:
            for version in api.MEASURED_VERSIONS:
                settings = Settings(select=frozenset({"REF015"}), target_jax_version=version)
                on = lint_source(source, "a.py", settings).diagnostics
                off = lint_source(source, "a.py", settings, use_prefilter=False).diagnostics
                assert on == off, (source, version, off)


# Every way a statement can assign an item or an attribute without `] =` or `.x =` in the
# text: tuple and list targets, `for` and `with` targets, annotations, line continuations.
TARGET_FORMS = ["{t}, other = {v}, 1", "other, {t} = 1, {v}", "({t}, other) = {v}, 1",
                "[{t}, other] = {v}, 1", "for {t} in [{v}]:\n    pass",
                "for k, {t} in enumerate([{v}]):\n    pass", "{t}\\\n    = {v}",
                "{t}: float = {v}", "with ctx() as {t}:\n    pass"]
TARGETS = ["x[0]", "cache[0]", "state.attr", "x[0][1]"]


@pytest.mark.parametrize("form", TARGET_FORMS)
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("traced", [False, True])
def test_prefilter_keeps_targets_written_without_an_assignment_sign(form, target, traced):
    stmt = form.format(t=target, v="jnp.sin(y)")
    body = f"@jax.jit\ndef f(y):\n{textwrap.indent(stmt, '    ')}\n    return y\n" if traced \
        else f"y = 1.0\n{stmt}\n"
    source = ("import contextlib\nimport jax\nimport jax.numpy as jnp\nx = jnp.zeros((3, 3))\n"
              "cache = {}\nclass State:\n    pass\nstate = State()\nctx = contextlib.nullcontext\n"
              + body)
    compile(source, "t.py", "exec")
    for settings in [Settings()] + [Settings(select=frozenset({c})) for c in ("REF012", "REF013")]:
        on = lint_source(source, "t.py", settings).diagnostics
        off = lint_source(source, "t.py", settings, use_prefilter=False).diagnostics
        assert on == off, (source, off)


PATTERNS = [
    REF_TRIGGERS,
    r"new_ref|empty_ref|\bRef\b|pallas",
    r"(?:a|b)_ref\b|x+yz",
    r"\Bref\B|^import jax$",
    r"Ref(?=\[)|(?<!_)freeze\(",  # lookaround: no windows
    r"(?i)NEW_REF",  # ignore case: no literal gate
    r"foo.*bar",  # unbounded width: gate only
    r"[ab]c|d",
    r"\bat\s*\[",  # unbounded, after a word boundary: the rest searched, the boundary tested
    r"\bref\w*x",
    r"\bat\s*\[|\bRef\b",  # an alternation: searched whole
]
WORDS = ["Ref", "ref", "new_ref", "_ref", "pallas", "a_ref", "b_ref", "xyz", "xxyz", "freeze(",
         "[", "_", " ", "\n", "x", "import jax", "NEW_REF", "foo", "bar", "ac", "d", "é", ".",
         "at", "data", "ata", "\t", "refx"]


@pytest.mark.parametrize("max_windows", [200, 1, 0])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_prefilter_matches_like_its_regex(pattern, max_windows, monkeypatch):
    """Window by window, or the whole text once past ``MAX_WINDOWS`` windows: the regex's
    answer."""
    monkeypatch.setattr(engine, "MAX_WINDOWS", max_windows)
    pf = Prefilter(pattern)
    rng = random.Random(pattern)
    for _ in range(3000):
        text = "".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12)))
        expected = bool(re.search(pattern, text))
        got = bool(pf.search(text))
        assert got == expected, (pattern, text)


@pytest.mark.parametrize("tail, expected", [("", False), ("pallas_call(k)", True)])
def test_prefilter_many_literals_that_do_not_match(tail, expected):
    """A kernel file spells `_ref` hundreds of times, none a whole word: the windows stop
    after MAX_WINDOWS and the whole text is searched once, with the regex's answer."""
    text = "".join(f"x{i}_ref = y{i}_ref\n" for i in range(200)) + tail
    assert bool(Prefilter(REF_TRIGGERS).search(text)) is expected
    assert bool(re.search(REF_TRIGGERS, text)) is expected


TRIGGER_WORDS = ["jax", "numpy", "lax", "jit", "]", "[", "class", "append", " ", "\n", "x",
                 "new_ref", "Ref", "donate_argnums", "ad", "nn", "_", ".", "freeze", "pallas"]


def _triggered(rule, text):
    parts = (rule.triggers,) if isinstance(rule.triggers, str) else rule.triggers
    return all(re.search(p, text) for p in parts)


@pytest.mark.parametrize("select", [None, "REF012", "REF013", "REF014", "REF015",
                                    "REF001,REF013"])
def test_prefilter_is_any_rule_whose_triggers_all_match(select):
    """A rule's triggers (one regex, or several that must all match) and the pre-filter
    built from the enabled rules agree on random texts and on real files."""
    settings = Settings() if select is None else Settings(select=frozenset(select.split(",")))
    rules = [r for r in RULES if settings.enabled(r.code)]
    pf = prefilter(settings)
    rng = random.Random(select)
    texts = ["".join(rng.choice(TRIGGER_WORDS) for _ in range(rng.randint(0, 10)))
             for _ in range(3000)] + [src for _, src in SOURCES]
    for text in texts:
        expected = any(_triggered(r, text) for r in rules)
        assert bool(pf.search(text)) == expected, (select, text)


def test_prefilter_literals_and_windows():
    pf = Prefilter(REF_TRIGGERS)
    assert pf.literals and "Ref" in pf.literals and "AbstractRef" not in pf.literals
    assert pf.window is not None
    assert Prefilter(r"Ref(?=\[)").window is None
    assert Prefilter(r"(?i)ref").literals is None
    assert Prefilter(r"\w+").literals is None
    assert Prefilter(r"\bat\s*\[").window is None
    assert Prefilter(r"\bat\s*\[")._rest == r"at\s*\["
    assert Prefilter(r"\bat\s*\[|\bRef\b")._rest is None
    assert Prefilter(r"\b\.at\s*\[")._rest is None  # `\b` before a non-word character
    assert Prefilter(None).search("anything")


# --------------------------------------------------------------------------------------------
# Parsing and positions: the fast paths give the same trees and ranges
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,source", SOURCES[:40], ids=[n for n, _ in SOURCES[:40]])
def test_parse_without_validation_gives_the_same_tree(name, source):
    fast = cstbridge.parse_module_cst(source)
    slow = cst.parse_module(source)
    assert fast.deep_equals(slow)
    assert fast.code == source
    # Validation is back on afterwards.
    with pytest.raises(cst.CSTValidationError):
        cst.SimpleWhitespace("x")


def test_positions_match_metadata_wrapper():
    for name, source in SOURCES[:10]:
        module = cst.parse_module(source)
        ours = cstbridge.cst_positions(module)
        theirs = cst.metadata.MetadataWrapper(module, unsafe_skip_copy=True).resolve(
            cst.metadata.PositionProvider)
        assert dict(ours) == dict(theirs), name
        # An API caller's libcst tree is converted; positions map back to libcst's.
        analysis = ModuleAnalysis(module)
        stmt = analysis.module.body[0]
        r = theirs[module.body[0]]
        assert analysis.position(stmt) == (r.start.line, r.start.column + 1,
                                           r.end.line, r.end.column + 1), name


# --------------------------------------------------------------------------------------------
# Parallel checking and the cache: identical findings every way
# --------------------------------------------------------------------------------------------


def _digest(results):
    return [(r.path, [d.to_json() for d in r.diagnostics]) for r in results]


@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
def test_jobs_1_and_2_cold_and_warm_are_identical(tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    files = _write_tree(str(src))
    settings = Settings()
    monkeypatch.setattr(cli, "PARALLEL_MIN_CHARS", 0)  # use the pool even for small files
    reference = _digest(cli.check_paths(files, settings, 1))
    assert any(d for _, d in reference), "the examples must produce findings"
    assert any(d["code"] == "REF900" for _, ds in reference for d in ds)
    for jobs in (1, 2):
        assert _digest(cli.check_paths(files, settings, jobs)) == reference
        c = Cache(str(tmp_path / f"cache{jobs}"))
        stats_cold, stats_warm = {}, {}
        assert _digest(cli.check_paths(files, settings, jobs, cache=c, stats=stats_cold)) == \
            reference
        assert _digest(cli.check_paths(files, settings, jobs, cache=Cache(c.directory),
                                       stats=stats_warm)) == reference
        assert stats_cold["analysed"] > 0 and stats_cold["cached"] == 0
        assert stats_cold["skipped"] >= 2 and stats_cold["gated"] >= 1
        assert stats_cold["skipped"] + stats_cold["gated"] + stats_cold["analysed"] == len(files)
        # Every file's result is cached, whatever stage decided it.
        assert stats_warm["cached"] == len(files)
        assert stats_warm["analysed"] == stats_warm["gated"] == stats_warm["skipped"] == 0
        by_name = {os.path.basename(p): ds for p, ds in reference}
        assert [d["code"] for d in by_name["plain_broken.py"]] == ["REF900"]
        assert by_name["plain.py"] == []


def _cli_json(args, cwd, env=None):
    r = subprocess.run(reflint_cmd() + ["check", "--format", "json", "--exit-zero"] + args,
                       capture_output=True, text=True, cwd=cwd, timeout=300,
                       env={**os.environ, **(env or {})})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
def test_cli_jobs_and_cache_give_identical_output(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _write_tree(str(src))
    cache_dir = str(tmp_path / "cache")
    base, _ = _cli_json(["--jobs", "1", "--no-cache", "src"], tmp_path)
    assert base
    assert not os.path.exists(tmp_path / ".reflint_cache")  # --no-cache writes nothing
    for args in (["--jobs", "2", "--no-cache"], ["--jobs", "2", "--cache-dir", cache_dir],
                 ["--jobs", "1", "--cache-dir", cache_dir],
                 ["--jobs", "2", "--cache-dir", cache_dir]):
        out, _ = _cli_json(args + ["src"], tmp_path)
        assert out == base, args


def test_editing_one_file_reanalyses_only_that_file(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    files = _write_tree(str(src))
    env = {"REFLINT_STATS": "1"}
    first, err = _cli_json(["src"], tmp_path, env)
    m = re.search(r"(\d+) files: (\d+) skipped by the pre-filter, (\d+) ruled out by its ast "
                  r"stage, (\d+) from the cache, (\d+) analysed", err)
    assert m, err
    n_files, skipped, gated, cached, analysed = map(int, m.groups())
    assert n_files == len(files) and cached == 0 and analysed + gated + skipped == n_files
    # The default cache folder: .reflint_cache in the project root (here: the cwd).
    assert (tmp_path / ".reflint_cache" / ".gitignore").read_text().strip().endswith("*")
    _, err = _cli_json(["src"], tmp_path, env)
    assert f"{n_files} from the cache, 0 analysed" in err
    # Edit one candidate file: only it is analysed again.
    target = next(f for f in files if f.endswith("_example.py"))
    with open(target, "a") as fh:
        fh.write("\n# edited\n")
    again, err = _cli_json(["src"], tmp_path, env)
    assert f"{n_files - 1} from the cache, 1 analysed" in err
    assert again == first


def test_default_cache_dir_is_at_the_project_root(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    sub = tmp_path / "pkg" / "sub"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    monkeypatch.delenv(cache_mod.ENV_CACHE_DIR, raising=False)
    assert cache_mod.default_cache_dir() == str(tmp_path / ".reflint_cache")
    monkeypatch.setenv(cache_mod.ENV_CACHE_DIR, str(tmp_path / "elsewhere"))
    assert cache_mod.default_cache_dir() == str(tmp_path / "elsewhere")
    bare = tmp_path / "bare"
    bare.mkdir()
    assert cache_mod.project_root(str(bare)) == str(tmp_path)


BAD = "import jax\nimport jax.numpy as jnp\nx_ref = jax.new_ref(jnp.zeros(3))\ny = jnp.sin(x_ref)\n"


def _one_file(tmp_path, text=BAD):
    p = tmp_path / "bad.py"
    p.write_text(text)
    return [str(p)]


def _entries(c):
    out = []
    for root, _, files in os.walk(c.root):
        out += [os.path.join(root, f) for f in files if f.endswith(".json")]
    return out


def test_corrupted_or_foreign_entries_are_ignored(tmp_path):
    files = _one_file(tmp_path)
    other = tmp_path / "other.py"
    other.write_text(BAD.replace("sin", "cos"))
    settings = Settings()
    c = Cache(str(tmp_path / "cache"))
    expected = _digest(cli.check_paths(files, settings, 1, cache=c))
    assert expected[0][1], "the file has a finding"
    _digest(cli.check_paths([str(other)], settings, 1, cache=c))
    entries = sorted(_entries(c))
    assert len(entries) == 2
    for garbage in (b"", b"{not json", b"[]", b'{"key": 1}', b"\xff\xfe",
                    json.dumps({"key": "x", "path": files[0], "diagnostics": []}).encode()):
        for e in entries:
            with open(e, "wb") as fh:
                fh.write(garbage)
        stats = {}
        assert _digest(cli.check_paths(files, settings, 1, cache=Cache(c.directory),
                                       stats=stats)) == expected
        assert stats["cached"] == 0 and stats["analysed"] == 1
    # A well-formed entry of another file, put in this file's place: ignored.
    key = c.key(files[0], open(files[0], "rb").read(), settings)
    okey = c.key(str(other), other.read_bytes(), settings)
    cli.check_paths([str(other)], settings, 1, cache=Cache(c.directory))
    shutil.copy(c._entry(okey), c._entry(key))
    stats = {}
    assert _digest(cli.check_paths(files, settings, 1, cache=Cache(c.directory),
                                   stats=stats)) == expected
    assert stats["cached"] == 0
    # ... and the entry is rewritten, so the next run hits.
    stats = {}
    cli.check_paths(files, settings, 1, cache=Cache(c.directory), stats=stats)
    assert stats["cached"] == 1


def test_settings_path_and_reflint_sources_are_part_of_the_key(tmp_path, monkeypatch):
    files = _one_file(tmp_path)
    data = open(files[0], "rb").read()
    c = Cache(str(tmp_path / "cache"))
    k = c.key(files[0], data, Settings())
    assert k != c.key(files[0], data, Settings(select=frozenset({"REF007"})))
    assert k != c.key(files[0], data, Settings(target_jax_version=(0, 7, 1)))
    assert k != c.key(files[0] + "x", data, Settings())
    assert k != c.key(files[0], data + b"\n", Settings())
    monkeypatch.setattr(cache_mod, "_FINGERPRINT", "a developer edited a rule")
    assert k != c.key(files[0], data, Settings())


def test_fingerprint_covers_rule_sources():
    import reflint.rules as pkg

    cache_mod._FINGERPRINT = None
    fp = cache_mod.fingerprint()
    assert len(fp) == 64 and cache_mod.fingerprint() == fp
    assert any(os.path.exists(os.path.join(p, "ref_returned.py")) for p in pkg.__path__)


def test_unwritable_cache_is_skipped(tmp_path):
    files = _one_file(tmp_path)
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    c = Cache(str(blocker))
    res = cli.check_paths(files, Settings(), 1, cache=c)
    assert res[0].diagnostics and c.writes == 0


@pytest.mark.slow  # issue 28: CI's full suite, not the README's quick one
def test_concurrent_runs_share_the_cache(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _write_tree(str(src))
    base, _ = _cli_json(["--no-cache", "src"], tmp_path)
    cmd = reflint_cmd() + ["check", "--format", "json", "--exit-zero", "--cache-dir", "cache",
                           "src"]
    procs = [subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(json.loads(o) == base for o in outs)
    c = Cache(str(tmp_path / "cache"))
    assert not [f for f in os.listdir(c.root) if f.startswith(".tmp-")]
    for e in _entries(c):
        json.loads(open(e).read())  # complete entries only
    warm, _ = _cli_json(["--cache-dir", "cache", "src"], tmp_path)
    assert warm == base


def test_fixes_still_work_with_a_warm_cache(tmp_path):
    p = tmp_path / "bad.py"
    p.write_text(BAD)
    env = {"REFLINT_CACHE_DIR": str(tmp_path / "cache")}
    _cli_json([str(p)], tmp_path, env)  # fills the cache
    r = subprocess.run(reflint_cmd() + ["check", "--fix", str(p)], capture_output=True,
                       text=True, cwd=tmp_path, env={**os.environ, **env}, timeout=300)
    assert "jnp.sin(x_ref[...])" in p.read_text(), r.stdout + r.stderr


def test_small_files_travel_in_batches_big_ones_alone():
    sizes = [200_000, 60_000, 30_000, 20_000, 9_000, 5_000, 5_000, 100, 10]
    tasks = [(i, f"f{i}.py", b"x" * n) for i, n in enumerate(sizes)]
    batches = cli._batches(tasks)
    assert [t for b in batches for t in b] == tasks  # each once, in order
    assert batches[0] == [tasks[0]] and batches[1] == [tasks[1]]
    assert all(sum(len(t[2]) for t in b) < cli.BATCH_CHARS + max(len(t[2]) for t in b)
               for b in batches)
    assert len(batches) < len(tasks)


def test_worker_errors_do_not_stop_the_run(tmp_path, monkeypatch):
    files = _one_file(tmp_path)

    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "lint_source", boom)
    c = Cache(str(tmp_path / "cache"))
    res = cli.check_paths(files, Settings(), 1, cache=c)
    assert "internal error" in res[0].diagnostics[0].message
    assert c.writes == 0  # internal errors are not cached


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
