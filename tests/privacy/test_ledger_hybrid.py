"""The hybrid filter of the budget ledger (issue 24, item 1).

A release that proves (eps, delta) is charged at most eps on an empty ledger (delta
within the reserve); over a sequence the ledger reads the smaller of the basic route
(sums, every delta in the reserve) and the Renyi filter with the rest of delta, never
below the PLD figure of the fixed sequence; refusals are exact; each row says how it is
counted and why; old files still open. Proof: ``docs/privacy/budget.md``, "The hybrid
filter". The oracles below are written out independently of the ledger's code.
"""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pytest

from privot.errors import BudgetExceededError, InvalidParameterError
from privot.privacy import accounting
from privot.privacy.events import (
    ApproxEvent,
    GaussianEvent,
    PureEvent,
    SubsampledGaussianEvent,
    rr_rdp,
)
from privot.privacy.ledger import HYBRID_APPROX_FRACTION, ORDERS, Ledger, pld_epsilon

#: A DP-SGD run as ``privot learn`` makes it by default (batch fraction 0.2, 20 epochs:
#: 100 fixed-size steps), its noise calibrated by privot's PLD accountant to (1, 1e-6):
#: ``calibrate_noise_multiplier(1.0, 1e-6, steps=100, sampling_rate=0.2,
#: accountant="pld", sampling="fixed-size")``.
SIGMA_Q02, EPS_Q02 = 8.793066856728439, 0.9999603104899227


def _dpsgd(delta: float = 1e-6) -> SubsampledGaussianEvent:
    return SubsampledGaussianEvent(SIGMA_Q02, 0.2, 100, "fixed-size", EPS_Q02, delta)


def _renyi(events, delta_conv: float) -> tuple[float, float]:
    """The Renyi filter over ``events`` (their curves summed) converting with
    ``delta_conv`` over the grid (Canonne, Kamath and Steinke 2020, Prop. 12, delta split
    evenly), or the pure sum; and the order giving it (inf: the pure sum)."""
    a = np.asarray(ORDERS)
    s = np.sum([e.rdp(a) for e in events], axis=0)
    inf = sum(p.epsilon for e in events for p in e.parts()) \
        if all(p.kind == "pure" for e in events for p in e.parts()) else math.inf
    finite = s + (math.log(len(ORDERS) / delta_conv) - np.log(a)) / (a - 1) \
        + np.log((a - 1) / a)
    i = int(np.argmin(finite))
    return (inf, math.inf) if inf <= finite[i] else (float(finite[i]), float(a[i]))


def _ledger(tmp_path, name, **kw) -> Ledger:
    kw.setdefault("unit", "row")
    kw.setdefault("relation", "replace-one")
    return Ledger.create(tmp_path / f"{name}.ledger", **kw)


def _charge(ledger: Ledger, event, **kw):
    return ledger.charge(event, capability="test", mechanism=event.kind, **kw)


# ---------------------------------------------------------------------------------------
# a. An empty ledger charges a release what it proves
# ---------------------------------------------------------------------------------------


def test_a_dpsgd_run_proving_1_1e6_is_charged_1_on_a_fresh_1_1e5_ledger(tmp_path):
    """The issue's case: ``privot learn --epsilon 1 --delta 1e-6`` on a fresh row-level
    replace-one ledger of total (1, 1e-5) was refused ("the Renyi filter would reach
    eps=2.34506")."""
    ev = _dpsgd()
    # the pair is proved: privot's PLD (pessimistic) reads at most 1 at delta 1e-6
    assert pld_epsilon([ev], 1e-6) <= 1.0 + 1e-3
    ledger = _ledger(tmp_path, "learn", epsilon=1.0, delta=1e-5)
    assert ledger.filter == "hybrid"
    assert ledger.spec["approx_delta"] == pytest.approx(HYBRID_APPROX_FRACTION * 1e-5)
    row = _charge(ledger, ev)
    st = ledger.status(pld=False)
    assert st.spent_epsilon == pytest.approx(EPS_Q02, rel=1e-12)
    assert st.spent_epsilon <= 1.0 * (1 + 1e-12)
    assert st.route == "basic" and row.view == "basic"
    assert st.approx_delta == (pytest.approx(1e-6), pytest.approx(5e-6))
    # the Renyi filter alone would have refused it, and still does on an rdp ledger
    assert _renyi([ev], 1e-5)[0] > 2.3
    old = _ledger(tmp_path, "old", epsilon=1.0, delta=1e-5, filter="rdp")
    with pytest.raises(BudgetExceededError, match="Renyi filter would reach eps=2.34"):
        _charge(old, ev)


