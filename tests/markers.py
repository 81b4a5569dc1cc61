"""Markers shared by the test modules."""

import pytest

from pettingllms.sandbox import bwrap_available

needs_bwrap = pytest.mark.skipif(not bwrap_available(), reason="bubblewrap (bwrap) is not installed")
"""Skip a test that runs programs in the sandbox where bubblewrap is missing (CI installs it)."""
