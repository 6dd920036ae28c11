"""Audits of whole CLI releases: what ``privot heatmap`` / ``privot barycenter`` publish.

The mechanism audits (``tests/privacy/test_audits.py``, ``tests/barycenters/*_audit.py``)
check the noise; these check the *command*: everything it publishes, on a pair of
neighbouring input files, run in-process through :func:`privot.cli.main.main`.

Publishable output (DESIGN.md, "Publishable output"): the output folder holds the
publishable files and curator files whose names start with ``curator-``; everything
else -- every file not named ``curator-*`` and what the command prints on stdout -- is a
function of the public parameters and the noisy release only.

1. **Deterministic leak check** (cheap and strong). With the *same* ``--seed`` on D and
   D', every noise draw is the same, so whatever is not a noisy released number must be
   the same: the set of publishable files, ``release.json`` once the noisy
   fields named in :data:`NOISY_JSON_FIELDS` are removed, shapes and headers of the
   released arrays, and stdout. Any exact count, timing or data warning that reaches a
   publishable file shows up as a difference. The neighbours differ in data the curator
   sees: the added heatmap user has a point outside the bounds (dropped), the replaced
   barycenter row lies outside the bounds (clipped).

2. **Statistical audit** of one whole heatmap release: many seeded runs of the CLI on D
   and D' (add/remove one user, the unit of ``privot heatmap``), the released
   ``distribution.npy`` attacked with one event fixed in advance, an epsilon lower bound
   with Clopper-Pearson intervals (:func:`privot.privacy.audit.epsilon_lower_bound`) at
   confidence 0.999: a correct release is reported above its claim with probability at
   most 1e-3 per test (the false-alarm rate). The same attack at epsilon 8 must show a
   clearly positive bound, so the audit can fail. Seeds are fixed: runs are
   reproducible. ``--seed`` replaces the secure sampler by a seeded generator of the
   same distribution, which is what an audit needs.

The statistical runs skip rasterising ``heatmap.png`` (``Figure.savefig`` writes a
placeholder): the picture is drawn from ``heatmap.npy`` alone (post-processing of the
release) and rasterising costs ten times the rest of a run; the leak check runs the
real writer. Measured per run (resolution 4, about 100 input rows): 0.07 s of CPU with
the placeholder, 0.7 s with the real PNG; the file runs in about 55 s of CPU.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from privot.cli.main import main
from privot.privacy.audit import epsilon_lower_bound

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

CONFIDENCE = 0.999  # false-alarm rate of each audit assertion: <= 1e-3
AUDIT_RUNS = 200  # CLI runs per input at the claimed epsilon = 1
POWER_RUNS = 60  # CLI runs per input at epsilon = 8 (the power check)
CURATOR_PREFIX = "curator-"
BOUNDS = ("0", "1", "0", "1")

#: Fields of a publishable JSON file (at any depth) that are noisy released numbers, so
#: legitimately differ between D and D' under the same seed; everything else in it
#: must be equal.
#:
#: * heatmap: none -- ``release.json`` describes the release (method, budgets, grid,
#:   parameters); the released numbers live in ``distribution.npy``/``.csv`` and
#:   ``heatmap.npy``.
#: * barycenter: ``support`` -- the private support points are the release itself
#:   (also written to ``support.csv``). ``weights`` stay compared: they are ``1/m``.
NOISY_JSON_FIELDS = {"heatmap": frozenset(), "barycenter": frozenset({"support"})}

# ---------------------------------------------------------------------------- helpers


def run_cli(argv: list[str]) -> tuple[str, str]:
    """Run ``privot ARGV`` in-process, quietly; returns (stdout, stderr); exit 0 asserted."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    assert status == 0, f"privot {' '.join(argv)} exited {status}:\n{err.getvalue()}"
    return out.getvalue(), err.getvalue()


#: Users of the heatmap's D, all in the top-right cell of the 4 x 4 grid.
HEATMAP_USERS = 50
#: The corner cell (row 0 = bottom edge, column 0 = left edge) where D' adds one user,
#: and the opposite one, where D's users all are.
CORNER, CROWD = (0, 0), (3, 3)


