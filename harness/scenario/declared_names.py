"""What a declared failing verdict is: a known bug of the releases (``known_bug:``) or a
cited deviation (``deviation:``), named in an ``expect`` entry so that every surface that
shows the run (the VERDICT line, the report's matrix, `matrix`) says "known bug
elr-keeps-removed-replica" where it would otherwise say a bare CONFORMS above a red axis.

Both names are checked against the catalogs the judges use (reference/releases/known_bugs.py,
reference/releases/deviations.py), with the file and line of a name that is not there."""

from __future__ import annotations

from harness.scenario.nodes import Items, Reader
from reference.releases.deviations import BY_ID as DEVIATIONS
from reference.releases.known_bugs import KNOWN_BUGS

NAME_KEYS = ("known_bug", "deviation")
_CLEAN = ("CONFORMS", "SAFE")


def declared_names(ctx: Reader, items: Items, where: str, verdict: str
                   ) -> tuple[str | None, str | None]:
    """The entry's (known_bug, deviation): at most one, only for a failing verdict, and
    each a name its catalog holds."""
    given = [k for k in NAME_KEYS if k in items]
    if not given:
        return None, None
    node = items[given[-1]][1]
    if len(given) > 1:
        raise ctx.fail(node, where, "name a known_bug or a deviation, not both")
    if verdict in _CLEAN:
        raise ctx.fail(node, f"{where}.{given[0]}",
                       f"names what a failing verdict is; {verdict} is clean")
    name = ctx.str_(node, f"{where}.{given[0]}")
    catalog = ({b.id for b in KNOWN_BUGS} if given[0] == "known_bug" else set(DEVIATIONS))
    if name not in catalog:
        source = ("reference/releases/known_bugs.py" if given[0] == "known_bug"
                  else "docs/KNOWN-DEVIATIONS.md")
        raise ctx.fail(node, f"{where}.{given[0]}",
                       f"unknown {given[0].replace('_', ' ')} {name!r} ({source}: "
                       f"{', '.join(sorted(catalog))})")
    return (name, None) if given[0] == "known_bug" else (None, name)