@pytest.mark.parametrize("event", [
    GaussianEvent(1.1935185871580183, 4.0, 1e-6),   # the demo's MNIST subspace release
    ApproxEvent(0.7, 1e-6, "shuffle"),
    _dpsgd(4e-6),
], ids=["gaussian", "approx", "dpsgd"])
def test_any_release_is_charged_its_own_epsilon_on_an_empty_ledger(tmp_path, event):
    eps, delta = event.basic()
    ledger = _ledger(tmp_path, "one", epsilon=eps, delta=1e-5)  # exactly its epsilon
    _charge(ledger, event)
    assert ledger.status(pld=False).spent_epsilon <= eps * (1 + 1e-12)
    assert ledger.status(pld=False).remaining_epsilon == pytest.approx(0.0, abs=1e-12)


# ---------------------------------------------------------------------------------------
# b. Over sequences: the smaller of the two routes, never below PLD
# ---------------------------------------------------------------------------------------

#: The pair a sigma = 20 Gaussian states (the bench's heatmap + Gaussian mixture): on its
#: curve, so the basic route adds a proved pair (3.0 -> 1.61 at 1e-7 likewise, above 1.6077)
G_EPS = accounting.gdp_to_epsilon(1 / 20, 1e-8)
SEQUENCES = {
    "3 dp-sgd": [_dpsgd()] * 3,
    "10 dp-sgd (the basic route closes after 5)": [_dpsgd()] * 10,
    "pure 100 x 0.05, then 20 gaussians": [PureEvent(0.05)] * 100
    + [GaussianEvent(20.0, G_EPS, 1e-8)] * 20,
    "20 gaussians, then pure 100 x 0.05": [GaussianEvent(20.0, G_EPS, 1e-8)] * 20
    + [PureEvent(0.05)] * 100,
    "gaussian + pure (the demo's MNIST ledger)": [
        GaussianEvent(1.1935185871580183, 4.0, 1e-6), PureEvent(4.0)],
    "pure 10 x 0.1": [PureEvent(0.1)] * 10,
    "mixed": [PureEvent(0.3), _dpsgd(), GaussianEvent(3.0, 1.61, 1e-7), _dpsgd(),
              PureEvent(0.2)],
}


def test_sequences_read_the_smaller_route_and_never_below_pld(tmp_path):
    delta_t = 1e-5
    reserve = HYBRID_APPROX_FRACTION * delta_t
    for i, (name, events) in enumerate(SEQUENCES.items()):
        ledger = _ledger(tmp_path, f"s{i}", epsilon=1e6, delta=delta_t)
        for ev in events:
            _charge(ledger, ev)
        st = ledger.status(pld=False)
        b_eps = math.fsum(e.basic()[0] for e in events)
        b_dlt = math.fsum(e.basic()[1] for e in events)
        basic_route = b_eps if b_dlt <= reserve * (1 + 1e-12) else math.inf
        renyi_split, _ = _renyi(events, delta_t - reserve)
        renyi_alone, order = _renyi(events, delta_t)
        # exactly the smaller of the basic route and the Renyi filter on the split
        assert st.spent_epsilon == pytest.approx(min(basic_route, renyi_split),
                                                 rel=1e-12), name
        assert st.spent_epsilon <= min(basic_route, renyi_split) * (1 + 1e-12), name
        # never looser than basic composition whenever the deltas fit in the reserve
        if b_dlt <= reserve:
            assert st.spent_epsilon <= b_eps * (1 + 1e-12), name
        # against the Renyi filter alone (all of delta converting): at most the cost of
        # the split at its best order, log(delta_t / delta_r) / (alpha - 1)
        split_cost = 0.0 if order == math.inf else math.log(2.0) / (order - 1)
        assert st.spent_epsilon <= renyi_alone + split_cost + 1e-12, name
        # the comparison figure the ledger reports is that Renyi filter alone
        assert ledger.status().renyi_epsilon == pytest.approx(renyi_alone, rel=1e-12), name
        # sanity: never below the tight figure of the fixed sequence
        assert st.spent_epsilon >= ledger.status().pld_epsilon - 1e-3, name
        # every row says how it is counted, and the running sums match the rows
        rows = ledger.releases()
        assert all(r.view in ("basic", "renyi") and r.view_reason for r in rows), name
        again = ledger.recomputed_state()
        assert again["approx"] == pytest.approx(st.approx_delta[0], rel=1e-9, abs=1e-30)
        curve = ledger.spending_curve()
        assert curve["filter"][-1] == pytest.approx(st.spent_epsilon, rel=1e-12), name
        assert curve["renyi"][-1] == pytest.approx(renyi_alone, rel=1e-12), name


