"""Tests of privot.privacy.budget: ledger, atomic refusal, scopes, reports."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privot.errors import BudgetExceededError, InvalidParameterError
from privot.privacy.accounting import gdp_compose, gdp_to_epsilon
from privot.privacy.budget import RELATIVE_TOLERANCE, PrivacyAccountant
from privot.privacy.types import Neighbouring, PrivacyCost, Spender


def test_is_a_spender_and_records_entries():
    acct = PrivacyAccountant(1.0, 1e-5, name="study")
    spender: Spender = acct
    entry = spender.spend(PrivacyCost(0.3, 1e-6), mechanism="gaussian",
                          relation=Neighbouring.REPLACE_ONE, params={"sigma": 2.0})
    assert entry.order == 0 and entry.scope == ("study",)
    assert entry.relation is Neighbouring.REPLACE_ONE and entry.params == {"sigma": 2.0}
    assert acct.spent.epsilon == pytest.approx(0.3)
    assert acct.remaining.epsilon == pytest.approx(0.7)
    assert acct.remaining.delta == pytest.approx(9e-6)
    assert len(acct.ledger) == 1


def test_refusal_is_atomic_and_message_is_informative():
    acct = PrivacyAccountant(1.0, name="study")
    acct.spend(PrivacyCost(0.75), mechanism="laplace")
    with pytest.raises(BudgetExceededError) as info:
        acct.spend(PrivacyCost(0.5), mechanism="histogram")
    msg = str(info.value)
    assert "histogram" in msg and "eps=0.5" in msg  # what was asked
    assert "spent eps=0.75" in msg and "remaining eps=0.25" in msg
    assert len(acct.ledger) == 1 and acct.spent.epsilon == pytest.approx(0.75)
    # delta is enforced too: a pure-DP total refuses any delta
    with pytest.raises(BudgetExceededError, match="delta"):
        acct.spend(PrivacyCost(0.1, 1e-9), mechanism="gaussian")
    assert not acct.can_spend(PrivacyCost(0.3)) and acct.can_spend(PrivacyCost(0.25))


def test_tolerance_accepts_rounding_but_not_more():
    acct = PrivacyAccountant(1.0)
    for _ in range(10):
        acct.spend(PrivacyCost(0.1), mechanism="laplace")  # 0.1 * 10 != 1.0 in floats
    with pytest.raises(BudgetExceededError):
        acct.spend(PrivacyCost(1e-9), mechanism="laplace")
    acct2 = PrivacyAccountant(1.0)
    with pytest.raises(BudgetExceededError):
        acct2.spend(PrivacyCost(1.0 + 10 * RELATIVE_TOLERANCE), mechanism="laplace")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(min_value=1e-4, max_value=0.5), min_size=1, max_size=30))
def test_never_overspends(charges):
    acct = PrivacyAccountant(1.0)
    for c in charges:
        try:
            acct.spend(PrivacyCost(c), mechanism="m")
        except BudgetExceededError:
            pass
    assert acct.spent.epsilon <= 1.0 * (1 + RELATIVE_TOLERANCE)
    assert acct.spent.epsilon == pytest.approx(math.fsum(e.cost.epsilon for e in acct.ledger))


def test_scope_arithmetic_and_propagation():
    acct = PrivacyAccountant(2.0, 1e-5, name="root")
    with acct.scope("heatmap", fraction=0.5) as sub:
        assert sub.total.epsilon == pytest.approx(1.0)
        assert sub.total.delta == pytest.approx(5e-6)
        sub.spend(PrivacyCost(0.4), mechanism="laplace")
        with pytest.raises(BudgetExceededError, match="root/heatmap"):
            sub.spend(PrivacyCost(0.7), mechanism="laplace")  # over the child's share
    assert acct.spent.epsilon == pytest.approx(0.4)
    assert acct.ledger[0].scope == ("root", "heatmap")
    parts = acct.split({"a": 1, "b": 3})  # shares of the 1.6 remaining
    assert parts["a"].total.epsilon == pytest.approx(0.4)
    assert parts["b"].total.epsilon == pytest.approx(1.2)
    parts["b"].spend(PrivacyCost(1.2), mechanism="gaussian")
    assert acct.remaining.epsilon == pytest.approx(0.4)
    assert [e.mechanism for e in parts["b"].ledger] == ["gaussian"]
    assert len(acct.ledger) == 2


def test_parent_limit_binds_children():
    acct = PrivacyAccountant(1.0)
    with acct.scope("a", fraction=1.0) as a:
        acct.spend(PrivacyCost(0.8), mechanism="direct")
        with pytest.raises(BudgetExceededError, match="charged via"):
            a.spend(PrivacyCost(0.5), mechanism="child")
        assert a.remaining.epsilon == pytest.approx(0.2)
        assert len(a.ledger) == 0


@pytest.mark.parametrize("bad", [{}, {"a": 0}, {"a": -1.0}, {"a/b": 1.0}])
def test_split_validation(bad):
    with pytest.raises(InvalidParameterError):
        PrivacyAccountant(1.0).split(bad)


def test_scope_validation():
    acct = PrivacyAccountant(1.0)
    with acct.scope("x", fraction=0.5):
        pass
    with pytest.raises(InvalidParameterError, match="name"), acct.scope("x", fraction=0.1):
        pass
    with pytest.raises(InvalidParameterError, match="fraction"), acct.scope("y", fraction=0):
        pass


@pytest.mark.parametrize("kwargs, name", [
    (dict(total_epsilon=0.0), "total_epsilon"),
    (dict(total_epsilon=1.0, total_delta=1.0), "total_delta"),
    (dict(total_epsilon=1.0, composition="rdp"), "composition"),
    (dict(total_epsilon=1.0, name=""), "name"),
])
def test_constructor_validation(kwargs, name):
    with pytest.raises(InvalidParameterError, match=name):
        PrivacyAccountant(**kwargs)


def test_spend_validation():
    acct = PrivacyAccountant(1.0)
    with pytest.raises(InvalidParameterError, match="cost"):
        acct.spend(0.1, mechanism="m")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="mechanism"):
        acct.spend(PrivacyCost(0.1), mechanism="")
    with pytest.raises(InvalidParameterError, match="relation"):
        acct.spend(PrivacyCost(0.1), mechanism="m", relation="sideways")  # type: ignore
    assert acct.spend(PrivacyCost(0.1), mechanism="m", relation="replace-one").relation is \
        Neighbouring.REPLACE_ONE  # type: ignore[arg-type]


def test_gdp_composition_is_tighter_and_exact():
    mus = [0.3] * 16
    basic = PrivacyAccountant(100.0, 1e-5)
    gdp = PrivacyAccountant(100.0, 1e-5, composition="gdp")
    for m in mus:
        cost = PrivacyCost(gdp_to_epsilon(m, 1e-5 / 16), 1e-5 / 16, mu=m)
        basic.spend(cost, mechanism="gaussian")
        gdp.spend(cost, mechanism="gaussian")
    expected = gdp_to_epsilon(gdp_compose(mus), 1e-5)
    assert gdp.spent.epsilon == pytest.approx(expected, rel=1e-9)
    assert gdp.spent.epsilon < basic.spent.epsilon / 2
    # GDP mode lets a mu-only cost in when delta > 0 ...
    gdp.spend(PrivacyCost(math.inf, 0.0, mu=0.5), mechanism="gaussian")
    # ... but basic mode cannot compose an infinite epsilon
    with pytest.raises(BudgetExceededError):
        basic.spend(PrivacyCost(math.inf, 0.0, mu=0.5), mechanism="gaussian")


def test_explain_and_json():
    acct = PrivacyAccountant(1.0, 1e-6, name="study")
    with acct.scope("heatmap", fraction=0.5) as sub:
        sub.spend(PrivacyCost(0.25), mechanism="laplace", params={"scale": 4.0})
    acct.spend(PrivacyCost(0.125, 1e-7), mechanism="gaussian",
               relation=Neighbouring.REPLACE_ONE)
    text = acct.explain()
    for needle in ["study/heatmap", "laplace", "gaussian", "scale=4.0", "remaining",
                   "eps=0.375", "eps=0.625", "replace-one", "basic composition",
                   "several relations"]:
        assert needle in text, needle
    data = json.loads(acct.to_json())
    assert data["spent"]["epsilon"] == pytest.approx(0.375)
    assert [e["scope"] for e in data["ledger"]] == ["study/heatmap", "study"]
    assert data["children"][0]["name"] == "heatmap"
    assert data["children"][0]["total"]["epsilon"] == pytest.approx(0.5)
    assert "(empty)" in PrivacyAccountant(1.0).explain()
