"""The same seeded releases produce the same bytes (issue 25's refactors promise it).

Each case of ``tests/golden/seeded_releases.py`` (every capability, several methods) is
released with a fixed integer seed and its publishable files are digested; the digests
must equal the recorded ones. A deliberate change of a release (new noise layout, a
changed default) re-records them with ``python tests/golden/seeded_releases.py --write``
and says why in the commit. Deterministic: no false alarms.
"""

from __future__ import annotations

import json

import pytest

from golden import seeded_releases

RECORDED = json.loads(seeded_releases.GOLDEN.read_text())


@pytest.mark.parametrize("case", sorted(seeded_releases.CASES))
def test_seeded_release_bytes_unchanged(case):
    if case.startswith("learning"):
        pytest.importorskip("torch")
    assert seeded_releases.compute([case])[case] == RECORDED[case]
