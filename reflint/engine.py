"""Lint one source: decode, pre-filter, parse once, analyse once, run every enabled rule.

Also applies fixes, verifying each result before it is accepted.
"""

from __future__ import annotations

import ast
import io
import re
import sys

from . import limits
from ._lazy import lazy, lazy_re
from ._record import field, record, replace
from .api import word_char
from .codes import CODES, META_CODES
from .diagnostics import Diagnostic, LazyFix
from .rule import all_rules
from .settings import Settings

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - annotations only: importing typing costs start-up
    from typing import Optional

# libcst, the analysis and the fast tree are imported when a file first needs them: a file
# the pre-filter rules out (and `reflint --version`) never pays for them.
cst = lazy("libcst")
fasttree = lazy("reflint.fasttree")
cstbridge = lazy("reflint.cstbridge")
_analysis = lazy("reflint.analysis")
gate = lazy("reflint.gate")
_positions = lazy("reflint.positions")


def _project():
    """reflint.project when a run activated a project (``reflint check`` over a tree), else
    None: a single-file run never imports it."""
    m = sys.modules.get("reflint.project")
    return m if m is not None and m.active() is not None else None

PARSE_ERROR = "REF900"
UNKNOWN_NOQA = "REF901"
UNUSED_NOQA = "REF902"
INTERNAL_ERROR = "REF903"
NOT_CHECKED = "REF904"
# Above this expression nesting (of the tree built from CPython's parse), libcst's parser is not
# run: it takes time quadratic in the length of left-recursive chains (``x + x + ...``,
# ``a.b.c...``, ``f()()...``). The findings then come from the fast tree, with ``ast``
# positions and without fixes.
LIBCST_MAX_DEPTH = 400
# flake8's suppression syntax (bare, with codes "A1, B2", upper case), also without the space.
_NOQA = lazy_re(r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.I)


def _noqa_hint(source: str) -> bool:
    """Whether ``source`` may hold a ``noqa`` comment (any case): a substring test, first on
    the text as it is (the common spelling), then on its lower case; a regex searched with
    ``re.I`` cannot skip ahead on the literal and costs ten times more on a file without."""
    return "noqa" in source or "noqa" in source.lower()


# A noqa comment that may name a REF code (a superset of _NOQA's matches that have one).
_REF_NOQA_HINT = lazy_re(r"noqa\s*:.*?ref", re.I)
_CODE = lazy_re(r"[A-Z]+[0-9]+", re.I)
_SKIP_FILE = lazy_re(r"^[ \t]*#\s*reflint:\s*skip-file\s*$", re.M)
_LINE_SPLIT = lazy_re(r"\r\n|\r|\n")

sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))


@record
class FileResult:
    """The outcome of checking one file: its diagnostics and which stage decided."""

    path: str
    diagnostics: list
    source: Optional[str] = None  # decoded text (None if undecodable)
    skipped: bool = False  # pre-filter said no rule can fire
    # Which stage decided: "skipped" (the textual pre-filter, a skip-file line, undecodable
    # bytes), "gated" (the pre-filter's ast stage, reflint.gate) or "analysed".
    stage: str = "analysed"


# Imported when first needed: a file with a BOM or a coding cookie, a noqa comment's tokens.
tokenize = lazy("tokenize")


def decode(data: bytes) -> str:
    """Decode Python source bytes like the interpreter does (PEP 263 cookie, BOM)."""
    if not data.startswith(b"\xef\xbb\xbf"):
        end = data.find(b"\n", data.find(b"\n") + 1)
        if b"coding" not in (data if end < 0 else data[:end]):
            # No BOM, no cookie in the first two lines: UTF-8 (tokenize's answer too), or
            # tokenize says how the bytes are wrong.
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                pass
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


_PREFILTER_CACHE: dict = {}


def prefilter(settings: Settings) -> "Prefilter":
    """The pre-filter for ``settings``: a file it does not match cannot produce any finding.

    Built from the ``triggers`` of the enabled rules (a rule without triggers makes every file a
    candidate). ``prefilter(settings).search(text)`` is truthy for candidate files."""
    key = settings.select
    pf = _PREFILTER_CACHE.get(key)
    if pf is None:
        shared: dict = {}  # triggers that are one regex -> how many rules have it
        conjunctions: list = []  # triggers that are several regexes, all to match
        for r in all_rules():
            if not settings.enabled(r.code):
                continue
            t = r.triggers
            if isinstance(t, str):
                shared[t] = shared.get(t, 0) + 1
            elif tuple(t) not in conjunctions:
                conjunctions.append(tuple(t))
        # The regex most rules share first (the ref words): a file with refs is kept by it at
        # once, before a rarer rule's short literal (REF015's `ad`) is searched everywhere.
        singles = sorted(shared, key=lambda t: -shared[t])
        if any(not p for p in singles) or any(not c for c in conjunctions):
            pf = Prefilter(None)  # a rule without triggers: every file is a candidate
        elif not singles and not conjunctions:
            pf = Prefilter(r"(?!x)x")  # nothing enabled: no file is a candidate
        else:
            pf = _Triggers(singles, conjunctions)
        _PREFILTER_CACHE[key] = pf
    return pf


class _Triggers:
    """The enabled rules' triggers: one regex for those that are a regex, then each
    conjunction (every regex of it matches somewhere). Each regex is a Prefilter, so its
    literal gate keeps a file without them cheap."""

    def __init__(self, singles: list, conjunctions: list):
        # One Prefilter per regex, however many rules share it: each has its own literals and
        # window (a union's window is its widest member's, and it has none if one member is
        # unbounded: every text with a literal would then be searched whole).
        parts: dict = {}
        self.singles = [parts.setdefault(p, Prefilter(p)) for p in singles]
        for c in conjunctions:
            for p in c:
                if p not in parts:
                    parts[p] = Prefilter(p)
        self.conjunctions = [[parts[p] for p in c] for c in conjunctions]

    def search(self, text: str) -> bool:
        for single in self.singles:
            if single.search(text):
                return True
        seen: dict = {}
        for conj in self.conjunctions:
            for part in conj:
                hit = seen.get(id(part))
                if hit is None:
                    hit = seen[id(part)] = bool(part.search(text))
                if not hit:
                    break
            else:
                return True
        return False


