"""A fresh, real IPython kernel per test (see kernel_harness for the driver)."""

from __future__ import annotations

import pytest
from kernel_harness import SETUP, start_kernel


@pytest.fixture
def kernel(tmp_path):
    """A fresh kernel with ``%load_ext aimu`` and the scripted model imported."""
    k = start_kernel(tmp_path)
    try:
        k.ok(SETUP)
        yield k
    finally:
        k.client.stop_channels()
        k.km.shutdown_kernel(now=True)
