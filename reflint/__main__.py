import sys


def _server(argv: list) -> int:
    """``python -m reflint server``, without importing reflint.cli (~0.2 CPU-s): the editor
    waits for the start-up (reflint.server_front), and the CLI's modules are not needed."""
    import importlib.util

    missing = [m for m in ("pygls", "lsprotocol") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"reflint: error: the language server needs pygls: pip install "
              f"'jax-reflint[server]' (no module named {missing[0]!r})", file=sys.stderr)
        return 2
    from .server_front import main

    try:
        return main(argv)
    except SystemExit as e:  # --help, a usage error
        return 2 if e.code not in (0, None) else 0


if sys.argv[1:2] == ["server"]:
    sys.exit(_server(sys.argv[2:]))

from .cli import main  # noqa: E402

sys.exit(main())
