"""Shared fixtures of the learning tests (torch is the ``torch`` extra)."""

import pytest

pytest.importorskip("torch")
