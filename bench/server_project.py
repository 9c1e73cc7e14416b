"""What the whole project costs ``reflint server`` per keystroke (reflint/server_project.py).

    python bench/server_project.py ROOT FILE [--open OTHER ...] [--keystrokes 10]

Runs the worker half in this process, as a warm worker runs it: the first analysis of FILE
(the project of ROOT built from nothing: every module summarized), then keystrokes in code
(a top-level line at the end of FILE, changed at each keystroke): the project built again
(only FILE summarized again) and FILE analysed with it, against the same analysis without
the project (``server_worker.lint_text``). Then the dependents: an edit of FILE that moves
every line (a comment line inserted at the top), and how many of the ``--open`` documents
read a changed fact (their view digest), with the cost of analysing each again; and the
cost of an unaffected one (answered by the memo). CPU seconds of this process
(``time.process_time``) and wall seconds; the median over the keystrokes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))


def clock():
    return time.process_time(), time.perf_counter()


def since(start) -> tuple:
    c, w = clock()
    return c - start[0], w - start[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("file")
    ap.add_argument("--open", nargs="*", default=[])
    ap.add_argument("--keystrokes", type=int, default=10)
    ap.add_argument("--where", choices=("end", "middle"), default="end",
                    help="where the keystrokes' line is: at the end (no function moves: the "
                         "summaries stay equal) or before the middle top-level function (the "
                         "functions below it move: the project is solved again)")
    args = ap.parse_args(argv)

    from reflint import server_project as sp
    from reflint import server_worker
    from reflint.project import _read
    from reflint.settings import Settings

    root = os.path.abspath(args.root)
    path = os.path.abspath(args.file)
    others = [os.path.abspath(p) for p in args.open]
    settings = Settings()
    base = _read(path)
    buffers = {p: _read(p) for p in others}
    server_worker.warm_up()

    def ctx(text):
        return sp.context(path, [], {**buffers, path: text})

    t = clock()
    diags, _, info = sp.analyse(base, path, settings, ctx(base))
    cold = since(t)
    print(f"{root}: {info['files']} modules; first analysis of {os.path.relpath(path, root)} "
          f"(the project built from nothing): {cold[0]:.2f} CPU-s, {cold[1]:.2f} s wall, "
          f"{len(diags)} findings")

    build, analysis, alone, total = [], [], [], []
    tree = sp._tree(root)
    lines = base.splitlines(True)
    defs = [i for i, line in enumerate(lines) if line.startswith("def ")]
    cut = defs[len(defs) // 2] if defs and args.where == "middle" else len(lines)

    def typed(n):  # in the middle, the functions below move by a line at each keystroke
        extra = "\n" * (n % 2) if args.where == "middle" else ""
        return "".join(lines[:cut]) + f"_keystroke = {n}\n" + extra + "".join(lines[cut:])

    for i in range(args.keystrokes):
        text = typed(i)
        t = clock()
        server_worker.lint_text(text, path, settings)
        alone.append(since(t)[0])
        text = typed(i + 1000)  # not the memo's
        t = clock()
        tree.project_for({**buffers, path: text})
        build.append(since(t)[0])
        t2 = clock()
        _, _, info = sp.analyse(text, path, settings, ctx(text))
        analysis.append(since(t2)[0])
        total.append(since(t)[0])
        assert not info["built"] and not info["memo"], info
    med = statistics.median
    print(f"keystroke in code ({args.where}), median of {args.keystrokes} (CPU-s): "
          f"alone {med(alone):.3f}; with the project {med(total):.3f} = project built again {med(build):.3f} + "
          f"analysis and digests {med(analysis):.3f} (overhead "
          f"{med(total) - med(alone):+.3f}, x{med(total) / med(alone):.2f})")

    # Dependents: every line of FILE moves.
    moved = "# moved\n" + base
    _, _, before = sp.analyse(base, path, settings, ctx(base))
    t = clock()
    _, _, after = sp.analyse(moved, path, settings, ctx(moved))
    edit = since(t)[0]
    changed = [p for p in others if before["others"].get(p) != after["others"].get(p)]
    print(f"an edit moving every line of the file: {edit:.3f} CPU-s; {len(changed)} of "
          f"{len(others)} open documents read a changed fact: "
          f"{[os.path.relpath(p, root) for p in changed]}")
    for p in others:
        c = sp.context(p, [], {**buffers, path: moved})
        t = clock()
        sp.analyse(buffers[p], p, settings, c)  # the first time with this project
        first = since(t)[0]
        t = clock()
        _, _, again = sp.analyse(buffers[p], p, settings, c)
        memo = since(t)[0]
        print(f"  {os.path.relpath(p, root)}: analysed again {first:.3f} CPU-s; unaffected "
              f"(memo: {again['memo']}) {memo:.4f} CPU-s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
