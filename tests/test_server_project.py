"""``reflint server`` with the whole project (reflint/server_project.py, issue 25): a document
is analysed with the project of its root (the unsaved buffers over the disk), and an edit of
one document re-diagnoses the open documents that read what it changed."""

from __future__ import annotations

import asyncio
import os
import shutil
import time

import pytest

from reflint import server_project as sp
from reflint.settings import Settings

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECTS = os.path.join(HERE, "fixtures_projects")

KERNELS = '''"""Kernels: no Pallas import here; ops.py launches them."""


def scale(x_ref, o_ref):
    o_ref[...] = x_ref * 2


def other(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2
'''

OPS = '''import jax
from jax.experimental import pallas as pl

from pkg import kernels


def double(x):
    return pl.pallas_call(kernels.scale, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
'''

OPS_NO_LAUNCH = OPS.replace("pl.pallas_call(kernels.scale", "pl.pallas_call(kernels.other")


def _project(base, name: str = "proj", pyproject: bool = True) -> str:
    root = os.path.join(str(base), name)
    os.makedirs(os.path.join(root, "pkg"))
    if pyproject:
        with open(os.path.join(root, "pyproject.toml"), "w") as fh:
            fh.write('[project]\nname = "demo"\n')
    for rel, text in (("pkg/__init__.py", ""), ("pkg/kernels.py", KERNELS),
                      ("pkg/ops.py", OPS)):
        with open(os.path.join(root, rel), "w", encoding="utf-8") as fh:
            fh.write(text)
    return root


def _no_pyproject_above(path) -> bool:
    d = os.path.abspath(str(path))
    while True:
        if os.path.isfile(os.path.join(d, "pyproject.toml")):
            return False
        parent = os.path.dirname(d)
        if parent == d:
            return True
        d = parent


# -- the worker half, in this process --------------------------------------------------------

def test_project_root(tmp_path):
    root = _project(tmp_path)
    k = os.path.join(root, "pkg", "kernels.py")
    assert sp.project_root(k) == root
    assert sp.project_root("kernels.py") is None  # an unsaved buffer without a path
    if _no_pyproject_above(tmp_path):
        bare = _project(tmp_path, "bare", pyproject=False)
        kb = os.path.join(bare, "pkg", "kernels.py")
        assert sp.project_root(kb) is None
        assert sp.project_root(kb, [str(tmp_path)]) == str(tmp_path)
        assert sp.project_root(kb, [str(tmp_path), bare]) == bare  # the innermost folder
        assert sp.project_root(kb, [root]) is None  # not inside it


def test_analyse_with_the_project_and_buffers_over_the_disk(tmp_path):
    root = _project(tmp_path)
    k = os.path.join(root, "pkg", "kernels.py")
    o = os.path.join(root, "pkg", "ops.py")
    s = Settings()
    diags, _, info = sp.analyse(KERNELS, k, s, sp.context(k, [], {k: KERNELS}))
    assert [(d.code, d.line) for d in diags] == [("REF007", 5)]
    assert "kernels.scale is launched by pl.pallas_call in pkg/ops.py:8" in diags[0].message
    assert info["built"] and info["files"] == 3 and info["digest"]
    first = info["digest"]
    # Nothing changed: the same project, the result from the memo.
    diags, _, info = sp.analyse(KERNELS, k, s, sp.context(k, [], {k: KERNELS}))
    assert [d.code for d in diags] == ["REF007"] and not info["built"] and info["memo"]
    # An unsaved ops.py without the launch wins over the disk's.
    ctx = sp.context(k, [], {k: KERNELS, o: OPS_NO_LAUNCH})
    diags, _, info = sp.analyse(KERNELS, k, s, ctx)
    assert diags == [] and info["built"] and info["digest"] != first
    assert o in info["others"]
    with open(o, encoding="utf-8") as fh:
        assert fh.read() == OPS  # the disk was not touched
    # A keystroke in ops.py that does not change what kernels.py reads: its digest stays.
    edited = OPS_NO_LAUNCH + "\n\ndef unrelated(x):\n    return x + 1\n"
    _, _, info2 = sp.analyse(edited, o, s, sp.context(o, [], {k: KERNELS, o: edited}))
    assert info2["built"] and info2["others"][k] == info["digest"]