try:  # Python 3.11+
    import re._constants as _sre_c
    import re._parser as _sre_p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_c  # type: ignore[no-redef]
    import sre_parse as _sre_p  # type: ignore[no-redef]


# Window searches of a text before the whole text is searched (see Prefilter.search): with 24,
# the installed sources took 0.42 s to search, 0.21 s without a bound; a 2,000-line kernel file
# (`x_ref` hundreds of times) 0.19 ms, 3.4 ms without. With 200: 0.23 s and 0.73 ms.
MAX_WINDOWS = 200


class Prefilter:
    """A conservative textual test, fast on files that do not match.

    One compiled regex (the union of the rules' triggers), gated by plain substring tests:
    every match of the regex contains one of ``literals`` (derived from the regex), so a file
    containing none of them is rejected with a few ``str.find`` scans. Otherwise the regex is
    run only in small windows around the literal's occurrences when the regex has a bounded
    width and no lookaround: a window extends one full match width on both sides, so any match
    containing the occurrence lies inside it, and so does the character after it (for word
    boundaries). The answer is exactly the regex's (a test compares them on random texts).
    The regex is compiled when a text first needs it (most files have none of the literals)."""

    def __init__(self, pattern: Optional[str]):
        self.pattern = pattern
        self._regex = None
        # Derived from the pattern when a text is first searched (``_prepare``): a run whose
        # files the first trigger keeps never reads the others'.
        self._prepared = pattern is None
        self._literals: Optional[list] = None
        self._window: Optional[int] = None
        # Without a window, for a pattern ``\\bword...``: the regex after its ``\\b``, whose
        # leading literal the regex engine searches for fast (``\\b`` first stops that);
        # compiled when first searched.
        self._rest_pattern = None

    @property
    def literals(self) -> Optional[list]:
        if not self._prepared:
            self._prepare()
        return self._literals

    @property
    def window(self) -> Optional[int]:
        if not self._prepared:
            self._prepare()
        return self._window

    @property
    def _rest(self):
        if not self._prepared:
            self._prepare()
        return self._rest_pattern

    def _prepare(self) -> None:
        self._prepared = True
        pattern = self.pattern
        try:
            parsed = _sre_p.parse(pattern)
            ignorecase = parsed.state.flags & re.IGNORECASE
        except Exception:  # noqa: BLE001 - internals moved: fall back to the plain regex
            self.regex  # noqa: B018 - an invalid pattern fails here, as re.compile would
            return
        if ignorecase:
            return
        lits = _required_literals(parsed.data if hasattr(parsed, "data") else list(parsed))
        if not lits:
            return
        # A literal that contains another one is redundant: drop it.
        lits = sorted(set(lits), key=lambda s: (len(s), s))
        self._literals = [s for i, s in enumerate(lits) if not any(t in s for t in lits[:i])]
        try:
            lo, hi = parsed.getwidth()
        except Exception:  # noqa: BLE001
            return
        if hi < 1000 and not _has_lookaround(parsed):
            self._window = hi
        else:
            self._rest_pattern = _after_word_boundary(pattern, parsed)

    @property
    def regex(self):
        """The compiled pattern (None without one)."""
        if self._regex is None and self.pattern is not None:
            self._regex = re.compile(self.pattern)
        return self._regex

    def search(self, text: str):
        """Truthy if ``text`` may produce a finding."""
        if self.pattern is None:
            return True
        if not self._prepared:
            self._prepare()
        lits = self._literals
        if lits is None:
            return self.regex.search(text)
        w = self._window
        if w is None:
            for lit in lits:
                if lit in text:
                    if self._rest_pattern is not None:
                        return self._search_after_boundary(text)
                    return self.regex.search(text)
            return None
        size = len(text)
        rx = None
        windows = 0
        for lit in lits:
            i = text.find(lit)
            n = len(lit)
            while i >= 0:
                if rx is None:
                    rx = self.regex
                windows += 1
                if windows > MAX_WINDOWS:
                    # Many occurrences that do not match (`x_ref` for `\bref\b`): one search of
                    # the whole text costs less than a window for each of the rest.
                    return rx.search(text)
                end = i + n + w
                m = rx.search(text, max(0, i - w), end)
                # A match ending at a cut window edge may be an artefact of the cut (``\b``
                # there sees the end of the text); a real one is found from its own literal.
                if m and (m.end() < end or end >= size):
                    return m
                i = text.find(lit, i + 1)
        return None


    def _search_after_boundary(self, text: str):
        """``regex.search(text)`` for ``\\b`` + ``_rest`` where ``_rest`` starts with a word
        character: every start of a ``_rest`` match, in order, until one has no word
        character before it (a word boundary there)."""
        rx = self._rest_pattern
        if isinstance(rx, str):
            rx = self._rest_pattern = re.compile(rx)
        pos = 0
        while True:
            m = rx.search(text, pos)
            if m is None:
                return None
            start = m.start()
            if not (start and word_char(text[start - 1])):
                return m
            pos = start + 1


def _after_word_boundary(pattern: str, parsed) -> Optional[str]:
    """``pattern`` without its leading ``\\b`` when it is ``\\b`` followed by a word character
    and no alternation at the top (``\\bat\\s*\\[``); else None."""
    data = parsed.data if hasattr(parsed, "data") else list(parsed)
    if len(data) < 2 or not pattern.startswith(r"\b"):
        return None
    (op0, av0), (op1, av1) = data[0], data[1]
    if op0 is not _sre_c.AT or av0 is not _sre_c.AT_BOUNDARY or op1 is not _sre_c.LITERAL:
        return None
    if not word_char(chr(av1)) or any(op is _sre_c.BRANCH for op, _ in data):
        return None
    return pattern[2:]


