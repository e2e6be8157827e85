"""The result cache ($GEMMTUNE_CACHE_DIR/results, default ~/.cache/gemmtune/results): what `gemmtune cache` does."""
from __future__ import annotations

import os

from . import _native


def directory() -> str:
    """The result cache's directory ('' when neither GEMMTUNE_CACHE_DIR nor HOME is set: no cache)."""
    return _native.call_json("gt_cache", "dir", None)["dir"]


def entries() -> list:
    """Every readable entry as {"key", "record"} (a corrupt one is skipped with a warning on stderr)."""
    return _native.call_json("gt_cache", "ls", None)


def get(key: str) -> "dict | None":
    """The entry of one key (a TuneReport's cache_key) as {"key", "record"}, or None when there is none."""
    return _native.call_json("gt_cache", "get", key)


def clear() -> int:
    """Removes every entry; returns how many readable ones (what entries() listed) it removed."""
    return _native.call_json("gt_cache", "clear", None)["removed"]


def export(path: "os.PathLike | str") -> int:
    """Writes every entry to one JSON file; returns how many."""
    return _native.call_json("gt_cache", "export", os.fspath(path))["exported"]


def import_file(path: "os.PathLike | str") -> int:
    """Merges the entries of an exported file (an entry with the same key is replaced); returns how many."""
    return _native.call_json("gt_cache", "import", os.fspath(path))["imported"]
