"""privot: differentially private optimal transport.

Subpackages
-----------
privacy
    The DP core (noise, mechanisms, accounting, budget, audit); knows nothing about OT.
ot
    OT numerics (exact W_p, log-domain Sinkhorn, closed-form 1-D W2, sliced W2, JL);
    knows nothing about privacy.
datasets
    Loaders for real packaged data and the papers' synthetic generators.
cli
    The ``privot`` command.
"""

from privot.errors import (
    BudgetExceededError,
    ConvergenceError,
    DataWarning,
    InvalidDataError,
    InvalidParameterError,
    MissingExtraError,
    PrivotError,
)

__version__ = "0.1.0"

__all__ = [
    "BudgetExceededError",
    "ConvergenceError",
    "DataWarning",
    "InvalidDataError",
    "InvalidParameterError",
    "MissingExtraError",
    "PrivotError",
    "__version__",
]
