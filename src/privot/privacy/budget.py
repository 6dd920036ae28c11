"""The budget accountant: a ledger of releases with hierarchical scopes and refusal.

A :class:`PrivacyAccountant` holds a total ``(epsilon, delta)``. Every release charges
it through :meth:`PrivacyAccountant.spend` (the :class:`~privot.privacy.types.Spender`
protocol); a charge that would take the composed spending past the total is refused
with :class:`~privot.errors.BudgetExceededError` *before* anything is recorded, so a
mechanism that asks first and releases after can never overspend.

Scopes split a budget: ``acct.scope("heatmap", fraction=0.5)`` or
``acct.split({"a": 1, "b": 3})`` make child accountants whose limit is their share
and whose spending is also checked against, and counted in, every ancestor.
Derivations and the tolerance rule are in ``docs/privacy/budget.md``.

The in-memory machinery (charging, scopes, reports) is
:class:`privot.privacy._scopes.ScopedAccountant`, which the budget ledger also runs
for each release it holds; this module adds the opener of a ledger file
(:meth:`PrivacyAccountant.open`) and the helpers for releases charged piece by piece.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privot.errors import BudgetExceededError
from privot.privacy._scopes import (
    COMPOSITIONS,
    RELATIVE_TOLERANCE,
    BudgetAmount,
    LedgerEntry,
    ScopedAccountant,
)
from privot.privacy.ledger import Ledger, LedgerAccountant
from privot.privacy.types import Neighbouring, PrivacyCost, check_spender

__all__ = ["BudgetAmount", "LedgerEntry", "PrivacyAccountant", "RELATIVE_TOLERANCE",
           "COMPOSITIONS", "TaggedSpender", "check_spender", "ensure_affordable"]


class PrivacyAccountant(ScopedAccountant):
    r"""A privacy budget with a ledger, hierarchical scopes and atomic refusal.

    Parameters
    ----------
    total_epsilon : float
        The total epsilon, > 0.
    total_delta : float, default 0.0
        The total delta, in [0, 1).
    name : str, default "root"
        Shown in reports and in each entry's scope path.
    composition : {"basic", "gdp"}, default "basic"
        How the ledger is composed to check the total.

        ``"basic"``: :math:`(\sum\varepsilon_i, \sum\delta_i)` (Dwork and Roth 2014,
        Thm 3.16): valid for every mechanism, adaptive or not.

        ``"gdp"``: entries that carry a GDP ``mu`` are composed exactly,
        :math:`\mu = \sqrt{\sum\mu_i^2}` (Dong, Roth and Su, Cor. 3.3), and converted
        to :math:`(\varepsilon_G, \delta_G)` with :math:`\delta_G` = the delta left
        after the other entries; the rest is composed basically and the two parts are
        added. Whichever of this and basic composition gives the smaller epsilon is
        used (both are valid bounds).

    Notes
    -----
    A charge is accepted when the composed spending satisfies
    ``spent <= total * (1 + RELATIVE_TOLERANCE)`` for epsilon and for delta.

    Privacy
    -------
    The accountant adds no noise. Its guarantee is the composition theorem named above
    applied to the recorded costs; it assumes all costs are stated for the same unit
    of privacy and relation (each entry records its relation; ``explain`` lists them).
    """

    @staticmethod
    def open(path: Any, *, capability: str = "api", unit: str | None = None,
             relation: Any = None, convert: bool = False,
             output: str | None = None) -> LedgerAccountant:
        """The accountant of a budget ledger file (:mod:`privot.privacy.ledger`).

        Every ``spend`` is one atomic charge of the file, composed with everything
        charged to it before, by any process. Create the file first
        (``privot budget init`` or :meth:`privot.privacy.ledger.Ledger.create`).

        Returns
        -------
        privot.privacy.ledger.LedgerAccountant
        """
        return Ledger.open(path).accountant(capability=capability, unit=unit,
                                            relation=relation, convert=convert, output=output)

    def _new_scope(self, epsilon: float, delta: float, name: str) -> PrivacyAccountant:
        # scopes of a PrivacyAccountant are PrivacyAccountants (as before the split)
        return PrivacyAccountant(epsilon, delta, name=name, composition=self._composition)


# -- helpers for releases made of several charged pieces -------------------------------


class TaggedSpender:
    """Forwards charges to an accountant, adding fixed tags to each ledger entry
    (e.g. the release and the level of a hierarchical mechanism)."""

    def __init__(self, accountant: Any, tags: Mapping[str, Any]) -> None:
        self._accountant = accountant
        self._tags = dict(tags)

    def spend(self, cost: PrivacyCost, *, mechanism: str,
              relation: Neighbouring = Neighbouring.ADD_REMOVE,
              params: Mapping[str, Any] | None = None) -> Any:
        merged = {**self._tags, **dict(params or {})}
        return self._accountant.spend(cost, mechanism=mechanism, relation=relation,
                                      params=merged)


def ensure_affordable(accountant: Any, total: float, what: str) -> None:
    """Refuse up front, before any noise, when a release of ``total`` epsilon does not fit.

    Releases charged piece by piece (one charge per level) would otherwise draw noise,
    and spend budget, for the first pieces of a release that is then abandoned.
    Accountants without ``can_spend`` are charged piece by piece only.
    """
    if accountant is None or not hasattr(accountant, "can_spend"):
        return
    if not accountant.can_spend(PrivacyCost(total)):
        rem = getattr(accountant, "remaining", None)
        raise BudgetExceededError(
            f"{what} needs eps={total:.6g} in all but the accountant has {rem} left; "
            "nothing was charged and no noise was drawn")