def heatmap_inputs(folder: Path) -> tuple[Path, Path]:
    """D: 50 users with two points each in the top-right cell of [0, 1]^2 at resolution
    4. D' = D plus one user with three points in the bottom-left cell and one point
    outside the bounds (dropped; a curator-only count)."""
    rows = ["user_id,longitude,latitude"]
    for u in range(HEATMAP_USERS):
        rows += [f"u{u},{0.80 + 0.01 * (u % 10):.2f},{0.80 + 0.01 * (u % 7):.2f}",
                 f"u{u},0.90,0.90"]
    added = ["added,0.10,0.10", "added,0.12,0.20", "added,0.05,0.15", "added,1.50,0.50"]
    folder.mkdir(parents=True, exist_ok=True)
    d0, d1 = folder / "heatmap-d0.csv", folder / "heatmap-d1.csv"
    d0.write_text("\n".join(rows) + "\n")
    d1.write_text("\n".join(rows + added) + "\n")
    return d0, d1


def barycenter_inputs(folder: Path) -> tuple[Path, Path]:
    """Two groups of 12 rows in [0.2, 0.8]^2. D' = D with the first row of group ``a``
    replaced by a row outside the bounds (clipped; a curator-only count). Group labels
    and sizes are equal: replace-one neighbours."""
    rng = np.random.default_rng(5)
    rows = ["longitude,latitude,group"]
    for group in "ab":
        rows += [f"{x:.4f},{y:.4f},{group}" for x, y in rng.uniform(0.2, 0.8, (12, 2))]
    replaced = list(rows)
    replaced[1] = "1.7000,-0.4000,a"
    folder.mkdir(parents=True, exist_ok=True)
    d0, d1 = folder / "barycenter-d0.csv", folder / "barycenter-d1.csv"
    d0.write_text("\n".join(rows) + "\n")
    d1.write_text("\n".join(replaced) + "\n")
    return d0, d1


def heatmap_argv(path: Path, out: Path, *, seed: int, epsilon: float = 1.0) -> list[str]:
    return ["heatmap", str(path), "--bounds", *BOUNDS, "--epsilon", f"{epsilon:g}",
            "--resolution", "4", "--seed", str(seed), "--output", str(out)]


def barycenter_argv(path: Path, out: Path, *, seed: int) -> list[str]:
    return ["barycenter", str(path), "--bounds", *BOUNDS, "--group-column", "group",
            "--m", "4", "--epsilon", "1", "--seed", str(seed), "--output", str(out)]


def publishable_files(folder: Path) -> dict[str, Path]:
    """Every file under ``folder`` whose name does not start with ``curator-``."""
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith(CURATOR_PREFIX)}


def without_fields(value, fields: frozenset[str]):
    """``value`` (parsed JSON) with every key in ``fields`` removed, at any depth."""
    if isinstance(value, dict):
        return {k: without_fields(v, fields) for k, v in value.items() if k not in fields}
    if isinstance(value, list):
        return [without_fields(v, fields) for v in value]
    return value


def csv_layout(path: Path) -> tuple[str | None, list[int]]:
    """(header line or None, number of fields on each data line) of a CSV file."""
    lines = path.read_text().splitlines()
    header = None
    if lines:
        try:
            [float(v) for v in lines[0].split(",")]
        except ValueError:
            header, lines = lines[0], lines[1:]
    return header, [len(line.split(",")) for line in lines]


