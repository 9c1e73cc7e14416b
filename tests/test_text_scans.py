"""The text questions answered by substring search instead of a regex (issue 23: a regex
anchored at every line's start, searched case-insensitively, or an alternation between word
boundaries cannot skip ahead on a literal) give the regex's answers: on texts made of the
pieces that matter, on every fixture and example, and on the installed sources."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reflint import api, engine, summary

from conftest import fixture_files, installed_sources

# Pieces that make the regexes' edge cases: words next to word characters, dots, line starts,
# import lines, Unicode letters and case variants.
_PIECES = st.sampled_from([
    "kernel", ".kernel", "kernels", "_kernel", "pallas_call", "xpallas_call", "pallas_call_",
    "new_ref", "[...]", "[..]", "empty_ref", "from ", "import ", "from", "importx ", "class ",
    "class", "class X(", "class Y:", "def ", "async def ", "@", "x = ", " ", "\t", "\n", "\r\n",
    "\r", ".", "(", "#", "é", "ß", "1", "_", "a", "noqa", "NOQA", "NoQa", "nöqa", "# noqa: REF007",
])
_TEXTS = st.lists(_PIECES, max_size=40).map("".join)

_COLUMN0_M = re.compile(r"^(?:import |from |def |async def |@|[A-Za-z_])[^\n]*", re.M)
_CLASS_M = re.compile(r"^class[ \t]+([A-Za-z_]\w*)[ \t]*[(:[]", re.M)


# The questions as regexes (what the summary searched before).
_API_WORDS = re.compile(
    api.words_pattern([w for w in summary._literal_words() if w != "kernel"]) +
    r"|\.kernel\b|^(?:from|import)\b[^\n]*\bkernel\b", re.M)
_REF_WORDS = re.compile(api.words_pattern(summary._ref_words()) + r"|\[\.\.\.\]")


def _api_regex(text: str) -> bool:
    return bool(_API_WORDS.search(text))


def _ref_regex(text: str) -> bool:
    return _REF_WORDS.search(text) is not None


def _agree(text: str) -> None:
    assert summary.has_api_words(text) == _api_regex(text), text
    assert summary.has_ref_words(text) == _ref_regex(text), text
    assert list(summary._column0_lines(text)) == \
        [(m.start(), m.group()) for m in _COLUMN0_M.finditer(text)], text
    assert [(m.start(), m.group(1)) for m in summary._class_headers(text)] == \
        [(m.start(), m.group(1)) for m in _CLASS_M.finditer(text)], text
    assert engine._noqa_hint(text) == bool(re.search("noqa", text, re.I)), text


@settings(max_examples=400, deadline=None)
@given(_TEXTS)
def test_scans_agree_with_their_regexes_on_generated_texts(text):
    _agree(text)


@pytest.mark.parametrize("text, api_words, ref_words", [
    ("import jax.experimental.pallas as pl\npl.pallas_call(k)\n", True, False),
    ("y = my_pallas_call(k)\n", False, False),          # not a whole word
    ("from lib import kernel\n", True, False),          # `kernel` on an import line
    ("  from lib import kernel\n", False, False),       # not at the line's start
    ("def kernel(x_ref): pass\n", False, False),         # a plain `kernel` is a common word
    ("plgpu.kernel(body)\n", True, False),               # as an attribute
    ("o_ref[...] = 1\n", False, True),
    ("r = jax.new_ref(0)\n", False, True),
    ("r = jax.new_refs(0)\n", False, False),
])
def test_word_questions_on_examples(text, api_words, ref_words):
    assert summary.has_api_words(text) is api_words
    assert summary.has_ref_words(text) is ref_words
    _agree(text)


def test_scans_agree_on_fixtures():
    texts = [open(p, encoding="utf-8").read() for p in fixture_files()]
    assert len(texts) > 100
    for text in texts:
        _agree(text)


@pytest.mark.slow
def test_scans_agree_on_installed_sources():
    sources = installed_sources()
    assert len(sources) > 500
    for _, text in sources:
        _agree(text)


def test_word_char_is_regex_word_class():
    """api.word_char, which the substring searches test boundaries with, is ``\\w``."""
    for c in ["a", "Z", "_", "0", "é", "ß", "²", "٣", " ", ".", "(", "\n", "-", "\u200b"]:
        assert api.word_char(c) == bool(re.fullmatch(r"\w", c)), c