def test_the_basic_route_closes_for_good_when_a_delta_does_not_fit(tmp_path):
    ledger = _ledger(tmp_path, "close", epsilon=1e6, delta=1e-5)  # reserve 5e-6
    views = [_charge(ledger, _dpsgd(2e-6)).view for _ in range(2)]
    assert views == ["basic", "basic"]
    third = _charge(ledger, _dpsgd(2e-6))  # 6e-6 > 5e-6: Renyi curve only
    assert third.view == "renyi" and "past the 5e-06 set aside" in third.view_reason
    assert ledger.status(pld=False).route == "renyi"
    # later releases, even pure ones that would fit, stay out of the closed route
    assert _charge(ledger, PureEvent(0.1)).view == "renyi"
    assert ledger.status(pld=False).approx_delta[0] == pytest.approx(4e-6)


# ---------------------------------------------------------------------------------------
# c. Exact refusal boundaries
# ---------------------------------------------------------------------------------------


def test_refusal_boundary_is_exact(tmp_path):
    ev = _dpsgd()
    ok = _ledger(tmp_path, "ok", epsilon=EPS_Q02, delta=1e-5)
    _charge(ok, ev)  # exactly its epsilon: accepted
    with pytest.raises(BudgetExceededError, match="nothing was recorded"):
        _charge(ok, PureEvent(1e-9))  # anything more: refused
    short = _ledger(tmp_path, "short", epsilon=EPS_Q02 * (1 - 1e-9), delta=1e-5)
    with pytest.raises(BudgetExceededError) as info:
        _charge(short, ev)
    msg = str(info.value)
    assert "hybrid filter would reach" in msg and "basic route" in msg
    assert "Renyi filter 2." in msg
    assert short.releases() == [] and short.status(pld=False).spent_epsilon == 0.0
    # the reserve boundary: exactly its delta is enough, a hair less is not (the Renyi
    # filter alone reads 2.3 > 1)
    fits = _ledger(tmp_path, "fits", epsilon=1.0, delta=1e-5, approx_delta=0.1)
    assert _charge(fits, ev).view == "basic"
    tight = _ledger(tmp_path, "tight", epsilon=1.0, delta=1e-5,
                    approx_delta=0.1 * (1 - 1e-9))
    with pytest.raises(BudgetExceededError, match="past the 1e-06 set aside"):
        _charge(tight, ev)
    assert tight.releases() == []
    # and the sum: pure 0.5 then the run fits a total of 0.5 + eps, not a hair less
    total = 0.5 + EPS_Q02
    seq = _ledger(tmp_path, "seq", epsilon=total, delta=1e-5)
    _charge(seq, PureEvent(0.5))
    _charge(seq, ev)
    assert seq.status(pld=False).spent_epsilon == pytest.approx(total, rel=1e-12)
    seq2 = _ledger(tmp_path, "seq2", epsilon=total * (1 - 1e-9), delta=1e-5)
    _charge(seq2, PureEvent(0.5))
    with pytest.raises(BudgetExceededError):
        _charge(seq2, ev)


def test_can_spend_agrees_with_charge(tmp_path):
    from privot.privacy.types import PrivacyCost

    cost = PrivacyCost(EPS_Q02, 1e-6, event=_dpsgd())
    yes = _ledger(tmp_path, "yes", epsilon=1.0, delta=1e-5)
    assert yes.accountant().can_spend(cost)
    no = _ledger(tmp_path, "no", epsilon=1.0, delta=1e-5, filter="rdp")
    assert not no.accountant().can_spend(cost)


# ---------------------------------------------------------------------------------------
# d. What is shown is what is enforced; files
# ---------------------------------------------------------------------------------------


