"""``python -m reflint.runtime SCRIPT [ARGS...]``."""

import sys

from reflint.runtime._main import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