def _required_literals(items) -> Optional[list]:
    """Strings such that every match of the regex sequence ``items`` contains one of them
    (None when no such set is known)."""
    best: Optional[list] = None

    def consider(option):
        nonlocal best
        if option and all(option):
            if best is None or min(map(len, option)) > min(map(len, best)):
                best = option

    run: list = []
    for op, av in list(items) + [(None, None)]:
        if op is _sre_c.LITERAL:
            run.append(chr(av))
            continue
        if run:
            consider(["".join(run)])
            run = []
        if op is _sre_c.BRANCH:
            union: Optional[list] = []
            for alt in av[1]:
                sub = _required_literals(alt.data if hasattr(alt, "data") else alt)
                if sub is None:
                    union = None
                    break
                union.extend(sub)
            consider(union)
        elif op is _sre_c.SUBPATTERN:
            add_flags = av[1] if len(av) > 2 else 0
            if not add_flags & _sre_c.SRE_FLAG_IGNORECASE:
                sub = av[-1]
                consider(_required_literals(sub.data if hasattr(sub, "data") else sub))
        elif op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT) and av[0] >= 1:
            sub = av[2]
            consider(_required_literals(sub.data if hasattr(sub, "data") else sub))
    return best


def _has_lookaround(items) -> bool:
    for op, av in (items.data if hasattr(items, "data") else items):
        if op in (_sre_c.ASSERT, _sre_c.ASSERT_NOT, _sre_c.GROUPREF, _sre_c.GROUPREF_EXISTS):
            return True
        if op is _sre_c.BRANCH and any(_has_lookaround(a) for a in av[1]):
            return True
        if op is _sre_c.SUBPATTERN and _has_lookaround(av[-1]):
            return True
        if op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT) and _has_lookaround(av[2]):
            return True
        if op is getattr(_sre_c, "ATOMIC_GROUP", object()) and _has_lookaround(av):
            return True
        if op is getattr(_sre_c, "POSSESSIVE_REPEAT", object()) and _has_lookaround(av[2]):
            return True
    return False


def is_skipped_file(source: str) -> bool:
    """The file has a ``# reflint: skip-file`` line: nothing is reported for it."""
    return "skip-file" in source and bool(_SKIP_FILE.search(source))


def is_candidate(source: str, settings: Settings) -> bool:
    """False if no rule can fire on ``source``: a ``# reflint: skip-file`` line, or the
    pre-filter does not match."""
    if is_skipped_file(source):
        return False
    return bool(prefilter(settings).search(source))


def parse_module(source: str) -> "nodes.Module":
    """The file parsed by libcst's parser, as reflint's nodes (``reflint.cstbridge``: the tree
    keeps libcst's for the nodes' text and positions); raises libcst's ``ParserSyntaxError``."""
    return cstbridge.parse_module(source)


