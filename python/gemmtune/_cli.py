"""`gemmtune` on the PATH of a pip install: runs the CLI binary the wheel carries (gemmtune/bin/gemmtune)."""
import os
import sys
from pathlib import Path


def main() -> None:
    exe = Path(__file__).resolve().parent / "bin" / "gemmtune"
    if not exe.exists():
        sys.exit("gemmtune: this package was built without the command line (CLI11 was not found at build time)")
    os.execv(str(exe), [str(exe), *sys.argv[1:]])


if __name__ == "__main__":
    main()
