"""Benchmark: ``reflint server`` as an editor sees it, over stdio with real LSP frames.

    python bench/server.py [--file F [--lines 2000]] [--keystrokes 20] [--launches 5]

Prints, each a median over repeated runs (and min/max):

* launch -> the ``initialize`` answer, and launch -> the first diagnostics of a small file
  with a finding opened right after ``initialize`` (what a user opening one file waits for);
* launch -> the first diagnostics when that first file is the big one;
* keystroke -> diagnostics on the big file (one character per ``didChange``, incremental,
  each waiting for the first diagnostics of its version; the server analyses an edit at
  once, "latest wins"): typing in a comment (a trailing comment on a line without findings),
  and typing in code (a name in a statement; every keystroke a new analysis of the whole
  file, with the project as it was before the keystroke: reflint.server_project's
  provisional findings, settled when typing pauses).

The big file is ``--file`` cut at the top-level statement or class member nearest to
``--lines`` (e.g. JAX's tests/pallas/pallas_test.py: ``/work/corpus/jax/...``), or by default
bench/startup.py's generated Pallas kernel file (~2,000 lines, a finding per kernel). At the
end the diagnostics of the last version are compared with ``reflint check``'s
(``lint_source``) on the same text: a benchmark of a server that answers wrong is worthless.
The machine's load average is printed before and after (2 shared cores: read it).
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, HERE)

from lsp_raw import RawClient, children  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its live children (the workers), from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for p in [pid] + children(pid):
        try:
            with open(f"/proc/{p}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
    return total

SMALL = "import jax\nimport jax.numpy as jnp\n\n\ndef f(x):\n    r = jax.new_ref(x)\n" \
        "    return jnp.sum(r)\n"


def cut(text: str, lines: int) -> str:
    """``text`` up to the top-level statement or class member starting nearest ``lines``."""
    tree = ast.parse(text)
    starts = []
    for node in tree.body:
        starts.append(min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list",
                                                                       [])]))
        if isinstance(node, ast.ClassDef):
            for m in node.body:
                starts.append(min([m.lineno] + [d.lineno for d in getattr(m, "decorator_list",
                                                                           [])]))
    src = text.split("\n")
    for start in sorted(starts, key=lambda s: abs(s - lines - 1)):
        candidate = "\n".join(src[:start - 1]).rstrip() + "\n"
        try:
            ast.parse(candidate)
            return candidate
        except SyntaxError:
            continue
    return text


class Session:
    def __init__(self, root: str, env: dict):
        self.t0 = time.perf_counter()
        self.c = RawClient(root, env=env)
        self.root = root
        self.version: dict = {}

    def initialize(self) -> float:
        rid = self.c.request("initialize", {"processId": os.getpid(),
                                            "rootUri": f"file://{self.root}",
                                            "capabilities": {}})
        self.c.wait_for(lambda m: m.get("id") == rid, 120)
        t = time.perf_counter() - self.t0
        self.c.notify("initialized", {})
        return t

    def open(self, name: str, text: str) -> str:
        path = os.path.join(self.root, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        uri = f"file://{path}"
        self.version[uri] = 1
        self.c.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})
        return uri

    def diagnostics(self, uri: str, version: int, timeout: float = 300) -> list:
        msg = self.c.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] == uri and
                              m["params"].get("version") == version, timeout)
        return msg["params"]["diagnostics"]

    def type_char(self, uri: str, line: int, col: int, ch: str) -> int:
        self.version[uri] += 1
        v = self.version[uri]
        self.c.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": v},
            "contentChanges": [{"range": {"start": {"line": line, "character": col},
                                          "end": {"line": line, "character": col}},
                                "text": ch}]})
        return v

    def close(self) -> None:
        try:
            rid = self.c.request("shutdown")
            self.c.wait_for(lambda m: m.get("id") == rid, 30)
            self.c.notify("exit")
        except Exception:  # noqa: BLE001
            pass
        self.c.close()


def stats(xs: list) -> str:
    return (f"median {statistics.median(xs) * 1000:7.1f} ms (min {min(xs) * 1000:.1f}, "
            f"max {max(xs) * 1000:.1f}, n={len(xs)})")


def keystrokes(s: Session, uri: str, text: str, line: int, col: int, n: int,
               word: str) -> tuple:
    """Type ``word`` (repeated) at (line, col), 0-based; (latencies, the final text, its
    diagnostics)."""
    lines = text.split("\n")
    out = []
    got = None
    for k in range(n):
        ch = word[k % len(word)]
        t = time.perf_counter()
        v = s.type_char(uri, line, col + k, ch)
        got = s.diagnostics(uri, v)
        out.append(time.perf_counter() - t)
        lines[line] = lines[line][:col + k] + ch + lines[line][col + k:]
    return out, "\n".join(lines), got


def comment_line(text: str, avoid: set) -> int:
    """A code line (0-based) ending a statement, without findings, to append a comment to."""
    tree = ast.parse(text)
    lines = text.split("\n")
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.Expr, ast.Return)) and \
                node.lineno == node.end_lineno and node.lineno not in avoid and \
                "#" not in lines[node.lineno - 1]:
            if best is None or abs(node.lineno - len(lines) // 2) < abs(best - len(lines) // 2):
                best = node.lineno
    return best - 1


def code_line(text: str, avoid: set) -> tuple:
    """(0-based line, column) inside a function, where typing letters extends a name: the end
    of the target of a one-line assignment to a simple name."""
    tree = ast.parse(text)
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and node.col_offset > 0 and \
                node.lineno == node.end_lineno and node.lineno not in avoid:
            cand = (node.lineno - 1, node.targets[0].end_col_offset)
            if best is None or abs(cand[0] - 1000) < abs(best[0] - 1000):
                best = cand
    return best


def compare(problems: list, when: str, got: list, text: str, root: str) -> None:
    """The server's diagnostics of ``text`` must be reflint check's (line, code, message)."""
    from reflint.engine import lint_source
    from reflint.settings import Settings

    want = lint_source(text, os.path.join(root, "big.py"), Settings()).diagnostics
    mine = sorted((d["range"]["start"]["line"] + 1, d["code"], d["message"]) for d in got)
    theirs = sorted((d.line, d.code, d.message) for d in want)
    if mine != theirs:
        problems.append(f"{when}: the server's diagnostics differ from reflint check's")
    else:
        print(f"  {when}: {len(mine)} diagnostics, equal to reflint check's")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", help="the big file (default: bench/startup.py's kernels)")
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--keystrokes", type=int, default=20)
    ap.add_argument("--code-keystrokes", type=int, default=5)
    ap.add_argument("--launches", type=int, default=5)
    ap.add_argument("--baseline", metavar="DIR", help="another reflint checkout: run its "
                    "server instead (PYTHONPATH=DIR), for a before/after at the same load")
    args = ap.parse_args(argv)
    from startup import kernel_file
    from reflint.engine import lint_source
    from reflint.settings import Settings

    if args.file:
        with open(args.file, encoding="utf-8") as fh:
            big = cut(fh.read(), args.lines)
        name = os.path.basename(args.file)
    else:
        big = kernel_file(args.lines)
        name = "generated Pallas kernels"
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = (os.path.abspath(args.baseline) if args.baseline else ROOT) + \
        os.pathsep + env.get("PYTHONPATH", "")
    if args.baseline:
        print(f"baseline: the server of {args.baseline}")
    print(f"python {sys.version.split()[0]}, load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"big file: {name}, {big.count(chr(10))} lines")
    init, first_small, first_big, cpu_small = [], [], [], []
    problems = []
    with tempfile.TemporaryDirectory() as root:
        want_big = lint_source(big, os.path.join(root, "big.py"), Settings()).diagnostics
        print(f"  {len(want_big)} findings (reflint check)")
        for _ in range(args.launches):
            s = Session(root, env)
            try:
                init.append(s.initialize())
                uri = s.open("small.py", SMALL)
                s.diagnostics(uri, 1)
                first_small.append(time.perf_counter() - s.t0)
                cpu_small.append(cpu_seconds(s.c.proc.pid))
            finally:
                s.close()
        for _ in range(max(1, args.launches // 2)):
            s = Session(root, env)
            try:
                s.initialize()
                uri = s.open("big.py", big)
                s.diagnostics(uri, 1)
                first_big.append(time.perf_counter() - s.t0)
            finally:
                s.close()
        print(f"launch -> initialize answered:         {stats(init)}")
        print(f"launch -> first diagnostics, small:    {stats(first_small)}")
        print(f"  CPU of the server and its workers by then: {stats(cpu_small)}")
        print(f"launch -> first diagnostics, big file: {stats(first_big)}")
        s = Session(root, env)
        try:
            s.initialize()
            uri = s.open("big.py", big)
            s.diagnostics(uri, 1)
            touched = {d.line for d in want_big} | {d.end_line or d.line for d in want_big}
            line = comment_line(big, touched)
            col = len(big.split("\n")[line])
            lat, text, _ = keystrokes(s, uri, big, line, col, 1, "#")
            lat2, text, got = keystrokes(s, uri, text, line, col + 1, args.keystrokes,
                                         " a comment typed here ")
            print(f"keystroke -> diagnostics, in a comment: {stats(lat + lat2)}")
            compare(problems, "after typing in a comment", got, text, root)
            cline, ccol = code_line(text, touched)
            lat3, text, got = keystrokes(s, uri, text, cline, ccol, args.code_keystrokes,
                                         "xyz")
            print(f"keystroke -> diagnostics, in code:      {stats(lat3)}")
            compare(problems, "after typing in code", got, text, root)
        finally:
            s.close()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for p in problems:
        print(f"PROBLEM: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