def test_a_ref_given_by_another_buffer(tmp_path):
    """The refs another module gives a function's parameters (``RefArg``) follow the open
    buffers: the unsaved call makes the REF001 in lib.py; without it, nothing."""
    root = _project(tmp_path)
    lib = os.path.join(root, "pkg", "lib.py")
    main = os.path.join(root, "pkg", "main.py")
    lib_text = "import jax\n\n\n@jax.jit\ndef get(r):\n    return r\n"
    call = ("import jax\nimport jax.numpy as jnp\n\nfrom pkg import lib\n\n"
            "buf = jax.new_ref(jnp.zeros(3))\nlib.get(buf)\n")
    for path, text in ((lib, lib_text), (main, "")):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    s = Settings()
    diags, _, info = sp.analyse(lib_text, lib, s, sp.context(lib, [], {lib: lib_text}))
    assert diags == []
    before = info["digest"]
    buffers = {lib: lib_text, main: call}
    diags, _, info = sp.analyse(lib_text, lib, s, sp.context(lib, [], buffers))
    assert [(d.code, d.line) for d in diags] == [("REF001", 6)]
    assert "lib.get is called with the ref buf in pkg/main.py:7" in diags[0].message
    assert info["digest"] != before
    # The other way round: main.py's edit changes what lib.py reads (its dependent).
    _, _, info2 = sp.analyse(call, main, s, sp.context(main, [], buffers))
    assert info2["others"][lib] == info["digest"]


def test_a_file_changed_on_disk_rebuilds(tmp_path):
    root = _project(tmp_path)
    k = os.path.join(root, "pkg", "kernels.py")
    o = os.path.join(root, "pkg", "ops.py")
    s = Settings()
    assert [d.code for d in sp.analyse(KERNELS, k, s, sp.context(k, [], {}))[0]] == ["REF007"]
    with open(o, "w", encoding="utf-8") as fh:
        fh.write(OPS_NO_LAUNCH)
    st = os.stat(o)
    os.utime(o, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000))  # a coarse clock
    diags, _, info = sp.analyse(KERNELS, k, s, sp.context(k, [], {}))
    assert diags == [] and info["built"]


def test_a_provisional_analysis_and_its_settling(tmp_path):
    """An edit of a document analysed before is analysed with the project as this worker
    built it (its summary of the document is the text's before: no summary per keystroke);
    ``settle`` then says that the project of the new text gives the same findings (None), or
    gives the text's own findings, with its digests for the dependents."""
    root = _project(tmp_path)
    k = os.path.join(root, "pkg", "kernels.py")
    o = os.path.join(root, "pkg", "ops.py")
    s = Settings()
    renamed = KERNELS.replace("def scale(", "def scaled(")  # ops.py launches kernels.scale
    diags, _, info = sp.analyse(renamed, k, s, sp.context(k, [], {k: renamed}), False, True)
    assert diags == [] and "basis" not in info  # the first build: nothing to go on
    # Renamed back: provisional, with the summary of the renamed text, which the settling
    # corrects.
    ctx = sp.context(k, [], {k: KERNELS})
    diags, _, info = sp.analyse(KERNELS, k, s, ctx, False, True)
    assert "basis" in info and info["digest"] is None
    exact, settled = sp.settle(KERNELS, k, s, ctx, info["basis"])
    assert [(d.code, d.line) for d in exact] == [("REF007", 5)]
    assert "pkg/ops.py:8" in exact[0].message and settled["digest"]
    assert exact == sp.analyse(KERNELS, k, s, ctx)[0]
    # A keystroke that leaves the summary as it was: the provisional findings stand.
    typed = KERNELS.replace("x_ref * 2\n", "x_ref * 23\n")
    ctx = sp.context(k, [], {k: typed})
    diags, _, info = sp.analyse(typed, k, s, ctx, False, True)
    assert "basis" in info and [d.code for d in diags] == ["REF007"]
    none, settled2 = sp.settle(typed, k, s, ctx, info["basis"])
    assert none is None and settled2["digest"] == settled["digest"]
    assert diags == sp.analyse(typed, k, s, ctx)[0]
    # Another buffer changed too: analysed with the project of the buffers, not before it.
    more = typed + "\n\ndef third(x_ref):\n    x_ref[...] = 1\n"
    ctx = sp.context(k, [], {k: more, o: OPS_NO_LAUNCH})
    diags, _, info = sp.analyse(more, k, s, ctx, False, True)
    assert "basis" not in info and diags == [] and info["digest"] is not None


def test_too_large_a_tree_is_analysed_alone(tmp_path, monkeypatch):
    root = _project(tmp_path, "big")
    k = os.path.join(root, "pkg", "kernels.py")
    monkeypatch.setattr(sp, "MAX_FILES", 2)
    diags, _, info = sp.analyse(KERNELS, k, Settings(), sp.context(k, [], {}))
    assert diags == [] and info["digest"] is None


def test_a_folder_too_large_to_count_is_no_project(tmp_path, monkeypatch):
    root = _project(tmp_path, "wide")
    for i in range(30):
        (tmp_path / "wide" / f"data{i}.txt").write_text("")
    monkeypatch.setattr(sp, "MAX_ENTRIES", 10)  # a home folder: not walked whole
    assert sp._discover(root) is None
    monkeypatch.setattr(sp, "MAX_ENTRIES", 1000)
    assert len(sp._discover(root)) == 3