def assert_same_public_content(a: Path, b: Path, *, noisy_fields: frozenset[str]) -> None:
    """The publishable files of two runs with the same seed on D and D' agree on
    everything that is not a noisy released number."""
    files_a, files_b = publishable_files(a), publishable_files(b)
    assert sorted(files_a) == sorted(files_b), "the set of publishable files differs"
    for name, pa in files_a.items():
        pb = files_b[name]
        suffix = pa.suffix.lower()
        if suffix == ".png":  # drawn from the release only; may differ where it does
            for p in (pa, pb):
                assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{p} is not a PNG"
        elif suffix == ".json":
            ja = without_fields(json.loads(pa.read_text()), noisy_fields)
            jb = without_fields(json.loads(pb.read_text()), noisy_fields)
            assert ja == jb, (f"{name} differs between D and D' beyond the noisy fields "
                              f"{sorted(noisy_fields)}:\nD : {ja}\nD': {jb}")
        elif suffix == ".npy":  # a noisy release: only its shape and type are public
            xa, xb = np.load(pa), np.load(pb)
            assert (xa.shape, xa.dtype) == (xb.shape, xb.dtype), f"{name}: layout differs"
        elif suffix == ".npz":  # compressed noisy arrays: names, shapes and types public
            with np.load(pa) as za, np.load(pb) as zb:
                assert sorted(za.files) == sorted(zb.files), f"{name}: arrays differ"
                for k in za.files:
                    assert (za[k].shape, za[k].dtype) == (zb[k].shape, zb[k].dtype), (
                        f"{name}[{k}]: layout differs")
        elif name.endswith("_cells.csv"):  # a sparse table of the noisy release: its
            # rows are the release's non-zero blocks (noisy), its header is public
            assert (pa.read_text().splitlines()[:1] == pb.read_text().splitlines()[:1]), (
                f"{name}: header differs")
        elif suffix == ".csv":  # a noisy release: its header and shape are public
            assert csv_layout(pa) == csv_layout(pb), f"{name}: header or shape differs"
        elif suffix == ".geojson":  # the noisy release's non-zero blocks as polygons:
            # the collection's type, bounding box and property names are public
            ga, gb = json.loads(pa.read_text()), json.loads(pb.read_text())
            assert (ga["type"], ga.get("bbox")) == (gb["type"], gb.get("bbox")), name

            def keys(g):
                return {k for f in g["features"] for k in f["properties"]}
            assert (not ga["features"] or not gb[
                "features"] or keys(ga) == keys(gb)), f"{name}: properties differ"
        elif suffix == ".parquet":  # the noisy release's non-zero blocks as GeoParquet:
            # the columns, their types and the "geo" metadata are public, except the bbox
            # of the (noisy) rows
            pq = pytest.importorskip("pyarrow.parquet")
            sa, sb = pq.read_schema(pa), pq.read_schema(pb)

            def geo(schema):
                meta = json.loads(schema.metadata[b"geo"])
                for col in meta["columns"].values():
                    col.pop("bbox", None)
                return meta

            assert (sa.names, sa.types, geo(sa)) == (sb.names, sb.types, geo(sb)), name
        elif suffix == ".tif":  # a noisy raster: its grid, type and georeference public
            rasterio = pytest.importorskip("rasterio")
            with rasterio.open(pa) as ra, rasterio.open(pb) as rb:
                assert (ra.shape, ra.dtypes, ra.transform, ra.crs) == (
                    rb.shape, rb.dtypes, rb.transform, rb.crs), f"{name}: layout differs"
        else:  # any other publishable file: not a release, so it must be identical
            assert pa.read_bytes() == pb.read_bytes(), f"{name} differs between D and D'"


# ------------------------------------------------------------ 1. deterministic leak


@pytest.mark.parametrize("command", ["heatmap", "barycenter"])
def test_same_seed_neighbours_publish_the_same_non_noisy_content(command, tmp_path):
    inputs, argv = ((heatmap_inputs, heatmap_argv) if command == "heatmap"
                    else (barycenter_inputs, barycenter_argv))
    d0, d1 = inputs(tmp_path / "data")
    for seed in (1, 2, 3):
        outs, printed = [], []
        for tag, path in (("d0", d0), ("d1", d1)):
            out = tmp_path / f"{command}-{tag}-seed{seed}"  # fresh: no --force needed
            stdout, _ = run_cli(argv(path, out, seed=seed))
            outs.append(out)
            printed.append(stdout.replace(str(out), "<OUTPUT>"))
        a, b = outs
        # the release itself and a picture of it are there
        assert "release.json" in publishable_files(a)
        assert any(name.endswith(".png") for name in publishable_files(a))
        assert_same_public_content(a, b, noisy_fields=NOISY_JSON_FIELDS[command])
        assert printed[0] == printed[1], (
            f"stdout (publishable) differs between D and D':\nD : {printed[0]}\n"
            f"D': {printed[1]}")
        if command == "heatmap":  # the pair is not vacuous: the released numbers move
            assert not np.array_equal(np.load(a / "distribution.npy"),
                                      np.load(b / "distribution.npy"))


# -------------------------------------------------------------- 2. statistical audit


def _placeholder_png(self, fname, *args, **kwargs) -> None:
    """Stands in for ``Figure.savefig`` in the statistical runs (see the module doc)."""
    data = b"\x89PNG\r\n\x1a\n"
    if hasattr(fname, "write"):
        fname.write(data)
    else:
        Path(fname).write_bytes(data)


