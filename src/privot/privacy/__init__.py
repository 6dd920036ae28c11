"""The DP core of privot: noise, mechanisms, accounting, budgets and audits.

Knows nothing about optimal transport. Modules:

* :mod:`privot.privacy.noise` -- secure samplers (the only source of privacy noise);
* :mod:`privot.privacy.mechanisms` -- Laplace, Gaussian (analytic and classic),
  discrete Laplace, exponential mechanism; each returns a
  :class:`~privot.privacy.types.Release`;
* :mod:`privot.privacy.accounting` -- pure composition, amplification, GDP/PLD/RDP
  accounting and noise calibration;
* :mod:`privot.privacy.budget` -- :class:`PrivacyAccountant`, the in-process ledger
  that refuses to overspend (its machinery in ``_scopes``, shared with the ledger);
* :mod:`privot.privacy.ledger` -- :class:`Ledger`, a data set's budget in one SQLite
  file, shared by every run and capability (hybrid filter: basic composition beside a
  Renyi filter; PLD shown); a package of one module per job, all re-exported;
* :mod:`privot.privacy.events` -- what a release ran, in the form the ledger composes;
* :mod:`privot.privacy.audit` -- empirical lower bounds on epsilon;
* :mod:`privot.privacy.types` -- :class:`Neighbouring`, :class:`PrivacyCost`,
  :class:`Release`, the :class:`~privot.privacy.types.PrivacyEvent` base class.

Privacy
-------
Each mechanism's docstring states its unit of privacy, neighbouring relation,
sensitivity and guarantee; the derivations are in ``docs/privacy/``.
"""

from privot.privacy.accounting import (
    NoiseCalibration,
    calibrate_noise_multiplier,
    compose_basic,
    compose_parallel,
    epsilon_for,
    gdp_to_epsilon,
)
from privot.privacy.audit import AuditResult, audit
from privot.privacy.budget import PrivacyAccountant
from privot.privacy.ledger import Ledger
from privot.privacy.mechanisms import (
    discrete_laplace_mechanism,
    exponential_mechanism,
    gaussian_mechanism,
    gaussian_sigma,
    laplace_mechanism,
)
from privot.privacy.types import Neighbouring, PrivacyCost, Release

__all__ = [
    "AuditResult",
    "Ledger",
    "Neighbouring",
    "NoiseCalibration",
    "PrivacyAccountant",
    "PrivacyCost",
    "Release",
    "audit",
    "calibrate_noise_multiplier",
    "compose_basic",
    "compose_parallel",
    "discrete_laplace_mechanism",
    "epsilon_for",
    "exponential_mechanism",
    "gaussian_mechanism",
    "gaussian_sigma",
    "gdp_to_epsilon",
    "laplace_mechanism",
]