def test_the_first_build_reads_the_summaries_reflint_check_cached(tmp_path, monkeypatch):
    from reflint.cache import Cache
    from reflint.project import Project

    monkeypatch.setenv("REFLINT_CACHE_SECRET", str(tmp_path / "home" / "secret"))
    monkeypatch.delenv("REFLINT_CACHE_DIR", raising=False)
    root = _project(tmp_path, "cached")
    files = sp._discover(root)
    expected = Project.build(files, root=root, cache=Cache(os.path.join(root, ".reflint_cache")))
    assert expected.summarized == 3
    monkeypatch.setattr(sp, "_SUMMARIES", type(sp._SUMMARIES)())  # a fresh worker
    got = sp._Tree(root).project_for({})
    assert got.summarized == 0  # all three from the cache
    for f in files:
        assert sp._digest(got, f) == sp._digest(expected, f)


def test_a_new_module_on_disk_is_seen(tmp_path):
    root = _project(tmp_path, "grow")
    k = os.path.join(root, "pkg", "kernels.py")
    o = os.path.join(root, "pkg", "ops.py")
    s = Settings()
    with open(o, "w", encoding="utf-8") as fh:
        fh.write(OPS_NO_LAUNCH)
    assert sp.analyse(KERNELS, k, s, sp.context(k, [], {}))[0] == []
    time.sleep(0.02)
    with open(os.path.join(root, "pkg", "ops2.py"), "w", encoding="utf-8") as fh:
        fh.write(OPS)  # a new module (its folder's mtime changes): the listing is walked
    assert [d.code for d in sp.analyse(KERNELS, k, s, sp.context(k, [], {}))[0]] == ["REF007"]


@pytest.mark.parametrize("name", sorted(os.listdir(PROJECTS)))
def test_the_same_project_as_project_build(name, tmp_path):
    """The server's build (memoized summaries) gives every module the same view digest as
    ``Project.build``, the first time and when built again from the memo."""
    from reflint.project import Project

    root = os.path.join(str(tmp_path), name)
    shutil.copytree(os.path.join(PROJECTS, name), root)
    files = sp._discover(root)
    assert files
    expected = Project.build(files, root=root)
    tree = sp._Tree(root)
    for _ in range(2):
        tree.fingerprint = None  # built again (from the memo the second time)
        got = tree.project_for({})
        assert sorted(got.by_path) == sorted(expected.by_path)
        for f in files:
            assert sp._digest(got, f) == sp._digest(expected, f), f
        assert got.wrappers == expected.wrappers and got.launches == expected.launches


# -- over LSP --------------------------------------------------------------------------------

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402
from pytest_lsp import LanguageClient  # noqa: E402

from lsp_helpers import change_doc, initialize, open_doc, published, server_config  # noqa: E402

WAIT = 120.0  # a loaded machine


async def _until(client: LanguageClient, uri: str, codes: list, after: int) -> None:
    """Wait until a publish for ``uri`` later than the ``after``-th publish has ``codes``."""
    deadline = time.perf_counter() + WAIT
    while time.perf_counter() < deadline:
        got = [p for _, p in client.published[after:] if p.uri == uri]
        if got and [d.code for d in got[-1].diagnostics] == codes:
            return
        await asyncio.sleep(0.01)
    seen = [(p.uri, p.version, [d.code for d in p.diagnostics]) for _, p in client.published]
    raise AssertionError(f"{uri}: no publish with {codes}; got {seen}")


async def _session(lsp_client: LanguageClient, tmp_path):
    """An initialized session over the two-module project (``lsp_client.root``)."""
    root = _project(tmp_path)
    await initialize(lsp_client, root)
    lsp_client.root = root
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient, tmp_path):
    async for _ in _session(lsp_client, tmp_path):
        yield


def _documents(root: str) -> tuple:
    """(kernels.py, ops.py, their URIs) of the project ``_project`` wrote."""
    k = os.path.join(root, "pkg", "kernels.py")
    o = os.path.join(root, "pkg", "ops.py")
    return k, o, from_fs_path(k), from_fs_path(o)


