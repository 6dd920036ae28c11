"""The solver on weighted atoms (``max_atoms``, coresets.cell_atoms) and progress bars."""

from __future__ import annotations

import numpy as np
import pytest

from privot.barycenters import PublicBounds, private_barycenter
from privot.barycenters import coresets as cs
from privot.barycenters.coresets import cell_atoms, coreset_from_leaf_counts, private_coreset
from privot.ot import barycenter_cost, free_support_barycenter

BOX = PublicBounds.box([0.0, 0.0], [1.0, 1.0])


def _clustered(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.1, 0.9, size=(5, 2))
    return np.clip(centres[rng.integers(5, size=n)] + 0.03 * rng.normal(size=(n, 2)), 0, 1)


@pytest.fixture
def frozen_counts(monkeypatch):
    """Replays the noisy level counts of the first release for every later one (per group,
    in call order): later releases see the same noisy counts whatever the raw data."""
    real = cs.noisy_level_counts
    store: list = []
    calls = {"i": 0}

    def replay(leaf_ids, counts, **kw):
        # the real call runs every time so that the seeded generator advances as in the
        # first release (the noise draws do not depend on the counts)
        out = real(leaf_ids, counts, **kw)
        i = calls["i"]
        calls["i"] += 1
        if i < len(store):
            return store[i]
        store.append(out)
        return out

    def rewind() -> None:
        calls["i"] = 0

    monkeypatch.setattr(cs, "noisy_level_counts", replay)
    return rewind


def test_centre_atoms_are_the_same_measure():
    x = _clustered(3000, 0)
    core = private_coreset(x, bounds=BOX, epsilon=1.0, placement="centre", rng=1)
    atoms, counts, level = cell_atoms(core.points, bounds=BOX, depth=core.depth,
                                      max_atoms=10**6)
    assert level == core.depth
    uniq, cnt = np.unique(core.points, axis=0, return_counts=True)
    assert counts.sum() == core.points.shape[0] == 3000
    # the very same measure: identical atoms (bit for bit) and counts, in another order
    order = np.lexsort(atoms.T[::-1])
    np.testing.assert_array_equal(atoms[order], uniq)
    np.testing.assert_array_equal(counts[order], cnt)
    # so the exact solver's optimum is the same on either representation
    init = uniq[np.random.default_rng(2).choice(len(uniq), size=6, replace=False)]
    per_person = free_support_barycenter([core.points], init=init, method="exact")
    weighted = free_support_barycenter([atoms], measure_weights=[counts / counts.sum()],
                                       init=init, method="exact")
    assert weighted.cost == pytest.approx(per_person.cost, rel=1e-12)
    np.testing.assert_allclose(weighted.support, per_person.support, atol=1e-12)
    s = per_person.support
    assert barycenter_cost([atoms], s, measure_weights=[counts / counts.sum()]) == \
        pytest.approx(barycenter_cost([core.points], s), rel=1e-12)


def test_end_to_end_centre_weighted_is_the_point_per_person_measure(frozen_counts,
                                                                     monkeypatch):
    from privot.barycenters import method_coreset

    seen = []
    real = method_coreset.free_support_barycenter

    def spy(measures, **kw):
        seen.append(([np.array(x) for x in measures], kw.get("measure_weights")))
        return real(measures, **kw)

    monkeypatch.setattr(method_coreset, "free_support_barycenter", spy)
    groups = [_clustered(1500, 3), _clustered(1200, 4)]
    kw = {"bounds": BOX, "m": 5, "epsilon": 1.0, "placement": "centre", "solver": "exact",
          "progress": False}
    old = private_barycenter(groups, max_atoms=None, coreset_size=1500, rng=5, **kw)
    frozen_counts()
    new = private_barycenter(groups, max_atoms=10**6, rng=5, **kw)
    assert new.diagnostics["atom_levels"] == new.diagnostics["coreset_depths"]
    assert new.diagnostics["coreset_sizes"] == old.diagnostics["coreset_sizes"] == [1500, 1200]
    (old_x, old_w), (new_x, new_w) = seen
    assert old_w is None
    for x, a, w in zip(old_x, new_x, new_w, strict=True):
        uniq, cnt = np.unique(x, axis=0, return_counts=True)
        order = np.lexsort(a.T[::-1])
        np.testing.assert_array_equal(a[order], uniq)  # identical measure
        np.testing.assert_array_equal(w[order], cnt)
        assert len(a) < len(x)  # and far fewer atoms
    # the same problem: from the same start the exact solver reaches the same optimum
    init = np.concatenate(new_x)[:5]
    f_old = free_support_barycenter(old_x, init=init, method="exact")
    f_new = free_support_barycenter(new_x, measure_weights=new_w, init=init, method="exact")
    assert f_new.cost == pytest.approx(f_old.cost, rel=1e-12)
    np.testing.assert_allclose(f_new.support, f_old.support, atol=1e-12)


