"""Shared by the flake8, pre-commit and consistency tests: run each tool, parse findings."""

import glob
import json
import os
import re
import subprocess
import sys

from conftest import ROOT, fixture_files, run_reflint
from reflint.rule import all_rules

SAMPLES = sorted(glob.glob(os.path.join(ROOT, "tests", "data", "integrations", "*.py")))
SAMPLE = os.path.join(ROOT, "tests", "data", "integrations", "sample.py")
FINDING = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>REF\d{3}) "
                     r"(?P<message>.*)$")


def lint_targets(tmp_dir) -> list:
    """Every fixture, the integration samples, and each rule's documented example."""
    files = list(fixture_files()) + SAMPLES
    for rule in all_rules():
        example, _ = rule.examples()
        if example:
            p = os.path.join(str(tmp_dir), f"example_{rule.code}.py")
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(example)
            files.append(p)
    return files


def reflint_findings(files, cwd=ROOT) -> set:
    r = run_reflint("check", "--format", "json", *files, cwd=cwd)
    assert r.returncode in (0, 1), r.stderr
    return {(os.path.normpath(d["path"]), d["line"], d["column"], d["code"], d["message"])
            for d in json.loads(r.stdout)}


def flake8(*args, cwd=ROOT, input=None):
    return subprocess.run([sys.executable, "-m", "flake8", *args], capture_output=True,
                          text=True, cwd=cwd, input=input, timeout=600)


def parse_findings(text: str) -> set:
    out = set()
    for line in text.splitlines():
        m = FINDING.match(line)
        if m:
            out.add((os.path.normpath(m["path"]), int(m["line"]), int(m["col"]), m["code"],
                     m["message"]))
    return out
