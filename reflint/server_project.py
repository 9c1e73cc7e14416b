"""The whole project in ``reflint server`` (docs/project.md, docs/integrations/server.md).

A document that lives in a project is analysed as ``reflint check ROOT`` analyses it: with
the project of ROOT active (reflint.project), so that a kernel launched by another module, a
jitted function defined in another module ... give the same findings as on the command line.

- **Which project.** ROOT is the folder of the nearest ``pyproject.toml`` above the document,
  else the workspace folder that holds it; a document in neither (or an unsaved buffer
  without a path) is analysed alone, as before. The project's files are those
  ``reflint check ROOT`` discovers (the same excludes, ``.gitignore``, virtual environments;
  notebooks are left out), plus the open Python documents under ROOT, whose unsaved texts
  win over the disk's. At most ``MAX_FILES`` files: a larger tree is analysed file by file.
- **Cheap per keystroke.** Each worker process keeps, per ROOT, the project it built last,
  keyed by a fingerprint: the disk files' ``(path, mtime_ns, size)`` and the hashes of the
  open buffers. A keystroke changes the fingerprint (its buffer's hash), so the project is
  built again, but from memoized parts: each module's summary is memoized in the process by
  its text (only the edited buffer is summarized again), a file unchanged on disk is not
  read again, and its summary comes from the disk summary cache when one exists (a
  ``.reflint_cache`` folder at ROOT, or ``REFLINT_CACHE_DIR``: where ``reflint check`` put
  it). The directory listing is walked again only when a directory's mtime changed (a file
  added or removed) or every ``RESCAN_S`` seconds.
- **Provisional findings.** Summarizing the edited buffer is most of that rebuild (a
  2,000-line file: ~70 ms, half an analysis), and a keystroke rarely changes its summary. So
  an edit of a document analysed before is analysed with the project the worker built last,
  when only that buffer's text changed since (``analyse(..., provisional=True)``): its summary
  of the document is an older text's. The server publishes these findings at once and, once
  no edit came for a moment, asks ``settle``: it builds the project of the text, and when
  that project is built from the same inputs (the same disk and other buffers, an equal
  summary of the document) the findings stand; otherwise the text is analysed with it and
  its findings, if they differ, are published. Either way the dependents are checked then.
- **Dependents.** With its findings, a worker returns the digest of what each open document
  of the same ROOT reads from the project (``ProjectView.digest``). The server keeps the
  digest each document's findings were computed with; after an edit of one document, every
  other open document whose digest changed is analysed again and re-published
  (``after_analysis``). Those analyses do not propagate further (only a changed text can
  change what the others read), and a memo of results per worker, keyed by (path, text hash,
  digest), answers the unaffected ones without analysing.

The worker half (``analyse``) imports nothing heavy at import time: reflint.server_front
imports this module at launch. The server half (``context``, ``after_analysis``,
``closed``) takes the server and its document states (reflint.server).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import OrderedDict
from typing import Optional

MAX_FILES = 2000  # a larger project is not built: its documents are analysed alone
MAX_ENTRIES = 100_000  # directory entries looked at while counting the files (a home folder)
RESCAN_S = 30.0  # the directory listing is walked again at least this often
MAX_ROOTS = 4  # projects kept per worker process
MAX_SUMMARIES = 20000  # memoized module summaries per worker process
MAX_RESULTS = 128  # memoized analyses per worker process
PYTHON = (".py", ".pyi")


# -- where a document's project is (the server process) ----------------------------------------

def project_root(path: str, folders=()) -> Optional[str]:
    """The folder of the nearest ``pyproject.toml`` above ``path``, else the workspace
    folder (of ``folders``, paths) that holds it; None when there is neither."""
    if not path or not os.path.isabs(path) or not path.endswith(PYTHON):
        return None
    path = os.path.abspath(path)
    d = os.path.dirname(path)
    while True:
        if os.path.isfile(os.path.join(d, "pyproject.toml")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    best = None
    for f in folders:
        if not f:
            continue
        f = os.path.abspath(f)
        if _inside(path, f) and (best is None or len(f) > len(best)):
            best = f
    return best


def _inside(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def context(path: str, folders, buffers: dict) -> Optional[dict]:
    """What a worker needs to analyse the document at ``path`` in its project: the project's
    root and the open buffers under it (``buffers``: path -> text); None when the document
    is in no project."""
    root = project_root(path, folders)
    if root is None:
        return None
    mine = {}
    for p, text in buffers.items():
        if p and os.path.isabs(p) and p.endswith(PYTHON) and _inside(os.path.abspath(p), root):
            mine[os.path.abspath(p)] = text
    return {"root": root, "buffers": mine}


# -- the worker process ---------------------------------------------------------------------

_LOCK = threading.RLock()  # one project analysis at a time (--threads: the active project
# is a process-wide setting)
_TREES: OrderedDict = OrderedDict()  # root -> _Tree
_SUMMARIES: OrderedDict = OrderedDict()  # (path, module, text hash) -> ModuleSummary or None
_CALLS: OrderedDict = OrderedDict()  # (path, module, text hash) -> completed summary
_SPELLS: OrderedDict = OrderedDict()  # (path, text hash, names) -> whether it spells one
_RESULTS: OrderedDict = OrderedDict()  # (path, text hash, digest) -> (settings, diagnostics)


def _hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def _remember(memo: OrderedDict, key, value, limit: int) -> None:
    memo[key] = value
    memo.move_to_end(key)
    while len(memo) > limit:
        memo.popitem(last=False)


class _Tree:
    """One root's files on disk, as ``reflint check ROOT`` discovers them, and the project
    built last from them and the open buffers."""

    def __init__(self, root: str):
        self.root = root
        self.files: list = []  # discovered Python files (absolute paths)
        self.dirs: dict = {}  # directory -> mtime_ns when the files were discovered
        self.modules: dict = {}  # path -> dotted module name (reflint.summary.module_name)
        self.scanned = 0.0
        self.stats: dict = {}  # path -> ((mtime_ns, size), text hash or None)
        self.fingerprint = None
        self.project = None
        self.too_large = False
        self.cache = _disk_cache(root)

    # -- the files ---------------------------------------------------------------------------

    def _changed_dirs(self) -> bool:
        for d, m in self.dirs.items():
            try:
                if os.stat(d).st_mtime_ns != m:
                    return True
            except OSError:
                return True
        return False

    def scan(self) -> None:
        """Discover the files again if a directory changed or RESCAN_S passed."""
        now = time.monotonic()
        if self.scanned and now - self.scanned < RESCAN_S and not self._changed_dirs():
            return
        self.scanned = now
        files = _discover(self.root)
        self.too_large = files is None
        self.files = files or []
        dirs = {self.root}
        for f in self.files:
            d = os.path.dirname(f)
            while d not in dirs and _inside(d, self.root):
                dirs.add(d)
                d = os.path.dirname(d)
        self.dirs = {}
        for d in dirs:
            try:
                self.dirs[d] = os.stat(d).st_mtime_ns
            except OSError:
                pass
        self.modules = {}

    def module(self, path: str) -> str:
        m = self.modules.get(path)
        if m is None:
            from .summary import module_name

            m = self.modules[path] = module_name(path)[1]
        return m

    # -- the project -------------------------------------------------------------------------

    def inputs(self, buffers: dict) -> Optional[tuple]:
        """(fingerprint, files, buffer hashes, disk stamps) of the project with ``buffers``
        (path -> text) over the disk; None when it is too large to build."""
        self.scan()
        if self.too_large:
            return None
        hashes = {p: _hash(t) for p, t in buffers.items()}
        files = sorted(set(self.files) | set(buffers))
        if len(files) > MAX_FILES:
            return None
        disk = []
        for f in self.files:
            if f in buffers:
                continue
            try:
                st = os.stat(f)
                disk.append((f, st.st_mtime_ns, st.st_size))
            except OSError:
                disk.append((f, None, None))
        fingerprint = (tuple(disk), tuple(sorted(hashes.items())))
        return fingerprint, files, hashes, {f: (m, s) for f, m, s in disk}

    def project_for(self, buffers: dict):
        """The project with ``buffers`` (path -> text) over the disk: the one built last if
        nothing changed, else built again from memoized summaries."""
        got = self.inputs(buffers)
        if got is None:
            return None
        fingerprint, files, hashes, stamps = got
        if fingerprint == self.fingerprint and self.project is not None:
            return self.project
        previous, self.project = self.project, None
        self.project = _build(self, files, buffers, hashes, stamps, previous)
        self.fingerprint = fingerprint
        return self.project

    def text_hash(self, path: str, stamp) -> tuple:
        """(text, hash) of a disk file; the text is None when it was not read (its stamp
        is unchanged: the hash is known)."""
        known = self.stats.get(path)
        if known is not None and known[0] == stamp and stamp[0] is not None:
            return None, known[1]
        text = _read_text(path)
        h = _hash(text) if text is not None else None
        self.stats[path] = (stamp, h)
        return text, h


def _disk_cache(root: str, create: bool = False):
    """The summary cache ``reflint check`` writes (REFLINT_CACHE_DIR, or ROOT/.reflint_cache)
    if it exists already (the server creates none; ``create``: made on the first write, as
    ``reflint check`` makes it); None otherwise."""
    try:
        from .cache import DEFAULT_DIR_NAME, ENV_CACHE_DIR, Cache

        directory = os.environ.get(ENV_CACHE_DIR) or os.path.join(root, DEFAULT_DIR_NAME)
        if not create and not os.path.isdir(directory):
            return None
        cache = Cache(directory)
        return None if cache.disabled else cache
    except Exception:  # noqa: BLE001 - only an optimisation
        return None


def _discover(root: str) -> Optional[list]:
    """The Python files ``reflint check ROOT`` checks (absolute paths), None when there are
    more than MAX_FILES (counted cheaply first: a home folder is not walked whole)."""
    from .config import Resolver
    from .discovery import discover

    resolver = Resolver()
    if _count(root, resolver, 4 * MAX_FILES) > 4 * MAX_FILES:
        return None
    pairs = discover([root], resolver)
    files = sorted({os.path.abspath(f) for f, _ in pairs if f.endswith(PYTHON)})
    return None if len(files) > MAX_FILES else files


def _count(root: str, resolver, limit: int) -> int:
    """The Python files under ``root`` (pruning virtual environments and excluded folders, as
    ``discover`` does), counting up to a little past ``limit``; past ``limit`` as well when
    more than MAX_ENTRIES directory entries had to be looked at."""
    n = 0
    seen = 0
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        seen += len(entries)
        if seen > MAX_ENTRIES:
            return limit + 1
        settings = resolver.for_dir(d)
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if os.path.exists(os.path.join(e.path, "pyvenv.cfg")) or \
                            settings.is_excluded(e.path):
                        continue
                    stack.append(e.path)
                elif e.name.endswith(PYTHON):
                    n += 1
                    if n > limit:
                        return n
            except OSError:
                continue
    return n


def _read_text(path: str) -> Optional[str]:
    from .project import _read

    return _read(path)


def _build(tree: _Tree, files: list, buffers: dict, hashes: dict, stamps: dict,
           previous=None):
    """``reflint.project.Project.build(files, read=...)`` with the buffers over the disk,
    from memoized summaries (the same steps; tests/test_server_project.py compares the
    digests of both). ``previous``, the project built last, is returned instead when every
    module's summary is equal to its summary there (a keystroke inside a line): its facts,
    computed once, serve again."""
    from ._record import replace

    from .project import Project
    from .summary import summarize, summarize_calls

    texts: dict = {}  # read during this build

    def text_of(path: str) -> Optional[str]:
        if path in buffers:
            return buffers[path]
        if path not in texts:
            texts[path] = _read_text(path)
        return texts[path]

    def hash_of(path: str) -> Optional[str]:
        if path in hashes:
            return hashes[path]
        text, h = tree.text_hash(path, stamps.get(path, (None, None)))
        if text is not None:
            texts[path] = text
        hashes[path] = h
        return h

    fresh = 0
    summaries = []
    for f in files:
        module = tree.module(f)
        h = hash_of(f)
        if h is None:
            summaries.append(None)
            continue
        key = (f, module, h)
        s = _SUMMARIES.get(key, _MISS)
        if s is _MISS:
            data = _raw(f) if tree.cache is not None and f not in buffers else None
            s = _disk_summary(tree, f, module, data)
            if s is _MISS:
                fresh += 1
                text = text_of(f)
                try:
                    s = summarize(text, f, module) if text is not None else None
                except Exception:  # noqa: BLE001 - as Project.build: a summary is an extra
                    s = None
                if data is not None:
                    try:
                        tree.cache.put_summary(tree.cache.summary_key(f, module, data), s)
                    except Exception:  # noqa: BLE001 - only an optimisation
                        pass
            _remember(_SUMMARIES, key, s, MAX_SUMMARIES)
        else:
            _SUMMARIES.move_to_end(key)
        summaries.append(s)
    project = Project(summaries, tree.root)
    project.summarized = fresh
    # Each file's summary before ``complete`` (``settle`` compares a buffer's).
    project.raw_summaries = dict(zip(files, summaries))

    def calls_of(s, names: frozenset):
        path = os.path.abspath(s.path)
        h = hash_of(path) if path in stamps or path in buffers else None
        spell_key = (path, h, names)
        spells = _SPELLS.get(spell_key) if h is not None else None
        if spells is None:
            text = text_of(path)
            spells = text is not None and any(n in text for n in names)
            if h is not None:
                _remember(_SPELLS, spell_key, spells, MAX_SUMMARIES)
        if not spells:
            return None
        calls_key = (path, s.module, h)
        full = _CALLS.get(calls_key) if h is not None else None
        if full is None:
            text = text_of(path)
            full = summarize_calls(text, s) if text is not None else s
            full = replace(full, complete=True) if full is s else full
            full.complete = True
            if h is not None:
                _remember(_CALLS, calls_key, full, MAX_SUMMARIES)
        return full

    project.complete(calls_of)
    if previous is not None and _same(project, previous):
        return previous
    project._read_libraries()
    return project


def _same(project, previous) -> bool:
    """Whether the two projects were built from equal summaries, in the same order (the
    installed library modules ``previous`` read afterwards left aside)."""
    mine = list(project.by_path.items())
    theirs = [(p, s) for p, s in previous.by_path.items() if not s.library]
    if len(mine) != len(theirs):
        return False
    for (p, s), (q, t) in zip(mine, theirs):
        if p != q or (s is not t and s != t):
            return False
    return True


_MISS = object()


def _raw(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _disk_summary(tree: _Tree, path: str, module: str, data: Optional[bytes]):
    """The summary ``reflint check`` cached for the file with these bytes on disk, or
    _MISS."""
    if tree.cache is None or data is None:
        return _MISS
    try:
        from .cache import MISS

        got = tree.cache.get_summary(tree.cache.summary_key(path, module, data))
        return _MISS if got is MISS else got
    except Exception:  # noqa: BLE001 - only an optimisation
        return _MISS


def _tree(root: str) -> _Tree:
    t = _TREES.get(root)
    if t is None:
        t = _TREES[root] = _Tree(root)
        while len(_TREES) > MAX_ROOTS:
            _TREES.popitem(last=False)
    _TREES.move_to_end(root)
    return t


def analyse(text: str, path: str, settings, ctx: dict, facts: bool = False,
            provisional: bool = False) -> tuple:
    """(diagnostics, line facts or None, info) of ``text`` at ``path`` analysed with the
    project of ``ctx["root"]`` active (``ctx["buffers"]``: the open buffers under it);
    ``info``: ``{"root", "digest": this document's view digest, "others": {path: digest}
    of the other buffers, "files", "built", "memo"}``. Without a project (too large, or
    building it failed), the document is analysed alone and ``digest`` is None.

    ``provisional`` (an edit of a document analysed before): when the only thing that
    changed since this worker built its project is this buffer's text, and its new summary
    is not known yet, the text is analysed with that project as it is (its summary of the
    document is the previous text's) instead of summarizing the text first: the findings
    come a summary sooner. ``info["basis"]`` then says what that project was built from, and
    ``settle`` (after publishing) says whether the project of the text itself gives the same
    findings. ``info["digest"]`` is None then (the dependents are checked by ``settle``)."""
    from . import server_worker

    path_abs, buffers, root, info = _inputs(text, path, ctx)
    line_facts = None
    if facts:
        from .server_reuse import line_facts as compute

        line_facts = compute(text)
    if not root:
        return server_worker.lint_text(text, path, settings), line_facts, info
    with _LOCK:
        basis = None
        if provisional:
            try:
                basis = _basis(_tree(root), buffers, path_abs)
            except Exception:  # noqa: BLE001 - analysed with its own project
                basis = None
        if basis is not None:
            previous = _tree(root).project
            info["basis"] = basis
            info["files"] = len(previous.by_path)
            return _lint_with(previous, text, path, settings), line_facts, info
        tree, project = _project_of(root, buffers, info)
        if project is None:
            return server_worker.lint_text(text, path, settings), line_facts, info
        return _checked(project, text, path_abs, path, settings, buffers, info), \
            line_facts, info


def _checked(project, text: str, path_abs: str, path: str, settings, buffers: dict,
             info: dict) -> list:
    """The diagnostics of ``text`` with ``project`` (the one of these ``buffers``) active,
    from the memo when its view's digest is one they were computed with; fills ``info``'s
    digests."""
    digest = _digest(project, path_abs)
    info["digest"] = digest if digest is not None else ""
    for p in buffers:
        if p != path_abs:
            d = _digest(project, p)
            if d is not None:
                info["others"][p] = d
    key = (path_abs, _hash(text), digest)
    hit = _RESULTS.get(key)
    if hit is not None and hit[0] == settings:
        _RESULTS.move_to_end(key)
        info["memo"] = True
        return list(hit[1])
    diags = _lint_with(project, text, path, settings)
    if not any(d.code in ("REF903", "REF904") for d in diags):
        _remember(_RESULTS, key, (settings, tuple(diags)), MAX_RESULTS)
    return diags


def _inputs(text: str, path: str, ctx: Optional[dict]) -> tuple:
    """(absolute path, the buffers with ``text`` at it, the project root, a fresh ``info``)
    of an analysis of ``text`` (``analyse``, ``settle``)."""
    path_abs = os.path.abspath(path)
    buffers = dict((ctx or {}).get("buffers") or {})
    buffers[path_abs] = text
    root = (ctx or {}).get("root")
    info = {"root": root, "digest": None, "others": {}, "files": 0, "built": False,
            "memo": False}
    return path_abs, buffers, root, info


def _project_of(root: str, buffers: dict, info: dict) -> tuple:
    """(the root's _Tree, its project for ``buffers``; None if it cannot be built), noting in
    ``info`` whether it was built now and how many modules it has."""
    try:
        tree = _tree(root)
        before = tree.project
        project = tree.project_for(buffers)
        info["built"] = project is not None and project is not before
        info["files"] = len(project.by_path) if project is not None else 0
        return tree, project
    except Exception:  # noqa: BLE001 - a project is an extra: the file is still checked
        return None, None


def _lint_with(project, text: str, path: str, settings) -> list:
    from . import project as _project
    from . import server_worker

    _project.activate(project)
    try:
        return server_worker.lint_text(text, path, settings)
    finally:
        _project.activate(None)


def _rest(fingerprint: tuple, path: str) -> str:
    """A digest of a project's inputs but the buffer at ``path``: the disk's files and the
    hashes of the other buffers."""
    disk, hashes = fingerprint
    rest = (disk, tuple(item for item in hashes if item[0] != path))
    return hashlib.sha1(repr(rest).encode("utf-8", "surrogatepass")).hexdigest()


def _basis(tree: _Tree, buffers: dict, path: str) -> Optional[dict]:
    """What a provisional analysis of the buffer at ``path`` is computed with (``analyse``):
    ``{"rest": _rest, "summary": the document's summary there, "completed": whether the
    project completed it (``Project.complete``)}``; None when ``tree``'s project is not the
    one of these buffers but for that buffer's text (or is, or its summary is memoized)."""
    previous = tree.project
    if previous is None or tree.fingerprint is None:
        return None
    got = tree.inputs(buffers)
    if got is None:
        return None
    fingerprint, _, hashes, _ = got
    if fingerprint == tree.fingerprint or (path, tree.module(path), hashes[path]) in _SUMMARIES:
        return None  # the project of this text is at hand, or cheap to build
    raw = getattr(previous, "raw_summaries", {}).get(path)
    rest = _rest(fingerprint, path)
    if raw is None or rest != _rest(tree.fingerprint, path):
        return None
    return {"rest": rest, "summary": raw,
            "completed": previous.by_path.get(path) is not raw}


def settle(text: str, path: str, settings, ctx: dict, basis: dict) -> tuple:
    """(diagnostics or None, info) of a provisional analysis of ``text`` (``analyse``; its
    ``info["basis"]``): None when the project of ``text`` is built from the same inputs as
    the one it was analysed with (the same disk and other buffers, an equal summary of the
    document, not completed in either): its findings are exact; else the diagnostics of the
    text with its own project. ``info``: ``analyse``'s, with the digests for the dependents."""
    from . import server_worker

    path_abs, buffers, root, info = _inputs(text, path, ctx)
    if not root:
        return server_worker.lint_text(text, path, settings), info
    with _LOCK:
        tree, project = _project_of(root, buffers, info)
        if project is None:
            return server_worker.lint_text(text, path, settings), info
        raw = getattr(project, "raw_summaries", {}).get(path_abs)
        if raw is not None and not basis["completed"] and \
                project.by_path.get(path_abs) is raw and \
                _rest(tree.fingerprint, path_abs) == basis["rest"] and raw == basis["summary"]:
            for p in buffers:
                d = _digest(project, p)
                if d is not None:
                    if p == path_abs:
                        info["digest"] = d
                    else:
                        info["others"][p] = d
            if info["digest"] is None:
                info["digest"] = ""
            return None, info
        return _checked(project, text, path_abs, path, settings, buffers, info), info


# -- a run that reads the disk once (the flake8 plugin) ------------------------------------

_ONCE: dict = {}  # root -> the project built from the disk (None: too large, or it failed)


def project_for_file(path: str, text: str, folders=(), write_cache: bool = False):
    """The project a run that reads the disk once (flake8: files do not change while it
    runs) checks the file at ``path``, with ``text``, in: the project of the file's root
    (``project_root``), built from the disk the first time one of its files is asked for and
    shared by the others; when ``text`` is not what the disk held then (flake8's
    ``--stdin-display-name``) or the file is not one the root's discovery finds (an excluded
    file given by name), the project with ``text`` in the file's place, built from the
    memoized summaries. None: the file is in no project, or its project is too large.
    ``write_cache``: the summaries go to the summary cache ``reflint check`` keeps
    (``REFLINT_CACHE_DIR``, or ROOT/.reflint_cache), created if there is none yet, so that the
    next run reads them instead of summarizing again."""
    if not path or not os.path.isabs(path) or not path.endswith(PYTHON):
        return None
    path = os.path.abspath(path)
    root = project_root(path, folders)
    if root is None:
        return None
    with _LOCK:
        tree = _tree(root)
        if write_cache and tree.cache is None:
            tree.cache = _disk_cache(root, create=True)
        if root not in _ONCE:
            try:
                _ONCE[root] = tree.project_for({})
            except Exception:  # noqa: BLE001 - a project is an extra: files are still checked
                _ONCE[root] = None
        project = _ONCE[root]
        if project is None:
            return None
        known = tree.stats.get(path)
        if known is not None and known[1] == _hash(text) and path in project.by_path:
            return project
        try:
            return tree.project_for({path: text})
        except Exception:  # noqa: BLE001
            return None


def _digest(project, path: str) -> Optional[str]:
    try:
        v = project.view(path)
        return v.digest() if v is not None else ""
    except Exception:  # noqa: BLE001
        return None


def fix(text: str, path: str, settings, ctx: Optional[dict]) -> tuple:
    """``reflint.server_worker.fix_text`` with the document's project active."""
    from . import server_worker

    return _with_project(server_worker.fix_text, text, path, settings, ctx)


def fix_edits(text: str, path: str, settings, ctx: Optional[dict], keys: list) -> dict:
    """``reflint.server_worker.fix_edits`` with the document's project active (the findings
    whose fixes are asked for may come from its facts)."""
    from . import server_worker

    return _with_project(server_worker.fix_edits, text, path, settings, ctx, keys)


def _with_project(fn, text: str, path: str, settings, ctx: Optional[dict], *args):
    """``fn(text, path, settings, *args)`` with the project of ``ctx`` active (the document's
    ``text`` in its place), or alone without one."""
    if not ctx or not ctx.get("root"):
        return fn(text, path, settings, *args)
    buffers = dict(ctx.get("buffers") or {})
    buffers[os.path.abspath(path)] = text
    with _LOCK:
        try:
            project = _tree(ctx["root"]).project_for(buffers)
        except Exception:  # noqa: BLE001
            project = None
        from . import project as _project

        _project.activate(project)
        try:
            return fn(text, path, settings, *args)
        finally:
            _project.activate(None)


# -- the server process: contexts and dependents -------------------------------------------

def folders(server) -> list:
    """The workspace folders (paths) of a reflint.server.ReflintServer."""
    from pygls.uris import to_fs_path

    out = []
    try:
        for uri in list(server.workspace.folders):
            p = to_fs_path(uri)
            if p:
                out.append(p)
        if server.workspace.root_path:
            out.append(server.workspace.root_path)
    except Exception:  # noqa: BLE001 - no workspace yet
        pass
    return out


def buffers(server) -> dict:
    """path -> current text of the open Python text documents (not notebooks)."""
    out = {}
    for uri, state in list(server.docs.items()):
        if state.notebook or state.ipynb or not uri.startswith("file:"):
            continue
        try:
            doc = server.workspace.get_text_document(uri)
            p = server.path_of(state)
            if p and os.path.isabs(p):
                out[os.path.abspath(p)] = doc.source
        except Exception:  # noqa: BLE001 - closed meanwhile
            continue
    return out


def server_context(server, state, path: str) -> Optional[dict]:
    """The context of a document's analysis (None: analysed alone)."""
    if not getattr(server, "project", True) or state.notebook or state.ipynb or \
            not state.uri.startswith("file:"):
        return None
    try:
        return context(path, folders(server), buffers(server))
    except Exception:  # noqa: BLE001 - analysed alone
        return None


def after_analysis(server, state, info: dict, propagate: bool) -> None:
    """Record the digest the document's published findings were computed with; after an
    edit (``propagate``), analyse again every other open document of the same project whose
    digest differs from the one its findings were computed with."""
    state.digest = info.get("digest")
    if not propagate or state.digest is None:
        return
    others = info.get("others") or {}
    for uri, other in list(server.docs.items()):
        if other is state or other.notebook or other.ipynb:
            continue
        p = os.path.abspath(server.path_of(other)) if other.uri.startswith("file:") else ""
        # One not published yet is analysed anyway; one published without a project
        # (excluded, too large) stays so.
        if p in others and other.text is not None and other.digest is not None and \
                others[p] != other.digest:
            stale(server, other)


def stale(server, state) -> None:
    """The document's findings may be out of date (what it reads from the project changed):
    analyse it again, not from its remembered texts."""
    state.stale += 1
    state.cache.clear()
    state.early = None  # an analysis started at launch, with the buffers of then
    server.schedule(state.uri, 0)


def closed(server, state) -> None:
    """A closed document's buffer no longer hides the disk: one other open document of its
    project is analysed again, propagating (its result says which others changed)."""
    if state.notebook or state.ipynb or not state.uri.startswith("file:") or \
            state.digest is None:
        return
    root = project_root(server.path_of(state), folders(server))
    if root is None:
        return
    for other in list(server.docs.values()):
        if other.notebook or other.ipynb or other.text is None or \
                not other.uri.startswith("file:"):
            continue
        if project_root(server.path_of(other), folders(server)) == root:
            other.propagate = True
            stale(server, other)
            return