def test_report_shows_each_row_route_and_the_comparison(tmp_path):
    ledger = _ledger(tmp_path, "rep", epsilon=6.0, delta=1e-8)
    for _ in range(3):
        _charge(ledger, _dpsgd(1.1e-9))
    text = ledger.report()
    assert "hybrid filter" in text and "the basic route" in text
    assert text.count("(eps, delta) in the basic route") == 3
    assert "Renyi only: eps=" in text
    st = ledger.status()
    assert st.spent_epsilon == pytest.approx(3 * EPS_Q02, rel=1e-12)
    assert st.renyi_epsilon > 3.9  # the rule before read 4.03 on the demo's runs
    assert st.by_view == {"basic": 3}
    stored = json.loads(sqlite3.connect(ledger.path).execute(
        "SELECT rdp FROM releases WHERE id = 1").fetchone()[0])
    assert stored["view"] == "basic" and "basic route reads eps" in stored["why"]
    assert json.dumps(st.to_dict())  # JSON-friendly
    # every row records its Renyi curve (randomised response's for a pure release)
    pure = _charge(ledger, PureEvent(0.7))
    rec = json.loads(sqlite3.connect(ledger.path).execute(
        "SELECT rdp FROM releases WHERE id = ?", (pure.id,)).fetchone()[0])
    np.testing.assert_allclose(rec["finite"], rr_rdp(0.7, np.asarray(ORDERS)), rtol=1e-12)
    assert rec["inf"] == 0.7 and rec["view"] == "basic"


def test_files_of_version_1_still_open_and_charge(tmp_path):
    path = tmp_path / "v1.ledger"
    made = Ledger.create(path, epsilon=3.0, delta=1e-6, filter="rdp")
    _charge(made, PureEvent(0.5))
    con = sqlite3.connect(path)
    con.execute("UPDATE spec SET value = ? WHERE key = 'version'", (json.dumps("1"),))
    con.commit()
    con.close()
    old = Ledger.open(path)
    assert old.spec["version"] == "1" and old.filter == "rdp"
    _charge(old, GaussianEvent(20.0, G_EPS, 1e-8))
    assert [r.view for r in old.releases()] == [None, None]
    assert old.status(pld=False).spent_epsilon == pytest.approx(
        _renyi([PureEvent(0.5), GaussianEvent(20.0, G_EPS, 1e-8)], 1e-6)[0], rel=1e-12)
    con = sqlite3.connect(path)
    con.execute("UPDATE spec SET value = ? WHERE key = 'version'", (json.dumps("9"),))
    con.commit()
    con.close()
    with pytest.raises(InvalidParameterError, match="version 1 or 2"):
        Ledger.open(path)


def test_create_validates_the_filter_and_the_reserve(tmp_path):
    with pytest.raises(InvalidParameterError, match="filter"):
        Ledger.create(tmp_path / "a.ledger", epsilon=1.0, filter="hybrid")  # delta 0
    assert Ledger.create(tmp_path / "b.ledger", epsilon=1.0).filter == "basic"
    assert Ledger.create(tmp_path / "e.ledger", epsilon=1.0, delta=1e-6).filter == "hybrid"
    rdp = Ledger.create(tmp_path / "c.ledger", epsilon=1.0, delta=1e-6, filter="rdp")
    assert rdp.spec["approx_delta"] == 0.0  # the rule before: no reserve by default
    hyb = Ledger.create(tmp_path / "d.ledger", epsilon=1.0, delta=1e-6, approx_delta=0.0)
    with pytest.raises(BudgetExceededError):  # no reserve: the Renyi filter alone
        _charge(hyb, _dpsgd())


def test_a_row_that_ran_keeps_its_route(tmp_path):
    """The filter rule's ``rerecord`` (what :meth:`Ledger.finish` should record for a row
    that ran): the route chosen before the release stays."""
    ledger = _ledger(tmp_path, "ran", epsilon=5.0, delta=1e-5)
    row = _charge(ledger, GaussianEvent(2.0, 2.5, 1e-6), status="pending")
    con = sqlite3.connect(ledger.path)
    old_rec = json.loads(con.execute("SELECT rdp FROM releases WHERE id = ?",
                                     (row.id,)).fetchone()[0])
    con.close()
    rec, apx = ledger._rule.rerecord(GaussianEvent(2.5, 2.0, 5e-7), old_rec)  # noqa: SLF001
    assert rec["view"] == "basic" and apx == 5e-7 and rec["why"] == old_rec["why"]
    np.testing.assert_allclose(rec["finite"], np.asarray(ORDERS) / (2 * 2.5 ** 2))


def test_release_keeps_a_basic_route_row_in_the_route(tmp_path):
    from privot.privacy.types import PrivacyCost

    ledger = _ledger(tmp_path, "rel", epsilon=5.0, delta=1e-5)
    hold = GaussianEvent(2.0, 2.5, 1e-6)
    with ledger.release(hold, capability="test", mechanism="gauss") as acct:
        acct.spend(PrivacyCost(2.5, 1e-6, mu=0.5, event=hold), mechanism="gauss")
    assert ledger.releases()[0].view == "basic"
    assert ledger.status(pld=False).route == "basic"
    assert ledger.status(pld=False).spent_epsilon == pytest.approx(2.5)
