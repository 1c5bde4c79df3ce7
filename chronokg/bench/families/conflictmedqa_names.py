"""ConflictMedQA's names as a user may write them: a factor (its key, the code's or the paper's name), a change
category, a disease group, each resolved against the vocabularies the DriftMed loader declares, else one
clear error naming the known ones.

Split out of `conflictmedqa.py` so that each module holds one thing; `conflictmedqa` re-exports them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from chronokg.errors import ChronoKGError
from chronokg.ingest.driftmed import (
    CATEGORIES,
    CATEGORY_ALIASES,
    DISEASE_GROUP_ALIASES,
    DISEASE_GROUPS,
    FACTORS,
    Factor,
    find_factor,
)


class UnknownName(ChronoKGError, ValueError):
    """A factor, change category or disease group that is not one of the paper's."""


# The vocabularies (the 11 factors, the paper's five change categories, the two disease groups) are declared by the
# loader, which checks every row against them at load.


def norm(name: str) -> str:
    return re.sub(r"\s+", " ", name).strip().lower()


def known_names(kind: str, names: Iterable[str]) -> str:
    return f"known {kind}: {', '.join(names)}"


def factor(name: str) -> Factor:
    """The factor `name` names: its key, the code's or the paper's name (case-insensitive); else an error."""
    found = find_factor(name)
    if found is not None:
        return found
    raise UnknownName(f"unknown ConflictMedQA factor {name!r} ({known_names('factors', (f.seed for f in FACTORS))})")


def category(name: str) -> str:
    """The change category `name` names (the paper's name or its snake-case key); else an error."""
    wanted = norm(name)
    for c in CATEGORIES:
        if wanted in {norm(c), norm(c).replace(" & ", "_").replace(" ", "_")}:
            return c
    if wanted in CATEGORY_ALIASES:
        return CATEGORY_ALIASES[wanted]
    raise UnknownName(f"unknown ConflictMedQA change category {name!r} ({known_names('categories', CATEGORIES)})")


def disease_group(name: str) -> str:
    """`infectious` or `chronic` (also "... disease(s)"); else an error."""
    wanted = norm(name)
    if wanted in DISEASE_GROUPS:
        return wanted
    if wanted in DISEASE_GROUP_ALIASES:
        return DISEASE_GROUP_ALIASES[wanted]
    raise UnknownName(f"unknown ConflictMedQA disease group {name!r} ({known_names('groups', DISEASE_GROUPS)})")
