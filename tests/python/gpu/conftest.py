"""Fixtures of the GPU tests."""
import pytest


@pytest.fixture
def quick_tuning():
    """Few candidates per problem keep the tests fast; the options and tune mode are restored after each test."""
    import gemmtune.torch as gt
    old = dict(gt.options())
    gt.set_options(top_k=2, progress=False)
    yield
    gt.set_options(**{k: old[k] for k in ("tune", "top_k", "progress") if k in old})
