"""pytest configuration: the GPU gate of tests/python/gpu (GEMMTUNE_REQUIRE_GPU=1 turns a skip for want of a GPU into a failure)."""
import os

import pytest


def pytest_collection_modifyitems(config, items):
    # `scripts/test_python.sh gpu` sets GEMMTUNE_REQUIRE_GPU=1: a GPU test that would skip for want of a GPU fails.
    if os.environ.get("GEMMTUNE_REQUIRE_GPU") != "1":
        return
    import gemmtune
    if not gemmtune.gpu_available():
        raise pytest.UsageError("GEMMTUNE_REQUIRE_GPU=1 but no GPU is available")