@pytest.mark.asyncio(loop_scope="function")
async def test_dependents_are_re_diagnosed_and_buffers_win(client):
    root = client.root
    k, o, kuri, ouri = _documents(root)
    open_doc(client, kuri, KERNELS)
    diags = await published(client, kuri, 1, WAIT)
    assert [(d.code, d.range.start.line) for d in diags] == [("REF007", 4)]
    assert "pkg/ops.py:8" in diags[0].message

    open_doc(client, ouri, OPS)
    assert await published(client, ouri, 1, WAIT) == []
    # An unsaved edit of ops.py that removes the launch: kernels.py, not touched, is
    # re-diagnosed and its finding goes.
    mark = len(client.published)
    change_doc(client, ouri, 2, OPS_NO_LAUNCH)
    assert await published(client, ouri, 2, WAIT) == []
    await _until(client, kuri, [], mark)
    with open(o, encoding="utf-8") as fh:
        assert fh.read() == OPS  # the disk still launches it: the buffer won

    # Undone: the finding comes back.
    mark = len(client.published)
    change_doc(client, ouri, 3, OPS)
    await _until(client, kuri, ["REF007"], mark)

    # Edited again, then closed without saving: the disk's ops.py counts again.
    mark = len(client.published)
    change_doc(client, ouri, 4, OPS_NO_LAUNCH)
    await _until(client, kuri, [], mark)
    mark = len(client.published)
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=ouri)))
    await _until(client, kuri, ["REF007"], mark)


@pytest.mark.asyncio(loop_scope="function")
async def test_an_edit_that_changes_nothing_for_the_others_does_not_republish_them(client):
    root = client.root
    k, o, kuri, ouri = _documents(root)
    open_doc(client, kuri, KERNELS)
    open_doc(client, ouri, OPS)
    await published(client, kuri, 1, WAIT)
    await published(client, ouri, 1, WAIT)
    await asyncio.sleep(0.5)  # any re-check of the first opened is done
    mark = len(client.published)
    change_doc(client, ouri, 2, OPS + "\n\ndef unrelated(x):\n    return x + 1\n")
    assert await published(client, ouri, 2, WAIT) == []
    await asyncio.sleep(1.0)
    assert not [p for _, p in client.published[mark:] if p.uri == kuri]


@pytest.mark.asyncio(loop_scope="function")
async def test_fix_all_fixes_a_cross_module_finding(client):
    from lsp_helpers import apply_edits, workspace_edits

    kuri = from_fs_path(os.path.join(client.root, "pkg", "kernels.py"))
    open_doc(client, kuri, KERNELS)
    assert [d.code for d in await published(client, kuri, 1, WAIT)] == ["REF007"]
    whole = types.Range(start=types.Position(line=0, character=0),
                        end=types.Position(line=10, character=0))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=kuri), range=whole,
        context=types.CodeActionContext(diagnostics=[], only=["source.fixAll"]))) or []
    assert [a.kind for a in actions] == ["source.fixAll.reflint"]
    action = actions[0]
    if action.edit is None:
        action = await client.code_action_resolve_async(action)
    new = apply_edits(KERNELS, workspace_edits(action.edit, kuri))
    assert new == KERNELS.replace("= x_ref * 2", "= x_ref[...] * 2")


@pytest_lsp.fixture(config=server_config())
async def outside(lsp_client: LanguageClient, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    await initialize(lsp_client, str(ws))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="function")
async def test_a_document_outside_any_project_is_analysed_alone(outside, tmp_path):
    if not _no_pyproject_above(tmp_path):
        pytest.skip("a pyproject.toml above the temporary folder")
    # The same two modules, outside the workspace folder and without a pyproject.toml.
    root = _project(tmp_path, "loose", pyproject=False)
    kuri = from_fs_path(os.path.join(root, "pkg", "kernels.py"))
    open_doc(outside, kuri, KERNELS)
    assert await published(outside, kuri, 1, WAIT) == []


@pytest_lsp.fixture(config=server_config("--no-project"))
async def no_project(lsp_client: LanguageClient, tmp_path):
    async for _ in _session(lsp_client, tmp_path):
        yield


@pytest.mark.asyncio(loop_scope="function")
async def test_no_project_analyses_each_document_alone(no_project):
    kuri = from_fs_path(os.path.join(no_project.root, "pkg", "kernels.py"))
    open_doc(no_project, kuri, KERNELS)
    assert await published(no_project, kuri, 1, WAIT) == []


@pytest.mark.asyncio(loop_scope="function")
async def test_provisional_findings_settle_to_the_texts_own(client):
    """An edit is answered with the project as it was (provisional findings, no summary on
    the way); once typing pauses, the findings are those of the text's own project: here the
    edit makes ops.py's launch name a kernel of this file again."""
    root = client.root
    k, o, kuri, ouri = _documents(root)
    renamed = KERNELS.replace("def scale(", "def scaled(")
    open_doc(client, kuri, renamed)
    assert await published(client, kuri, 1, WAIT) == []
    mark = len(client.published)
    change_doc(client, kuri, 2, KERNELS)
    await published(client, kuri, 2, WAIT)
    await _until(client, kuri, ["REF007"], mark)
    got = [p for _, p in client.published[mark:] if p.uri == kuri][-1]
    assert got.version == 2 and "pkg/ops.py:8" in got.diagnostics[0].message
