"""reflint: find misuse of JAX mutable array references before the code runs."""

__version__ = "0.1.0"
