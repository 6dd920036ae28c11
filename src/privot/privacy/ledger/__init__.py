r"""One privacy budget per data set, across runs and capabilities: the budget ledger.

A ledger is one SQLite file (the standard library's ``sqlite3``: transactions, durable,
one file the curator keeps next to the data) holding a data set's total
``(epsilon, delta)``, its unit of privacy and neighbouring relation, and every release
charged to it: capability, mechanism, parameters, the event that ran
(:mod:`privot.privacy.events`), time and output folder.

Charging is check-and-record inside one write transaction (``BEGIN IMMEDIATE``), so two
processes charging the same file at once can never both pass the limit, and a charge
is committed before any noise is drawn. :meth:`Ledger.release` charges a whole release
up front ("pending"), hands the release an in-memory accountant of exactly that budget,
and afterwards records what actually ran ("released") or that it failed after drawing
noise ("failed"; the charge stands); a release that stopped before any noise is
cancelled (:meth:`Ledger.cancel`: it counts as nothing). A process killed in between
leaves the charge "pending": spent, never half written.

Composition (derivations in ``docs/privacy/budget.md``):

* ``filter="hybrid"`` (default when delta > 0): two filters side by side on one split of
  delta fixed at creation, the smaller enforced: basic composition of the (eps, delta)
  pairs the releases prove, their deltas within a reserve (half of delta by default),
  and the Renyi filter below with the rest of delta. A release proving (eps, delta),
  delta within the reserve, is charged eps on an empty ledger;
* ``filter="rdp"`` (the rule before, kept for comparison): a Renyi filter over a fixed
  grid of orders (Feldman and Zrnic 2021, Thm 3.1, at each order; a union bound over the
  orders; the order infinity is the pure-DP sum);
* ``filter="basic"``: sums of epsilons and deltas (Rogers et al. 2016's basic filter);
* all three are valid when each release and its parameters are chosen after seeing
  earlier answers (fully adaptive use);
* reported beside them: the privacy-loss-distribution composition (dp-accounting), the
  tight figure when the sequence of releases was fixed in advance; natural PLD filters
  are not valid under adaptive parameter choice, so it is shown, never enforced.

Units and relations must agree; :func:`conversion_factor` lists the documented
conversions a charge can ask for explicitly (``convert=True``).

Modules (one job each; import everything from ``privot.privacy.ledger``):

* ``_ledger`` -- :class:`Ledger`: validation, charging, release lifecycle, delegation;
* ``_store`` -- the SQLite file: schema, transactions, rows and running sums;
* ``_filters`` -- the hybrid, Renyi and basic filters (what a charge records, whether
  it fits);
* ``_relations`` -- units, relations and :func:`conversion_factor`;
* ``_planning`` -- :meth:`Ledger.plan`, :meth:`Ledger.preview`, :func:`split_budget`;
* ``_report`` -- :meth:`Ledger.status`, :meth:`Ledger.report`, the spending curve and
  :func:`pld_epsilon`;
* ``_accountants`` -- :class:`LedgerAccountant` and the accountant of one release;
* ``_records`` -- :class:`LedgerRelease`, :class:`ChargePreview`, :class:`BudgetStatus`.

The figure is :mod:`privot.privacy.ledger_plot` (matplotlib, imported when asked).

Privacy
-------
The ledger adds no noise. Unit and relation: the ledger's, stated at creation; every
event is recorded under them (converted by group privacy where the caller asked).
Guarantee: everything released through the ledger is, jointly, ``(epsilon, delta)``-DP
for the ledger's unit and relation, under the filter named in the file.
"""


from privot.privacy.ledger._accountants import LedgerAccountant
from privot.privacy.ledger._filters import (
    FILTERS,
    HYBRID_APPROX_FRACTION,
    ORDERS,
    RELATIVE_TOLERANCE,
    VIEWS,
)

# its name before the split, still read by benchmarks/bench_ledger_filters.py
from privot.privacy.ledger._filters import conversion_offset as _conversion_offset  # noqa: F401
from privot.privacy.ledger._ledger import Ledger
from privot.privacy.ledger._planning import split_budget
from privot.privacy.ledger._records import (
    LEDGER_ENV,
    STATUSES,
    BudgetStatus,
    ChargePreview,
    LedgerRelease,
)
from privot.privacy.ledger._relations import RELATIONS, UNITS, accepting_ledgers, conversion_factor
from privot.privacy.ledger._report import pld_epsilon

__all__ = ["BudgetStatus", "ChargePreview", "FILTERS", "HYBRID_APPROX_FRACTION", "LEDGER_ENV",
           "Ledger", "LedgerAccountant", "LedgerRelease", "ORDERS", "RELATIONS",
           "RELATIVE_TOLERANCE", "STATUSES", "UNITS", "VIEWS", "accepting_ledgers",
           "conversion_factor", "pld_epsilon", "split_budget"]
