"""Resolved settings of one run."""

from __future__ import annotations

from dataclasses import dataclass, field

from .codes import CODES

SUPPORTED_JAX_VERSIONS = ("0.7.1", "0.7.2", "0.8.0", "0.9.0", "0.10.2")
DEFAULT_TARGET_JAX_VERSION = "0.10.2"


def parse_version(text: str) -> tuple:
    parts = []
    for p in str(text).strip().split("."):
        if not p.isdigit():
            raise ValueError(f"invalid JAX version {text!r} (expected e.g. 0.10.2)")
        parts.append(int(p))
    if not 1 <= len(parts) <= 3:
        raise ValueError(f"invalid JAX version {text!r} (expected e.g. 0.10.2)")
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


@dataclass
class Settings:
    select: frozenset = field(default_factory=lambda: frozenset(c for c in CODES))
    target_jax_version: tuple = parse_version(DEFAULT_TARGET_JAX_VERSION)
    unsafe_fixes: bool = False

    def enabled(self, code: str) -> bool:
        return code in self.select

    def key(self) -> str:
        """A stable string for cache keys."""
        return "|".join([",".join(sorted(self.select)),
                         ".".join(map(str, self.target_jax_version)), str(self.unsafe_fixes)])


def expand_codes(items) -> set:
    """Expand a list of codes or prefixes (REF, REF00, REF001, ALL) into codes."""
    out = set()
    for item in items:
        item = item.strip()
        if not item:
            continue
        if item.upper() == "ALL":
            out |= set(CODES)
            continue
        matched = {c for c in CODES if c.startswith(item.upper())} | \
            {c for c, n in CODES.items() if n == item}
        if not matched:
            raise ValueError(f"unknown rule code or prefix: {item}")
        out |= matched
    return out