def _corner_users(path: Path, folder: Path, *, epsilon: float, seeds: range) -> np.ndarray:
    """One attack statistic per seeded CLI run on ``path``: the released mass of the
    corner cell in units of one user, ``N * distribution[corner] / distribution[crowd]``
    (the crowd cell holds D's N users, so the ratio undoes the normalisation)."""
    stats = np.empty(len(seeds))
    for i, seed in enumerate(seeds):
        out = folder / f"run-{seed}"
        run_cli(heatmap_argv(path, out, seed=seed, epsilon=epsilon))
        dist = np.load(out / "distribution.npy")
        stats[i] = HEATMAP_USERS * dist[CORNER] / dist[CROWD]
        shutil.rmtree(out)
    return stats


def heatmap_cli_lower_bound(folder: Path, *, epsilon: float, runs: int,
                            seed0: int) -> tuple[float, int, int]:
    """Epsilon lower bound of the heatmap CLI from ``runs`` runs on each of D and D'.

    The attack reads the released ``distribution.npy`` and asks whether the corner cell,
    where D' adds one user, holds more than 3/4 of a user: the event ``E = {T > 0.75}``
    with ``T = N distribution[corner] / distribution[crowd]`` (D's N users all sit in
    the crowd cell, whose noisy count is N within a few units, so T is close to the
    corner's noisy count). E is fixed in advance, so every run estimates and no
    selection half is needed: the corner's true count is 0 on D and 1 on D', and for a
    Laplace(1/eps) count the threshold 0.75 maximises the expected Clopper-Pearson bound
    at eps = 1 and a few hundred runs (``P_D'[E] = 1 - e^(-eps/4)/2 = 0.61`` and
    ``P_D[E] = e^(-3 eps/4)/2 = 0.24``, as 3,000 library runs confirm; about 0.35
    expected from 200 runs per input).

    Returns the lower bound ``ln(lower(P_D'[E]) / upper(P_D[E]))`` at
    :data:`CONFIDENCE` and the counts of E on D' and on D. Seeds ``seed0 + i`` on D and
    ``seed0 + runs + i`` on D' (independent runs).
    """
    d0, d1 = heatmap_inputs(folder / "data")
    threshold = 0.75
    on_d0 = _corner_users(d0, folder / "d0", epsilon=epsilon, seeds=range(seed0, seed0 + runs))
    on_d1 = _corner_users(d1, folder / "d1", epsilon=epsilon,
                         seeds=range(seed0 + runs, seed0 + 2 * runs))
    k1, k0 = int(np.sum(on_d1 > threshold)), int(np.sum(on_d0 > threshold))
    return (epsilon_lower_bound(k1, k0, runs, alpha=1.0 - CONFIDENCE), k1, k0)


@pytest.mark.slow
def test_heatmap_cli_release_passes_its_audit(tmp_path, monkeypatch):
    """At the claimed epsilon = 1 the lower bound stays below 1 (false alarm <= 1e-3),
    and the attack is not blind: it tells D from D' at confidence 0.999 (bound > 0)."""
    import matplotlib.figure

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", _placeholder_png)
    lower, k1, k0 = heatmap_cli_lower_bound(tmp_path, epsilon=1.0, runs=AUDIT_RUNS,
                                            seed0=10_000)
    summary = f"epsilon >= {lower:.3f} (E on D': {k1}/{AUDIT_RUNS}, on D: {k0}/{AUDIT_RUNS})"
    assert lower <= 1.0, "the heatmap CLI release is refuted: " + summary
    assert lower > 0.0, "the attack has no power at the claimed epsilon: " + summary


@pytest.mark.slow
def test_heatmap_cli_audit_has_power(tmp_path, monkeypatch):
    """The same attack on a release at epsilon = 8 proves epsilon > 1: were the CLI to
    leak like an epsilon-8 release while claiming 1, the audit above would fail."""
    import matplotlib.figure

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", _placeholder_png)
    lower, k1, k0 = heatmap_cli_lower_bound(tmp_path, epsilon=8.0, runs=POWER_RUNS,
                                            seed0=20_000)
    summary = f"epsilon >= {lower:.3f} (E on D': {k1}/{POWER_RUNS}, on D: {k0}/{POWER_RUNS})"
    assert lower <= 8.0, "the epsilon-8 heatmap CLI release is refuted: " + summary
    assert lower > 1.0, "the attack has no power: " + summary
