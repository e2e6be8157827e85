"""`gemmtune` on the PATH of a pip install: runs the CLI binary the wheel carries (gemmtune/bin/gemmtune), except
`gemmtune tune --suite FILE`, which tunes a suite on every GPU of the host or across a launcher's ranks through
torch.distributed (gemmtune/torch/tuning.py)."""
import os
import sys
from pathlib import Path


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["tune"] and any(a == "--suite" or a.startswith("--suite=") for a in args[1:]):
        try:
            from gemmtune.torch.tuning import main as tune_suite
        except ImportError as e:
            sys.exit(f"error: gemmtune tune --suite needs PyTorch ({e}); without it, `gemmtune bench --suite FILE "
                     "--shard I/N` tunes a static share of a suite")
        sys.exit(tune_suite(args[1:]))
    exe = Path(__file__).resolve().parent / "bin" / "gemmtune"
    if not exe.exists():
        sys.exit("gemmtune: this package was built without the command line (CLI11 was not found at build time)")
    os.execv(str(exe), [str(exe), *sys.argv[1:]])


if __name__ == "__main__":
    main()