def parse_error(path: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    return Diagnostic(path=path, line=line, column=column, code=PARSE_ERROR,
                      name=CODES[PARSE_ERROR], message=message, end_line=line,
                      end_column=column)


def internal_error(path: str, e: BaseException) -> Diagnostic:
    """REF903: reflint itself failed on this file (a bug: the other files are unaffected)."""
    detail = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
    if len(detail) > 300:
        detail = detail[:300] + "..."
    return Diagnostic(path=path, line=1, column=1, code=INTERNAL_ERROR,
                      name=CODES[INTERNAL_ERROR],
                      message=f"internal error: reflint failed while checking {path} "
                              f"({detail}); this is a bug in reflint, please report it with "
                              f"the file",
                      end_line=1, end_column=1)


def not_checked(path: str, reason: str) -> Diagnostic:
    """REF904: the file was not checked (too large, not a regular file, unreadable ...)."""
    return Diagnostic(path=path, line=1, column=1, code=NOT_CHECKED, name=CODES[NOT_CHECKED],
                      message=f"not checked: {reason}", end_line=1, end_column=1)


def _cpython_error(source: str, path: str) -> Optional[BaseException]:
    """What CPython's parser says about ``source``: None if it accepts it, else its error."""
    try:
        compile(source, path, "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
        return None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return e


_NESTING_MESSAGES = ("too many nested", "too many statically nested", "too complex",
                     "parser stack", "recursion")


def _libcst_may_parse(error: BaseException, source: str) -> bool:
    """Whether libcst's native parser may be given ``source``, which CPython rejected with
    ``error``: only for an ordinary syntax error (libcst accepts some newer syntax) in text
    that does not nest deeply; libcst's parser overflows its stack on deep nesting, which
    would end the process."""
    if not isinstance(error, SyntaxError):
        return False  # MemoryError / RecursionError: CPython could not handle the nesting
    msg = str(getattr(error, "msg", "") or "").lower()
    if any(m in msg for m in _NESTING_MESSAGES):
        return False
    if "\0" in source:
        return False
    return limits.nesting(source) <= limits.LIBCST_MAX_NESTING


def _rejected(source: str, path: str, error: BaseException) -> Diagnostic:
    """REF900 for source that CPython rejects and libcst is not asked about."""
    if "null bytes" in str(error):
        line = source[:source.find("\0")].count("\n") + 1 if "\0" in source else 1
        return parse_error(path, f"cannot parse file: it contains NUL bytes (first on line "
                                 f"{line})", line)
    if isinstance(error, SyntaxError) and error.lineno:
        return parse_error(path, f"syntax error: {error.msg}{_newer_syntax_hint(error)}",
                           error.lineno, error.offset or 1)
    if isinstance(error, SyntaxError):
        return parse_error(path, f"syntax error: {error.msg}")
    if isinstance(error, ValueError) and "null" in str(error).lower():
        return parse_error(path, "cannot parse file: source code contains NUL bytes")
    if isinstance(error, (MemoryError, RecursionError)):
        detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        return parse_error(path, f"cannot parse file: nested too deeply for Python's parser "
                                 f"({detail})")
    return parse_error(path, f"cannot parse file: {type(error).__name__}: {error}")


_NEWER = [  # compiled when a syntax error is reported
    (lazy_re(r"^\s*type\s+\w+\s*(\[.*\])?\s*="), "a `type` alias statement (PEP 695)", (3, 12)),
    (lazy_re(r"^\s*(async\s+)?def\s+\w+\s*\["), "type parameters on a function (PEP 695)",
     (3, 12)),
    (lazy_re(r"^\s*class\s+\w+\s*\["), "type parameters on a class (PEP 695)", (3, 12)),
    (lazy_re(r"\bexcept\s+[^:*]+,[^:]+:"), "`except` with several types and no "
     "parentheses (PEP 758)", (3, 14)),
]


def _newer_syntax_hint(error: SyntaxError) -> str:
    """Names the newer syntax a syntax error is about, when it is one this Python lacks."""
    text = error.text or ""
    for rx, what, version in _NEWER:
        if sys.version_info < version and rx.search(text):
            return (f" ({what} needs Python {version[0]}.{version[1]}; this is Python "
                    f"{sys.version_info[0]}.{sys.version_info[1]})")
    return ""


def _syntax_error(path: str, source: str, e: "cst.ParserSyntaxError") -> Diagnostic:
    """Prefer CPython's own message and position (what users know); fall back to libcst's."""
    try:
        compile(source, path, "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
    except SyntaxError as se:
        if se.lineno:
            return parse_error(path, f"syntax error: {se.msg}{_newer_syntax_hint(se)}",
                               se.lineno, se.offset or 1)
    except (ValueError, RecursionError, MemoryError):
        pass
    return parse_error(path, f"syntax error: {e.message}", e.raw_line, e.raw_column + 1)


def decode_error_message(e: BaseException) -> str:
    """A short, clear message for a file that cannot be decoded."""
    if isinstance(e, UnicodeDecodeError):
        return (f"cannot decode file as {e.encoding}: invalid byte {e.object[e.start]:#04x} "
                f"at offset {e.start} (declare the encoding with a PEP 263 coding comment)")
    return f"cannot decode file: {e}"


def lint_bytes(data: bytes, path: str, settings: Settings,
               lazy_fixes: bool = False) -> FileResult:
    try:
        source = decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as e:
        msg = decode_error_message(e)
        return FileResult(path, [parse_error(path, msg)] if settings.enabled(PARSE_ERROR) else [],
                          stage="skipped")
    return lint_source(source, path, settings, lazy_fixes=lazy_fixes)


def lint_source(source: str, path: str, settings: Settings, use_prefilter: bool = True,
                regex_done: bool = False, tree: Optional[ast.Module] = None,
                lazy_fixes: bool = False, ask_gate: bool = True) -> FileResult:
    """Lint one file. ``use_prefilter=False`` analyses it on libcst's own tree whatever the
    pre-filter says (tests compare both); ``regex_done`` says the textual stage already kept
    it; ``tree`` is the stdlib ``ast`` of ``source`` if the caller has it (flake8 does).
    ``ask_gate=False``: the caller expects the file to be analysed (the server, for the
    next text of a document whose last one was): the ``ast`` stage is not asked, and every
    enabled rule runs (the gate only spares rules that cannot fire: the same findings).

    The findings come from one analysis, of the tree built from the stdlib ``ast``
    (reflint.fasttree). libcst parses the file only for what needs its tree: the fixes'
    edits, and files the fast tree does not cover. ``lazy_fixes``: a fix is a LazyFix, whose
    edits are built (libcst's parse, once for the file) when first read; else they are built
    now, and the findings of a file with a fix come from libcst's tree.

    Runs on a large-stack thread for big sources (``limits.call_deep``): deep-but-valid code is
    analysed, and what is deeper still is a ``RecursionError`` for this file, never a crash."""
    settings = settings.for_path(path)
    if is_skipped_file(source):
        return FileResult(path, [], source, skipped=True, stage="skipped")
    return limits.call_deep(_lint_source, source, path, settings, use_prefilter, regex_done,
                            tree, lazy_fixes, ask_gate, size=len(source))


def _lint_source(source: str, path: str, settings: Settings, use_prefilter: bool,
                 regex_done: bool, tree: Optional[ast.Module],
                 lazy_fixes: bool = False, ask_gate: bool = True) -> FileResult:
    verdict = None
    fast: dict = {}
    # A module another module's summary gives facts (a kernel launched elsewhere) may have no
    # text the pre-filter knows: the project says so, and both stages let it through.
    forced = use_prefilter and _project() is not None and \
        _project().must_analyse(path, source)
    # Functions of this module that another module traces (`jax.jit(core.f)`): the text may
    # not announce a leak of their tracers (REF012); the gate, told of them, decides.
    traced = _project().traced_elsewhere(path) if use_prefilter and not forced and \
        _project() is not None else frozenset()
    recalled = None
    if use_prefilter and not forced and not traced and ask_gate:
        recalled = _recalled(path, source)  # the summary phase's verdict on this text
        if recalled is not None and not _allows(recalled, settings):
            return _gated(source, path, settings)
    if use_prefilter and not forced and not traced and recalled is None:
        if not regex_done and not prefilter(settings).search(source):
            return lint_non_candidate(source, path, settings)
    if tree is None:
        tree = gate.take(source)  # the summary phase's parse, when it kept the tree
    if tree is None:
        # CPython rejects the file (or cannot handle its nesting). libcst's parser is asked
        # only about an ordinary syntax error in shallow text (it accepts some newer syntax).
        error = _cpython_error(source, path)
        if error is not None and not _libcst_may_parse(error, source):
            diags = [_rejected(source, path, error)] if settings.enabled(PARSE_ERROR) else []
            return FileResult(path, diags, source)
    elif use_prefilter:
        verdict = None if forced or not ask_gate else \
            recalled if recalled is not None else gate_verdict(source, settings, tree, traced)
        if verdict is not None and not _allows(verdict, settings):
            return _gated(source, path, settings)
        done = _lint_fast(source, tree, path, settings, verdict, fast, lazy_fixes)
        if done is not None:
            limits.keep_until_exit(tree, fast)
            return done
        # A file the fast tree does not cover (or a fix to build now): libcst's own tree,
        # below, gives the findings, their positions, messages and fixes.
    if tree is not None and fast.get("depth", 0) > LIBCST_MAX_DEPTH:
        # libcst's parse would take time quadratic in the nesting: findings come from the
        # fast tree instead.
        return _lint_on_fast_tree(source, tree, path, settings, verdict, fast)
    try:
        module = parse_module(source)
    except cst.ParserSyntaxError as e:
        if tree is not None:  # CPython accepts it: a libcst limit, not a syntax error
            return _lint_on_fast_tree(source, tree, path, settings, verdict, fast, e)
        diags = []
        if settings.enabled(PARSE_ERROR):
            diags.append(_syntax_error(path, source, e))
        return FileResult(path, diags, source)
    except (RecursionError, MemoryError, ValueError) as e:
        if tree is not None:
            return _lint_on_fast_tree(source, tree, path, settings, verdict, fast, e)
        diags = []
        if settings.enabled(PARSE_ERROR):
            diags.append(parse_error(path, f"cannot parse file: {type(e).__name__}: {e}"))
        return FileResult(path, diags, source)
    if "\f" in source and tree is not None and module.code != source:
        # libcst drops form feeds in indentation: its positions would be off on those lines.
        return _lint_on_fast_tree(source, tree, path, settings, verdict, fast)
    # Positions for the reported nodes only (reflint.positions), not the whole module's.
    lazy_positions = _positions.LazyPositions(module, source, tree) if tree is not None else None
    diags = check_module(module, path, settings, source, verdict if use_prefilter else None,
                         positions=lazy_positions)
    return FileResult(path, apply_noqa(diags, source, settings, path), source)


def _lint_on_fast_tree(source: str, tree: ast.Module, path: str, settings: Settings,
                       verdict, fast: dict, libcst_error: Optional[BaseException] = None
                       ) -> FileResult:
    """The findings on the tree built from CPython's parse (valid Python that libcst's parser
    cannot take, or only in quadratic time): ``ast`` positions, no fixes (a fix needs libcst's
    own tree, with the file's parentheses, comments and whitespace)."""
    module = fast.pop("module", None)
    if module is None or "positions" not in fast:
        try:
            module = fasttree.convert(source, tree, fast)
        except fasttree.Unsupported as e:
            why = f"libcst cannot parse it ({libcst_error})" if libcst_error else str(e)
            return FileResult(path, [not_checked(path, why)], source)
    diags = check_module(module, path, settings, source, verdict,
                         positions=fast["positions"])
    diags = [replace(d, fix=None) if d.fix is not None else d for d in diags]
    return FileResult(path, apply_noqa(diags, source, settings, path), source)


def _lint_fast(source: str, tree: ast.Module, path: str, settings: Settings,
               verdict: "Optional[gate.Verdict]", record: dict,
               lazy_fixes: bool) -> Optional[FileResult]:
    """The file's result from one analysis of the tree built from ``tree``
    (reflint.fasttree), with ``ast`` positions and the source's text in messages; None when
    libcst's own tree must decide: the fast tree cannot be built or analysed, a position the
    rules asked for is not exact there (a node with no ``ast`` node of its own, or inside an
    f-string), libcst drops the file's form feeds, or a fix's edits are wanted now."""
    try:
        module = fasttree.convert(source, tree, record)
        exact = _ExactPositions(record["positions"].exact())
        diags = check_module(module, path, settings, source, verdict, positions=exact)
    except Exception:  # noqa: BLE001 - libcst's own parse decides then
        record.clear()
        return None
    limits.keep_until_exit(module, exact)
    if not diags:
        return FileResult(path, _noqa_only(source, path, settings), source)
    if record.get("depth", 0) > LIBCST_MAX_DEPTH:
        record["module"] = module
        return _lint_on_fast_tree(source, tree, path, settings, verdict, record)
    if exact.missed or "\f" in source:
        record["module"] = module
        return None
    if any(d.fix is not None for d in diags):
        if not lazy_fixes:
            record["module"] = module
            return None
        fixes = FixSource(source, path, settings)
        diags = [d if d.fix is None else
                 replace(d, fix=LazyFix(d.fix.message, d.fix.applicability, fixes,
                                        (d.line, d.column, d.code)))
                 for d in diags]
    return FileResult(path, apply_noqa(diags, source, settings, path), source)


class _ExactPositions:
    """The fast tree's positions, noting whether one asked for was not known exactly."""

    def __init__(self, positions):
        self._positions = positions
        self.missed = False

    def get(self, node):
        rng = self._positions.get(node)
        if rng is None:
            self.missed = True
        return rng

    def text(self, node):
        text = self._positions.text(node)
        if text is None:
            self.missed = True
        return text


class FixSource:
    """A file whose findings carry LazyFixes: libcst parses it, and the analysis of that tree
    gives the fixes, once, when the first fix's edits are read (pickled with the fixes: a
    worker's result is built in the process that reads it)."""

    def __init__(self, source: str, path: str, settings: Settings):
        self.source = source
        self.path = path
        self.settings = settings
        self._fixes: Optional[dict] = None

    def __getstate__(self):
        return (self.source, self.path, self.settings, self._fixes)

    def __setstate__(self, state):
        self.source, self.path, self.settings, self._fixes = state

    def fix_for(self, key: tuple):
        if self._fixes is None:
            res = lint_source(self.source, self.path, self.settings, use_prefilter=False)
            self._fixes = {(d.line, d.column, d.code): d.fix for d in res.diagnostics
                           if d.fix is not None}
        return self._fixes.get(tuple(key))


def attach_fix_source(diags: list, source: str, path: str, settings: Settings) -> None:
    """Give the LazyFixes of ``diags`` read from the cache (built by no tree yet) their file."""
    fixes = None
    for d in diags:
        if isinstance(d.fix, LazyFix) and d.fix.source is None:
            if fixes is None:
                fixes = FixSource(source, path, settings.for_path(path))
            d.fix.source = fixes


class _NoPositions:
    """No positions (a check that only asks whether there is a finding needs none)."""

    @staticmethod
    def get(node):
        return None


_NO_POSITIONS = _NoPositions()


def gate_verdict(source: str, settings: Settings, tree: Optional[ast.Module] = None,
                 traced: frozenset = frozenset()) -> "Optional[gate.Verdict]":
    """Stage two of the pre-filter (reflint.gate): its answers for ``source``, or None when it
    has none (``ast`` cannot parse the file, or the gate failed): every rule may fire then.
    ``traced``: the module's top-level functions other modules trace."""
    try:
        return gate.verdict(source, settings.select, settings.target_jax_version, tree=tree,
                            traced=traced)
    except Exception:  # noqa: BLE001 - a bug in the gate must never cost a finding
        return None


def _allows(v: "gate.Verdict", settings: Settings) -> bool:
    return any(settings.enabled(r.code) and v.may_fire(r.code) for r in all_rules())


def gate_allows(source: str, settings: Settings, tree: Optional[ast.Module] = None) -> bool:
    """False if the gate shows that no enabled rule can fire in ``source``. True when in
    doubt, including when ``ast`` cannot parse the file."""
    v = gate_verdict(source, settings, tree)
    return v is None or _allows(v, settings)


class SummaryPhaseGate:
    """The gate asked in the summary phase (``reflint.project.Project.build``'s ``decide``):
    for a file the run checks next (``settings_of``: path -> its settings) that the textual
    pre-filter keeps, the summary parses it whole, and the gate's verdict on that tree is
    remembered (``reflint.gate.remember``) for the check, which then neither parses again a
    file the verdict rules out nor asks the gate again (``gate.recall``). The verdict is the
    one the check would reach: the same text, settings and tree; a module another module's
    summary makes a candidate (``must_analyse``) is analysed whatever it says."""

    def __init__(self, settings_of: dict):
        self.settings_of = settings_of
        self._resolved: dict = {}  # path -> its settings with per-file-ignores applied

    def _settings(self, path: str) -> Optional[Settings]:
        s = self._resolved.get(path)
        if s is None and path in self.settings_of:
            s = self._resolved[path] = self.settings_of[path].for_path(path)
        return s

    def wants(self, text: str, path: str) -> bool:
        s = self._settings(path)
        return s is not None and not path.endswith(".ipynb") and \
            not is_skipped_file(text) and bool(prefilter(s).search(text))

    def __call__(self, text: str, path: str, tree: ast.Module) -> "Optional[gate.Verdict]":
        return gate_verdict(text, self._settings(path), tree)

    def allows(self, verdict: "gate.Verdict", path: str) -> bool:
        return _allows(verdict, self._settings(path))


def _recalled(path: str, source: str) -> "Optional[gate.Verdict]":
    g = sys.modules.get("reflint.gate")  # not imported: the summary phase decided nothing
    return g.recall(path, source) if g is not None else None


def _gated(source: str, path: str, settings: Settings) -> FileResult:
    # The stdlib parser accepted the file, so there is no REF900 to report.
    return FileResult(path, _noqa_only(source, path, settings), source, skipped=True,
                      stage="gated")


def lint_non_candidate(source: str, path: str, settings: Settings) -> FileResult:
    """A file the pre-filter rules out (``settings`` already resolved for ``path``): no rule
    can fire, so it is not analysed, but it is still checked for syntax errors (REF900) and
    its suppression comments are still checked (REF901/REF902)."""
    if settings.enabled(PARSE_ERROR):
        error = syntax_error_only(source, path)
        if error is not None:
            return FileResult(path, [error], source, skipped=True, stage="skipped")
    return FileResult(path, _noqa_only(source, path, settings), source, skipped=True,
                      stage="skipped")


def ruled_out_by_text(source: str, path: str, settings: Settings) -> tuple:
    """(``lint_source``'s result, whether the textual pre-filter kept the file) for a file
    decided without libcst: a ``# reflint: skip-file`` line, or a file the textual pre-filter
    rules out (the project does not make it a candidate) that CPython's own parser accepts.
    The result is None for any other file: ``lint_source`` decides it (told, when the text
    kept it, not to search it again: ``regex_done``). The command line checks these without a
    forked child (reflint.isolate guards libcst's native parser, which they never reach)."""
    settings = settings.for_path(path)
    if is_skipped_file(source):
        return FileResult(path, [], source, skipped=True, stage="skipped"), False
    if _project() is not None and (_project().must_analyse(path, source) or
                                   _project().traced_elsewhere(path)):
        return None, False
    verdict = _recalled(path, source)
    if verdict is not None:  # the summary phase's (the pre-filter kept the file)
        if not _allows(verdict, settings):
            return _gated(source, path, settings), True
        return None, True
    if prefilter(settings).search(source):
        return None, True
    if settings.enabled(PARSE_ERROR) and limits.call_deep(
            _cpython_error, source, path, size=len(source)) is not None:
        return None, False  # REF900, or libcst's verdict on newer syntax: lint_source's
    return FileResult(path, _noqa_only(source, path, settings), source, skipped=True,
                      stage="skipped"), False


def _noqa_only(source: str, path: str, settings: Settings) -> list:
    """A file no rule analysed still has its suppression comments checked (REF901/REF902)."""
    return apply_noqa([], source, settings, path) if _noqa_hint(source) else []


def syntax_error_only(source: str, path: str) -> Optional[Diagnostic]:
    """REF900 if ``source`` does not parse, without building a syntax tree reflint would use.

    CPython's compiler checks it first (stdlib ``ast``: about 10x faster than libcst, ~0.2 s
    for the 37k lines of jax/flax/optax/chex the pre-filter skips). Only when CPython rejects
    the file is libcst asked too: libcst is the parser of every file reflint analyses, and it
    accepts syntax newer than the running interpreter's (``type X = ...`` on Python 3.11), so a
    file is reported only when libcst rejects it as well — the same verdict a candidate file
    gets."""
    error = _cpython_error(source, path)
    if error is None:
        return None
    if not _libcst_may_parse(error, source):
        return _rejected(source, path, error)
    try:
        cstbridge.parse_module_cst(source)
    except cst.ParserSyntaxError as e:
        return _syntax_error(path, source, e)
    except (RecursionError, MemoryError, ValueError) as e:
        return parse_error(path, f"cannot parse file: {type(e).__name__}: {e}")
    return None


def check_module(module: "nodes.Module", path: str, settings: Settings,
                 source: Optional[str] = None, verdict: "Optional[gate.Verdict]" = None,
                 first_only: bool = False, positions=None) -> list:
    """The diagnostics of the enabled rules on ``module``. ``verdict``, the gate's answers for
    the same source, spares the rules that cannot fire and the work they say is useless (the
    analysis holds no Ref: only REF012, REF013 and REF015 can report; REF015's name walk only
    where the gate saw an unavailable name). ``first_only``: stop at the first finding and
    return it raw (a one-element list), without positions or fixes: whether there is one."""
    rules = [r for r in all_rules() if settings.enabled(r.code)]
    if verdict is not None:
        rules = [r for r in rules if verdict.may_fire(r.code)]
    if not rules:
        return []
    project = _project().view_for(path) if _project() is not None else None
    analysis = _analysis.ModuleAnalysis(module, path, settings, source, verdict, positions,
                                        project=project)
    out = []
    seen = set()
    try:
        for rule in rules:
            for finding in rule.check(analysis):
                if first_only:
                    return [finding]
                d = rule.to_diagnostic(analysis, finding, path)
                k = (d.line, d.column, d.code)
                if k in seen:
                    continue
                seen.add(k)
                out.append(d)
        if getattr(analysis, "layout_fix_undecided", False) and \
                isinstance(positions, _ExactPositions):
            positions.missed = True  # a fix only libcst's tree can decide
    finally:
        if not limits.keep_until_exit(analysis):
            analysis.release()
    out.sort()
    return out


@record
class NoqaComment:
    """One ``# noqa`` comment: ``codes`` is None for a bare ``# noqa`` (suppresses all)."""

    line: int  # 1-based line of the comment
    column: int  # 1-based column of the codes list (of ``#`` for a bare noqa)
    codes: Optional[list]  # [(code, column)], as written
    lines: range  # the lines it applies to


def noqa_comments(source: str) -> list:
    """Every ``# noqa`` comment, with the lines it covers.

    As in flake8, a comment covers its own physical line, and all the lines of a token group
    that spans several lines without a newline token (a multi-line string, a backslash
    continuation)."""
    if not _noqa_hint(source):
        return []
    scan = token_scan(source)
    if scan is None:
        out = []
        for i, text in enumerate(_LINE_SPLIT.split(source), start=1):
            m = _NOQA.search(text) if "#" in text else None
            if m:
                out.append(_noqa_comment(i, m.start() + 1, m, 0, range(i, i + 1)))
        return out
    out = []
    for (line, sc, text), lines in scan.comments:
        m = _NOQA.search(text)
        if m:
            out.append(_noqa_comment(line, sc + m.start() + 1, m, sc, lines))
    return out


@record
class TokenScan:
    """One tokenization of a source, shared by everything that asks about its lines: the
    token groups (lines joined by a multi-line token or a backslash, ended by a newline
    token: what a noqa comment covers, as in flake8) and the comments with their group."""

    groups: list  # range of lines per group, in order
    comments: list  # ((line, column, text), range of the lines of its group)

    def group_end(self, line: int) -> int:
        """The last line of the group holding ``line`` (``line`` itself outside any)."""
        import bisect

        starts = self._starts
        i = bisect.bisect_right(starts, line) - 1
        if i >= 0 and line in self.groups[i]:
            return self.groups[i][-1]
        return line

    @property
    def _starts(self) -> list:
        starts = self.__dict__.get("_starts_list")
        if starts is None:
            starts = self.__dict__["_starts_list"] = [g.start for g in self.groups]
        return starts


_SCANS: dict = {}  # the last few sources' scans (the engine, then the server, ask in turn)


def token_scan(source: str) -> Optional[TokenScan]:
    """The TokenScan of ``source`` (None when it does not tokenize), computed once for the
    last few sources."""
    scan = _SCANS.get(source, False)
    if scan is not False:
        return scan
    groups: list = []
    comments: list = []
    try:
        group_start = None
        group_end = -1
        pending: list = []  # comments of the current group
        # Universal newlines: a lone CR ends a line too, as for Python (and _LINE_SPLIT).
        for tok in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):
            tp, text, (sl, sc), (el, _), _ = tok
            if tp in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            group_start = sl if group_start is None else min(group_start, sl)
            group_end = max(group_end, el)
            if tp == tokenize.COMMENT:
                pending.append((sl, sc, text))
            if tp in (tokenize.NL, tokenize.NEWLINE):
                lines = range(group_start, group_end + 1)
                groups.append(lines)
                comments.extend((c, lines) for c in pending)
                pending, group_start, group_end = [], None, -1
        if group_start is not None:
            groups.append(range(group_start, group_end + 1))
        comments.extend((c, range(c[0], c[0] + 1)) for c in pending)
        scan: Optional[TokenScan] = TokenScan(groups, comments)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        scan = None
    if len(_SCANS) >= 4:
        _SCANS.pop(next(iter(_SCANS)))
    _SCANS[source] = scan
    return scan


def _noqa_comment(line, col, m, offset, lines) -> NoqaComment:
    if m.group("codes") is None:
        return NoqaComment(line, col, None, lines)
    codes = [(c.group(0), offset + m.start("codes") + c.start() + 1)
             for c in _CODE.finditer(m.group("codes"))]
    return NoqaComment(line, offset + m.start("codes") + 1, codes, lines)


def _suppresses(written: str, code: str) -> bool:
    # flake8's rule: the exact code, or a prefix of it (noqa with REF00 covers REF001-REF009).
    return code == written or code.startswith(written)


def _is_reflint_code(written: str) -> bool:
    return written.upper().startswith("REF")


def apply_noqa(diags: list, source: str, settings: Optional[Settings] = None,
               path: str = "") -> list:
    """Drop the diagnostics that a ``# noqa`` comment suppresses.

    With ``settings``, also report unknown REF codes in suppressions (REF901) and, when
    REF902 is selected, REF suppressions that suppress nothing."""
    if diags and _noqa_hint(source):
        from . import filenoqa  # `# reflint: noqa: REF007` / `# flake8: noqa: ...` file-wide

        diags = filenoqa.apply(diags, source)
    if not diags and not _REF_NOQA_HINT.search(source):
        return diags  # nothing to suppress, and no REF code a REF901/REF902 could be about
    comments = noqa_comments(source)
    if not comments:
        return diags
    by_line: dict = {}
    for c in comments:
        for line in c.lines:
            by_line.setdefault(line, []).append(c)
    used: set = set()  # (id(comment), written code)
    out = []
    for d in diags:
        suppressed = False
        for c in by_line.get(d.line, ()):
            if c.codes is None:
                suppressed = True
                continue
            for written, _ in c.codes:
                if _suppresses(written, d.code):
                    suppressed = True
                    used.add((id(c), written))
        if not suppressed:
            out.append(d)
    if settings is None:
        return out
    meta = []
    for c in comments:
        for written, col in c.codes or ():
            if not _is_reflint_code(written):
                continue  # another tool's code
            known = any(_suppresses(written, k) for k in CODES)
            if not known:
                if settings.enabled(UNKNOWN_NOQA):
                    hint = ""
                    if any(_suppresses(written.upper(), k) for k in CODES):
                        hint = f" (codes are upper case: {written.upper()})"
                    meta.append(_meta(path, UNKNOWN_NOQA, c.line, col, written,
                                      f"unknown rule code `{written}` in noqa comment{hint}"))
            elif settings.enabled(UNUSED_NOQA) and (id(c), written) not in used and \
                    not any(_suppresses(w, UNUSED_NOQA) for w, _ in c.codes) and \
                    any(_suppresses(written, k) and settings.enabled(k) for k in CODES
                        if k not in META_CODES):
                meta.append(_meta(path, UNUSED_NOQA, c.line, col, written,
                                  f"unused noqa: `{written}` suppresses nothing on this "
                                  f"line"))
    if not meta:
        return out
    # The meta diagnostics can themselves be suppressed by a code in the same comment.
    kept = []
    for d in meta:
        if any(c.codes is not None and any(_suppresses(w, d.code) for w, _ in c.codes)
               for c in by_line.get(d.line, ())):
            continue
        kept.append(d)
    return sorted(out + kept)


def _meta(path, code, line, col, written, message) -> Diagnostic:
    return Diagnostic(path=path, line=line, column=col, code=code, name=CODES[code],
                      message=message, end_line=line, end_column=col + len(written))


# --------------------------------------------------------------------------------------------
# Fixes
# --------------------------------------------------------------------------------------------


def _offsets(source: str) -> list:
    starts = [0]
    for m in _LINE_SPLIT.finditer(source):
        starts.append(m.end())
    return starts


def apply_edits(source: str, fixes: list) -> tuple[str, list]:
    """Apply non-overlapping fixes; returns the new source and the fixes applied."""
    starts = _offsets(source)

    def off(line, col):
        return starts[line - 1] + col - 1

    spans = []
    for fix in fixes:
        edits = [(off(e.line, e.column), off(e.end_line, e.end_column), e.content)
                 for e in fix.edits]
        spans.append((min(s for s, _, _ in edits), max(e for _, e, _ in edits), edits, fix))
    spans.sort(key=lambda t: (t[0], t[1]))
    chosen = []
    last_end = -1
    for start, end, edits, fix in spans:
        if chosen and start <= last_end:
            # Overlapping or touching: an insertion at the end of a replaced span may belong
            # to a node inside it (`-x_ref` rewritten, `[...]` added after `x_ref`). The
            # next pass of fix_source applies it to the new text if it still applies.
            continue
        chosen.append((start, end, edits, fix))
        last_end = end
    out = source
    for start, end, edits, fix in reversed(chosen):
        for s, e, content in sorted(edits, reverse=True):
            out = out[:s] + content + out[e:]
    return out, [c[3] for c in chosen]


@record
class FixOutcome:
    """The outcome of fixing one file (``fix_source``)."""

    source: str  # the fixed source (the original when nothing was applied)
    fixed: int  # number of fixes applied
    remaining: list  # diagnostics left after fixing
    error: Optional[str] = None  # why fixing was abandoned (file left untouched)
    # Fixes not applied because re-linting the fixed text showed a problem (one line each:
    # "REF013 fix on line 6 not applied: it would hide REF013 on lines 7, 8").
    rejected: list = field(default_factory=list)


def fix_source(source: str, path: str, settings: Settings, max_passes: int = 8) -> FixOutcome:
    """Apply every applicable fix, each verified by re-linting the fixed text
    (reflint.fixcheck): the result parses, only the edited lines changed, the fixed finding is
    gone, no finding appeared and none disappeared. A fix that fails is not applied (its
    reason goes to ``rejected``) and the others still are."""
    from . import fixcheck

    return fixcheck.fix_verified(source, path, settings, max_passes)


