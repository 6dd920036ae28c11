"""``privot barycenter --method subspace`` (and ``auto`` above 2-D): outputs, the pure and
Gaussian variants, a DCT basis on images, and one-line errors (exit status 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privot.cli.main import main

pd = pytest.importorskip("pandas")

D = 6


def _write(path, x, labels):
    frame = pd.DataFrame(x, columns=[f"x{j}" for j in range(x.shape[1])])
    frame["grp"] = labels
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def mixture_csv(tmp_path_factory):
    """Two groups of 300 points in d = 6, a Gaussian mixture inside the public ball
    B(0, 1)."""
    rng = np.random.default_rng(0)
    parts, labels = [], []
    for g, shift in enumerate((-0.3, 0.3)):
        centres = shift + 0.2 * rng.normal(size=(2, D))
        x = centres[rng.integers(2, size=300)] + 0.05 * rng.normal(size=(300, D))
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        parts.append(x / np.maximum(norms, 1.0))  # inside the ball
        labels += [f"g{g}"] * 300
    return _write(tmp_path_factory.mktemp("sub") / "mix.csv", np.vstack(parts), labels)


@pytest.fixture(scope="module")
def images_csv(tmp_path_factory):
    """One group of 200 smooth 4 x 4 'images' (d = 16) in the box [0, 1]^16."""
    rng = np.random.default_rng(1)
    u = np.linspace(0, 1, 4)
    base = np.add.outer(u, u).ravel() / 2
    x = np.clip(base + 0.1 * rng.normal(size=(200, 1)) + 0.05 * rng.normal(size=(200, 16)),
                0, 1)
    return _write(tmp_path_factory.mktemp("img") / "img.csv", x, ["all"] * 200)


def _args(path, out, *extra, d=D, where=None):
    where = where or ["--ball", *["0"] * d, "1"]
    return ["barycenter", str(path), "--columns", ",".join(f"x{j}" for j in range(d)),
            "--group-column", "grp", *where, "--m", "8", "--epsilon", "4", "--seed", "3",
            "-o", str(out), *extra]


def _release(out):
    return json.loads((out / "release.json").read_text())


def test_auto_runs_subspace_pure_in_6d(mixture_csv, tmp_path, capsys):
    out = tmp_path / "pure"
    assert main(_args(mixture_csv, out)) == 0
    sup = np.loadtxt(out / "support.csv", delimiter=",", skiprows=1)
    assert sup.shape == (8, D + 1)  # d coordinates and the weight
    assert np.allclose(sup[:, -1], 1 / 8)
    assert np.all(np.linalg.norm(sup[:, :D], axis=1) <= 1 + 1e-9)  # in the public ball
    header = (out / "support.csv").read_text().splitlines()[0]
    assert header == ",".join([*(f"x{j}" for j in range(D)), "weight"])
    assert not (out / "barycenter.png").exists()  # 2-D only
    rel = _release(out)
    assert rel["method"] == "subspace"
    assert rel["params"]["method_requested"] == "auto"
    assert rel["params"]["d"] == D
    plan = rel["params"]["subspace"]
    assert plan["mechanism"] == "laplace" and plan["mu"] is None
    assert rel["privacy"]["epsilon"] == 4.0 and rel["privacy"]["delta"] == 0.0
    assert rel["engine"] == "duckdb" and rel["groups"] == ["g0", "g1"]
    printed = capsys.readouterr().out
    assert "subspace method (auto)" in printed and "laplace noise" in printed
    assert "(pure DP)" in printed


def test_subspace_gaussian_records_delta_and_options(mixture_csv, tmp_path):
    out = tmp_path / "gauss"
    extra = ("--method", "subspace", "--delta", "1e-6", "--subspace-dim", "3",
             "--cells", "4", "--rounds", "2", "--projection-share", "0.3")
    assert main(_args(mixture_csv, out, *extra)) == 0
    rel = _release(out)
    assert rel["method"] == "subspace"
    assert rel["params"]["method_requested"] == "subspace"
    assert rel["privacy"]["delta"] == 1e-6 and rel["privacy"]["epsilon"] == 4.0
    plan = rel["params"]["subspace"]
    assert plan["mechanism"] == "gaussian" and plan["mu"] > 0
    assert (plan["subspace_dim"], plan["cells"], plan["rounds"]) == (3, 4, 2)
    assert plan["projection_share"] == 0.3  # d0 = 6 > d' = 3: a DP second moment
    sup = np.loadtxt(out / "support.csv", delimiter=",", skiprows=1)
    assert sup.shape == (8, D + 1)


def test_covariance_flag_reaches_the_plan(mixture_csv, tmp_path):
    """--covariance full: the moment round releases the whole second moment (its
    d'(d'+1)/2 entries, recorded in the plan); diagonal: the d' squares."""
    for choice, expect in (("full", True), ("diagonal", False)):
        out = tmp_path / choice
        assert main(_args(mixture_csv, out, "--method", "subspace", "--cells", "1",
                          "--subspace-dim", "3", "--covariance", choice)) == 0
        plan = _release(out)["params"]["subspace"]
        assert plan["covariance"] is expect and plan["cells"] == 1


