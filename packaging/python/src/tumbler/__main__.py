"""`tumbler ...` / `python -m tumbler ...`: runs the bundled server binary."""

import os
import sys

from . import TumblerError, binary_path


def main() -> None:
    try:
        exe = binary_path()
    except TumblerError as e:
        sys.exit(f"tumbler: {e}")
    os.execv(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
