"""Fuzzing the language server's message stream (issue 29): malformed frames, garbage and
edit storms, then a liveness and correctness check per session.

    python bench/fuzz_lsp.py --sessions 40 --messages 250 [--seed 0]

Each session starts ``reflint server`` and sends a random stream: documents opened, storms of
full-text changes (generated programs, tests/fuzz_programs.py), hovers, closes, frames whose
Content-Length is too small or too large, bodies that are not JSON, noise lines (each bad
frame followed by a padding notification it may swallow). Then it must still answer: a fresh
document's diagnostics must equal ``lint_source`` on its text, and ``shutdown`` must be
answered; then characters typed into that document (in comments, new comments, code; some
keystrokes waited for, some coalesced) must leave the last version's diagnostics equal to
``lint_source``'s on the typed text. Prints the messages sent, the duration and each
failure.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import fuzz_programs  # noqa: E402
from lsp_raw import RawClient, frame  # noqa: E402

# Generous: the campaign runs at low priority on a shared machine.
WAIT = 900.0
PAD = {"jsonrpc": "2.0", "method": "$/reflintPadding", "params": {"pad": "x" * 80}}


def session(rng: random.Random, root: str, n: int) -> tuple:
    from reflint.engine import lint_source
    from reflint.settings import Settings

    c = RawClient(root)
    sent = 0
    try:
        c.initialize(root, WAIT)
        docs: dict = {}
        for _ in range(n):
            r = rng.random()
            if r < 0.15 or not docs:
                uri = f"file://{root}/d{rng.randint(0, 5)}.py"
                docs[uri] = 1
                c.notify("textDocument/didOpen", {"textDocument": {
                    "uri": uri, "languageId": "python", "version": 1,
                    "text": fuzz_programs.program(rng)}})
            elif r < 0.6:  # an edit storm: several versions without a pause
                uri = rng.choice(list(docs))
                for _ in range(rng.randint(1, 8)):
                    docs[uri] += 1
                    text = fuzz_programs.program(rng) if rng.random() < 0.5 else \
                        fuzz_programs.notebook_program(rng)
                    c.notify("textDocument/didChange", {
                        "textDocument": {"uri": uri, "version": docs[uri]},
                        "contentChanges": [{"text": text}]})
                    sent += 1
            elif r < 0.7:
                uri = rng.choice(list(docs))
                c.request("textDocument/hover", {"textDocument": {"uri": uri},
                                                 "position": {"line": rng.randint(0, 20),
                                                              "character": rng.randint(0, 9)}})
            elif r < 0.78:
                uri = rng.choice(list(docs))
                del docs[uri]
                c.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            else:  # a framing error, then padding it may swallow
                kind = rng.random()
                msg = {"jsonrpc": "2.0", "method": "$/reflintNoise", "params": {"k": 1}}
                if kind < 0.35:
                    c.send(frame(msg, -rng.randint(1, 10)))
                elif kind < 0.7:
                    c.send(frame(msg, rng.randint(1, 60)))
                elif kind < 0.85:
                    c.send(b"Content-Length: 12\r\n\r\nnot json!!!!")
                else:
                    c.send(bytes(rng.randrange(32, 127) for _ in range(rng.randint(1, 40))) +
                           b"\r\n")
                for _ in range(2):
                    c.send(frame(PAD))
                    sent += 1
            sent += 1
        # Liveness and correctness: a fresh document's diagnostics are the CLI's.
        text = fuzz_programs.program(rng)
        while not fuzz_programs.valid(text):
            text = fuzz_programs.program(rng)
        uri = f"file://{root}/final.py"
        c.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})
        msg = c.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics" and
                         m["params"]["uri"] == uri, WAIT)
        if msg is None:
            return sent, ["the server ended the session"]
        got = sorted((d["range"]["start"]["line"] + 1, d["code"])
                     for d in msg["params"]["diagnostics"])
        want = sorted((d.line, d.code) for d in
                      lint_source(text, os.path.join(root, "final.py"), Settings()).diagnostics)
        problems = [] if got == want else [f"diagnostics differ: {got} != {want}"]
        # Typing in it: characters in comments (answered without analysing when they cannot
        # change the findings, reflint.server_reuse), new comments, and code; some waited
        # for, some not (coalesced). The last version's diagnostics must be the CLI's.
        version, lines = 1, text.split("\n")
        for k in range(rng.randint(5, 30)):
            i = rng.randrange(len(lines))
            line = lines[i]
            if "#" in line and rng.random() < 0.5:
                col = rng.randint(line.index("#") + 1, len(line))
            elif rng.random() < 0.7:
                col = len(line)
            else:
                col = rng.randint(0, len(line))
            ch = rng.choice(["#", " ", "x", "# note", "(", "'", "noqa", "_ref", "[...]", "é"])
            lines[i] = line[:col] + ch + line[col:]
            version += 1
            c.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": {"start": {"line": i, "character": col},
                                              "end": {"line": i, "character": col}},
                                    "text": ch}]})
            sent += 1
            msg = None
            if rng.random() < 0.5:
                msg = c.wait_for(lambda m, v=version: m.get("method") ==
                                 "textDocument/publishDiagnostics" and
                                 m["params"]["uri"] == uri and
                                 m["params"].get("version") == v, WAIT)
                if msg is None:
                    return sent, ["the server ended the session while typing"]
        typed = "\n".join(lines)
        if msg is None:  # the last keystroke was not waited for
            msg = c.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                             and m["params"]["uri"] == uri and
                             m["params"].get("version") == version, WAIT)
        if msg is None:
            return sent, ["the server ended the session while typing"]
        got = sorted((d["range"]["start"]["line"] + 1, d["range"]["start"]["character"],
                      d["code"], d["message"]) for d in msg["params"]["diagnostics"])
        want = sorted((d.line, _utf16(typed, d.line, d.column), d.code, d.message)
                      for d in lint_source(typed, os.path.join(root, "final.py"),
                                           Settings()).diagnostics)
        if got != want:
            problems.append(f"after typing, diagnostics differ: {got} != {want}")
        rid = c.request("shutdown")
        if c.wait_for(lambda m: m.get("id") == rid, WAIT) is None:
            problems.append("shutdown not answered")
        return sent + 3, problems
    except TimeoutError as e:
        return sent, [f"timeout: {e}"]
    finally:
        c.close()


def _utf16(text: str, line: int, column: int) -> int:
    """A 1-based code point column as LSP's 0-based UTF-16 character."""
    lines = text.split("\n")
    s = lines[line - 1][:column - 1] if line <= len(lines) else ""
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=40)
    ap.add_argument("--messages", type=int, default=250)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    start = time.time()
    total = 0
    failures = []
    for i in range(args.sessions):
        with tempfile.TemporaryDirectory() as root:
            sent, problems = session(rng, root, args.messages)
        total += sent
        if problems:
            failures.append((i, problems))
            print(f"FAIL session {i}: {problems}", flush=True)
        if (i + 1) % 10 == 0:
            print(f"{i + 1} sessions, {total} messages, {time.time() - start:.0f} s, "
                  f"{len(failures)} failures", flush=True)
    print(f"sessions: {args.sessions}, messages: {total}, seed {args.seed}")
    print(f"duration: {time.time() - start:.1f} s")
    print(f"failures: {len(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