def test_dct_basis_on_images(images_csv, tmp_path):
    out = tmp_path / "dct"
    box = ["--bounds", *(["0", "1"] * 16)]
    assert main(_args(images_csv, out, "--basis", "dct", "--image-shape", "4,4",
                      "--basis-dim", "6", d=16, where=box)) == 0
    rel = _release(out)
    assert rel["method"] == "subspace"
    assert rel["params"]["basis"] == "dct" and rel["params"]["image_shape"] == [4, 4]
    assert rel["params"]["subspace"]["basis_dim"] == 6
    sup = np.loadtxt(out / "support.csv", delimiter=",", skiprows=1)
    assert sup.shape == (8, 17)
    assert np.all((sup[:, :16] >= 0) & (sup[:, :16] <= 1))


@pytest.mark.parametrize("extra, needle", [
    (("--method", "subspace", "--cells", "0"), "--cells"),
    (("--method", "subspace", "--rounds", "101"), "--rounds"),
    (("--method", "subspace", "--projection-share", "1"), "--projection-share"),
    (("--method", "subspace", "--subspace-dim", "7"), "--subspace-dim"),
    (("--method", "subspace", "--delta", "2"), "delta"),
    (("--method", "subspace", "--cells", "3", "--rounds", "0"), "rounds"),
    (("--basis", "dct"), "--image-shape"),
    (("--image-shape", "2,3"), "--image-shape"),
    (("--basis-dim", "3"), "--basis-dim"),
    (("--basis", "dct", "--image-shape", "2,2"), "--image-shape"),
    (("--image-shape", "2"), "--image-shape"),
    (("--basis", "pca"), "--basis"),
    (("--cells", "x"), "--cells"),
    (("--covariance", "yes"), "--covariance"),
    (("--method", "coreset", "--covariance", "full"), "--covariance"),
    (("--method", "coreset", "--subspace-dim", "2"), "--subspace-dim"),
    (("--method", "perturbation", "--delta", "1e-5", "--cells", "2"), "--cells"),
    (("--method", "subspace", "--projection-dim", "3"), "--projection-dim"),
    (("--method", "subspace", "--engine", "spark"), "--engine"),
])
def test_bad_input_is_one_line_and_exit_2(mixture_csv, tmp_path, capsys, extra, needle):
    out = tmp_path / "bad"
    assert main(_args(mixture_csv, out, *extra)) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines()
           if "error" in line]
    assert len(err) == 1 and needle in err[0]
    assert not (out / "release.json").exists()


def test_image_shape_must_match_d(images_csv, tmp_path, capsys):
    box = ["--bounds", *(["0", "1"] * 16)]
    assert main(_args(images_csv, tmp_path / "bad", "--basis", "dct", "--image-shape",
                      "3,3", d=16, where=box)) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines()
           if "error" in line]
    assert len(err) == 1 and "--image-shape" in err[0] and "d = 16" in err[0]


def test_subspace_options_refused_where_auto_runs_the_coreset(tmp_path, capsys):
    rng = np.random.default_rng(2)
    path = _write(tmp_path / "flat.csv", rng.uniform(size=(100, 2)), ["a"] * 100)
    args = ["barycenter", str(path), "--columns", "x0,x1", "--group-column", "grp",
            "--bounds", "0", "1", "0", "1", "--m", "4", "--epsilon", "1", "--seed", "0",
            "-o", str(tmp_path / "o"), "--cells", "2"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--cells" in err and "auto runs coreset" in err
