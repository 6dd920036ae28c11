"""Messages a user sees for empty files and numpy values (issue 12: consistency)."""

from __future__ import annotations

import numpy as np
import pytest

from privot.errors import InvalidDataError, InvalidParameterError, plain_repr
from privot.heatmaps import Grid, aggregate_user_cells

GRID = Grid(bounds=(0.0, 1.0, 0.0, 1.0), resolution=8)


def test_an_empty_file_is_called_empty(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(InvalidDataError, match="is empty") as info:
        aggregate_user_cells(path, grid=GRID)
    assert "available columns" not in str(info.value)


def test_a_header_only_file_is_still_zero_users_not_empty(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("user_id,longitude,latitude\n")
    assert aggregate_user_cells(path, grid=GRID).n_users == 0


@pytest.mark.parametrize("value, shown", [
    (np.float64(-87.5), "-87.5"),
    (np.int64(3), "3"),
    ((np.float64(1.0), np.int32(2)), "(1.0, 2)"),
    ([np.float32(0.5)], "[0.5]"),
    (np.arange(3), "[0, 1, 2]"),
    (np.zeros((100, 2)), "<float64 array of shape (100, 2)>"),
    ({"a": np.float64(2.0)}, "{'a': 2.0}"),
    ("text", "'text'"),
])
def test_numpy_values_read_as_python_values_in_messages(value, shown):
    assert plain_repr(value) == shown
    msg = str(InvalidParameterError("lon", value, "a number in [-180, 180]"))
    assert msg.startswith(f"lon={shown} is not allowed")
    assert "np." not in msg and "array(" not in msg