def test_atoms_read_only_the_released_counts(frozen_counts):
    x1, x2 = _clustered(2000, 10), _clustered(2000, 11)  # different raw data
    kw = {"bounds": BOX, "epsilon": 1.0, "placement": "scaled"}
    c1 = private_coreset(x1, rng=7, **kw)
    frozen_counts()
    c2 = private_coreset(x2, rng=7, **kw)
    np.testing.assert_array_equal(c1.points, c2.points)
    a1 = cell_atoms(c1.points, bounds=BOX, depth=c1.depth, max_atoms=64)
    a2 = cell_atoms(c2.points, bounds=BOX, depth=c2.depth, max_atoms=64)
    for u, v in zip(a1, a2, strict=True):
        np.testing.assert_array_equal(u, v)
    # and the whole release: same noisy counts, different raw points, same barycenter
    frozen_counts()
    r1 = private_barycenter([x1, x2], m=4, rng=3, max_atoms=64, progress=False, **kw)
    frozen_counts()
    r2 = private_barycenter([x2, x1], m=4, rng=3, max_atoms=64, progress=False, **kw)
    np.testing.assert_array_equal(r1.support, r2.support)
    assert r1.diagnostics["solver_atoms"] == r2.diagnostics["solver_atoms"]
    assert max(r1.diagnostics["solver_atoms"]) <= 64


def test_cell_atoms_levels_and_cap():
    core = private_coreset(_clustered(5000, 20), bounds=BOX, epsilon=2.0, rng=1)
    prev = None
    for cap in (1, 7, 50, 400, 10**6):
        atoms, counts, level = cell_atoms(core.points, bounds=BOX, depth=core.depth,
                                          max_atoms=cap)
        assert len(atoms) == len(counts) <= cap
        assert counts.sum() == core.points.shape[0] and np.all(counts > 0)
        assert prev is None or level >= prev
        prev = level
        # atoms are means of points of one cell: inside the cell's box, hence the box
        lo, hi = BOX.cell_box()
        assert np.all(atoms >= lo - 1e-12) and np.all(atoms <= hi + 1e-12)
    assert cell_atoms(core.points, bounds=BOX, depth=core.depth, max_atoms=1)[2] == 0
    empty = cell_atoms(np.empty((0, 2)), bounds=BOX, depth=3, max_atoms=4)
    assert empty[0].shape == (0, 2) and empty[1].size == 0


def test_leaf_counts_path_uses_atoms():
    x = _clustered(4000, 30)
    ids = cs.leaf_index(BOX.to_unit(x)[0], cell_box=BOX.cell_box(), depth=12)
    leaf, cnt = np.unique(ids, return_counts=True)
    core = coreset_from_leaf_counts(leaf, cnt, bounds=BOX, epsilon=1.0, depth=12, rng=0)
    atoms, counts, _ = cell_atoms(core.points, bounds=BOX, depth=12, max_atoms=100)
    assert len(atoms) <= 100 and counts.sum() == 4000


def test_progress_off_prints_nothing(capsys):
    groups = [_clustered(800, 40), _clustered(600, 41)]
    private_barycenter(groups, bounds=BOX, m=4, epsilon=1.0, rng=0, progress=False)
    private_barycenter(groups, bounds=BOX, m=4, epsilon=1.0, rng=0)  # None: not a tty
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


@pytest.mark.parametrize("step", ["lloyd", "anchored"])
def test_progress_on_writes_bars_to_stderr(capsys, step):
    groups = [_clustered(800, 50), _clustered(600, 51)]
    private_barycenter(groups, bounds=BOX, m=4, epsilon=1.0, rng=0, progress=True)
    out = capsys.readouterr()
    assert out.out == ""
    assert "private coresets" in out.err and "barycenter" in out.err
    private_barycenter(groups, bounds=BOX, m=4, epsilon=4.0, delta=1e-5,
                       method="perturbation", step=step, rng=0, progress=True)
    err = capsys.readouterr().err
    assert "anchor coresets" in err and "output perturbation" in err


def test_progress_must_be_bool_or_none():
    with pytest.raises(Exception, match="progress"):
        private_barycenter([_clustered(100, 1)], bounds=BOX, m=2, epsilon=1.0,
                           progress="yes")
