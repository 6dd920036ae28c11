"""Units and neighbouring relations of a ledger, and the documented conversions between them.

:func:`conversion_factor` is the table of ``docs/privacy/budget.md`` (which release a
ledger of which unit and relation can record, as a group of how many);
:func:`resolve` applies it to one charge, refusing with a message that names the
ledgers that would record it.

Privacy
-------
No noise. A conversion restates a release's guarantee for the ledger's unit and
relation by group privacy (a group of ``k``: ``k`` times the epsilon).
"""

from __future__ import annotations

from privot.errors import InvalidParameterError
from privot.privacy.types import Neighbouring, PrivacyEvent

__all__ = ["RELATIONS", "UNITS", "accepting_ledgers", "check_choice", "conversion_factor",
           "relation_value", "resolve"]

UNITS = ("user", "row")
RELATIONS = ("add-remove", "replace-one", "replace-one-in-group")


def conversion_factor(unit: str, relation: str, ledger_unit: str,
                      ledger_relation: str) -> int | None:
    r"""Group size ``k`` that restates a release's guarantee for the ledger's, or None.

    ``u`` is either unit; "in-group" is ``replace-one-in-group`` (one unit replaced by
    another of its group, the group labels and sizes public).

    ====================  ==========================  ===  ==================================
    release               ledger                      k    why
    ====================  ==========================  ===  ==================================
    same                  same                        1    nothing to convert
    u, add-remove         u, replace-one or in-group  2    replace = remove then add
    u, replace-one        u, in-group                 1    an in-group change is a change
    u, local              u, replace-one or in-group  1    one randomiser's input changes
    user, add-remove      row, add-remove             2    a row added: a user added, or one
                                                           user's rows changed (2)
    user, add-remove      row, replace-one or         4    a replaced row may move from one
                          in-group                         user to another: two users'
                                                           rows change (2 each)
    anything else         --                          --   refused
    ====================  ==========================  ===  ==================================

    Refused, and why: a replace-one release on an add-remove ledger (the size of the data
    is not protected); an in-group release on a plain replace-one ledger (a replacement
    that changes a unit's group changes the published group sizes); a row-level release
    on a user ledger (a user may hold many rows); a user-level replace-one or local
    release on a row ledger (a replaced row may take a user id not in the data: the
    number of users, or of reports, changes, which neither release covers); a local
    release on an add-remove ledger (adding a user adds a report: participation is
    public in the local model). Reading a local release as replace-one takes its list of
    randomisers (the user list of ``privot sample``) as public and fixed: one report per
    listed user whatever their data (``docs/privacy/sampling.md``).
    """
    if (unit, relation) == (ledger_unit, ledger_relation):
        return 1
    replace = ("replace-one", "replace-one-in-group")
    if unit == ledger_unit:
        if relation in ("add-remove", "local") and ledger_relation in replace:
            return 2 if relation == "add-remove" else 1
        if (relation, ledger_relation) == ("replace-one", "replace-one-in-group"):
            return 1
        return None
    if (unit, ledger_unit, relation) == ("user", "row", "add-remove"):
        return 2 if ledger_relation == "add-remove" else 4
    return None


def accepting_ledgers(unit: str, relation: str, *, group: int | None = None) -> str:
    """In words, the ledgers (unit and relation) that record a ``unit``/``relation``
    release, with their group factor (:func:`conversion_factor`); only those of factor
    ``group`` when given. For refusals that say what would work."""
    found = [(u, r, conversion_factor(unit, relation, u, r))
             for u in UNITS for r in RELATIONS]
    names = [f"unit {u}, relation {r}" + ("" if k == 1 else f" (a group of {k})")
             for u, r, k in found if k is not None and group in (None, k)]
    if not names:
        return "no unit and relation privot knows (docs/privacy/budget.md)"
    return " or ".join(names) + " (privot budget init FILE --unit U --relation R)"


def check_choice(value: object, name: str, allowed: tuple[str, ...]) -> str:
    """``value`` as a string, or :class:`~privot.errors.InvalidParameterError` naming
    ``name`` when it is not one of ``allowed``."""
    if value not in allowed:
        raise InvalidParameterError(name, value, f"one of {list(allowed)}")
    return str(value)


def relation_value(relation: object) -> str:
    """A relation's string (``Neighbouring`` or its value), or
    :class:`~privot.errors.InvalidParameterError` naming ``relation``."""
    if isinstance(relation, Neighbouring):
        return relation.value
    allowed = [r.value for r in Neighbouring]
    if relation not in allowed:
        raise InvalidParameterError("relation", relation, f"one of {allowed}")
    return str(relation)


def resolve(event: PrivacyEvent, unit: str | None, relation: object, convert: bool, *,
            ledger_name: str, ledger_unit: str,
            ledger_relation: str) -> tuple[PrivacyEvent, str, str, int]:
    """``event`` restated for a ledger (``ledger_name``, of ``ledger_unit`` and
    ``ledger_relation``): the grouped event, the release's unit and relation (default
    the ledger's) and the group factor. Refuses, with what would work, a unit or
    relation the ledger cannot record, or one needing a group of more than 1 without
    ``convert``."""
    if not isinstance(event, PrivacyEvent):
        raise InvalidParameterError("event", event, "a privot.privacy.events.PrivacyEvent")
    unit = ledger_unit if unit is None else check_choice(unit, "unit", UNITS)
    rel = ledger_relation if relation is None else relation_value(relation)
    k = conversion_factor(unit, rel, ledger_unit, ledger_relation)
    if k is None:
        raise InvalidParameterError(
            "relation", f"{unit}/{rel}", "a release this ledger can record",
            message=f"ledger {ledger_name!r} is {ledger_unit}-level {ledger_relation} and "
                    f"cannot record a {unit}-level {rel} release: no documented "
                    "conversion leads there (docs/privacy/budget.md); nothing was "
                    f"charged. A ledger of {accepting_ledgers(unit, rel)} would "
                    "record it.")
    if k > 1 and not convert:  # a group of 1 restates nothing: no consent needed
        raise InvalidParameterError(
            "convert", False, f"True to record it as a group of {k}",
            message=f"a {unit}-level {rel} release counts as a group of {k} on ledger "
                    f"{ledger_name!r} ({ledger_unit}-level {ledger_relation}): its epsilon "
                    f"would be charged {k} times (docs/privacy/budget.md); nothing was "
                    "charged. Pass convert=True (--convert) to record it so, or use a "
                    f"ledger of {accepting_ledgers(unit, rel, group=1)}.")
    return event.grouped(k), unit, rel, k
