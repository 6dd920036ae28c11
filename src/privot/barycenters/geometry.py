"""Public geometry of the private barycenters: :class:`PublicBounds`, re-exported.

:class:`PublicBounds` (a box or a ball mapped isotropically into :math:`B_0(1/2)`, the
domain of papers 000 and 001) lives in :mod:`privot.bounds`, beside the heatmaps'
:class:`~privot.bounds.Grid`: one module of public bounds. This module keeps the old
import path.

Privacy
-------
No release here. The bounds are public parameters given by the caller, never derived
from the data; the clip maps each point by a rule reading that point alone, so one
record's change moves only its own clipped point (the sensitivities that rely on this
are derived in ``docs/privacy/barycenters.md``). See :mod:`privot.bounds`.
"""

from __future__ import annotations

from privot.bounds import PublicBounds

__all__ = ["PublicBounds"]
