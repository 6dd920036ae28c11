"""Issue 8 on the barycenter library: one rule for unusable rows, refusals before any
charge, curator-only warnings, and the publishable part of a result."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from privot.barycenters import PublicBounds, private_barycenter
from privot.barycenters.coresets import coreset_from_leaf_counts, private_coreset
from privot.errors import DataWarning, InvalidDataError, InvalidParameterError
from privot.privacy import PrivacyAccountant

BOX = PublicBounds.box([0.0, 0.0], [1.0, 1.0])


def _group(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.1, 0.9, size=(n, 2))


def _keys(tree) -> list[str]:
    if isinstance(tree, dict):
        return [str(k) for k in tree] + [k for v in tree.values() for k in _keys(v)]
    if isinstance(tree, list):
        return [k for v in tree for k in _keys(v)]
    return []


def test_unusable_rows_keep_the_public_size_and_change_one_count():
    """A NaN row is in no leaf and in n: replacing a usable row by an unusable one moves
    at most one unit of count per level, as a replacement does."""
    x = _group(400)
    y = x.copy()
    y[7] = np.nan
    a = private_coreset(x, bounds=BOX, epsilon=1.0, depth=6, rng=3)
    b = private_coreset(y, bounds=BOX, epsilon=1.0, depth=6, rng=3)
    assert a.n == b.n == 400  # the public size is the row count
    assert a.leaf_counts.sum() == b.leaf_counts.sum() == 400  # consistency spreads n


def test_leaf_counts_accept_unusable_rows_but_not_more_points_than_rows():
    coreset_from_leaf_counts(np.array([0, 1]), np.array([3, 4]), 9, bounds=BOX,
                             epsilon=1.0, depth=1, rng=0)
    with pytest.raises(InvalidDataError, match="at least the number of points"):
        coreset_from_leaf_counts(np.array([0, 1]), np.array([3, 4]), 6, bounds=BOX,
                                 epsilon=1.0, depth=1, rng=0)


@pytest.mark.parametrize("method,delta,kw", [("coreset", None, {}),
                                             ("perturbation", 1e-5, {}),
                                             ("perturbation", 1e-5, {"step": "anchored"})])
def test_a_group_with_no_usable_row_is_refused_before_any_charge(method, delta, kw):
    acct = PrivacyAccountant(total_epsilon=10.0, total_delta=1e-3)
    nan = np.full((50, 2), np.nan)
    with pytest.raises(InvalidDataError, match="no usable row"):
        private_barycenter([_group(50), nan], bounds=BOX, m=2, epsilon=1.0, delta=delta,
                           method=method, accountant=acct, rng=0, **kw)
    assert acct.spent.epsilon == 0.0


def test_every_row_clipped_is_refused_with_the_swap_hint():
    """Latitude/longitude swapped: every row lies outside the box, so every row would be
    clipped into one corner; refused (nothing charged) with a hint naming the swap."""
    bounds = PublicBounds.box([-125.0, 24.0], [-66.0, 50.0])  # lon, lat
    rng = np.random.default_rng(1)
    lonlat = np.column_stack([rng.uniform(-120, -70, 300), rng.uniform(30, 45, 300)])
    acct = PrivacyAccountant(total_epsilon=10.0)
    with pytest.raises(InvalidDataError, match="look swapped"):
        private_barycenter(lonlat[:, ::-1], bounds=bounds, m=4, epsilon=1.0,
                           accountant=acct, rng=0)
    assert acct.spent.epsilon == 0.0
    private_barycenter(lonlat, bounds=bounds, m=4, epsilon=1.0, rng=0)  # the right order


def test_most_rows_clipped_or_unusable_is_a_data_warning():
    x = _group(400)
    x[:150] += 5.0  # clipped
    x[150:260] = np.nan  # unusable
    with pytest.warns(DataWarning, match="most rows"):
        res = private_barycenter(x, bounds=BOX, m=4, epsilon=1.0, rng=0)
    assert res.n_clipped == (150,) and res.n_unusable == (110,)
    assert res.params["group_sizes"] == [400]


def test_no_data_warning_on_clean_data():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        private_barycenter(_group(300), bounds=BOX, m=4, epsilon=1.0, rng=0)


def test_release_dict_is_publishable_and_curator_report_holds_the_counts():
    x = _group(300)
    x[0] = [4.0, 4.0]
    x[1] = np.nan
    res = private_barycenter(x, bounds=BOX, m=4, epsilon=1.0, rng=0)
    keys = " ".join(_keys(res.release_dict()))
    for word in ("seconds", "clipped", "unusable", "curator", "diagnostics"):
        assert word not in keys
    json.dumps(res.release_dict())  # JSON-ready as it is
    assert "group labels" in res.release_dict()["privacy"]["public_by_assumption"]
    cur = res.curator_report()
    assert cur["rows_clipped_per_group"] == [1] and cur["rows_unusable_per_group"] == [1]
    assert "seconds_total" in cur["diagnostics"]
    both = res.to_dict(curator=True)
    assert set(both) == {"release", "curator_only"}


@pytest.mark.parametrize("kw", [{}, {"step": "anchored", "splits": 10}])
def test_unusable_row_in_output_perturbation_gives_a_finite_release(kw):
    x = _group(2_000)
    x[::97] = np.nan
    res = private_barycenter(x, bounds=BOX, m=4, epsilon=2.0, delta=1e-5,
                             method="perturbation", rng=0, **kw)
    assert res.params["step"] == kw.get("step", "lloyd")
    assert np.all(np.isfinite(res.support))
    assert res.n_unusable == (int(np.ceil(2_000 / 97)),)


def test_perturbation_refusals_come_before_the_charge():
    """Classic calibration needs eps per step < 1: refused before the accountant is
    charged (it used to be refused by the Gaussian mechanism after the charge)."""
    acct = PrivacyAccountant(total_epsilon=10.0, total_delta=1e-3)
    with pytest.raises(InvalidParameterError):
        private_barycenter(_group(500), bounds=BOX, m=4, epsilon=4.0, delta=1e-5,
                           method="perturbation", step="anchored", calibration="classic",
                           splits=5, accountant=acct, rng=0)
    assert acct.spent.epsilon == 0.0 and acct.spent.delta == 0.0


def test_lloyd_step_refusals_come_before_the_charge():
    acct = PrivacyAccountant(total_epsilon=10.0, total_delta=1e-3)
    for bad in ({"balancing_rounds": 11}, {"step": "newton"}):
        with pytest.raises(InvalidParameterError):
            private_barycenter(_group(500), bounds=BOX, m=4, epsilon=4.0, delta=1e-5,
                               method="perturbation", accountant=acct, rng=0, **bad)
    assert acct.spent.epsilon == 0.0 and acct.spent.delta == 0.0
