"""A profile whose field reads are written down (issue 44 item 3, the speed of the
differential comparison; no rule of the model is here).

The model's event handlers are pure functions of the cluster, the event and the profile, and
they read the profile only through its fields (and its methods, which read its fields). So
two profiles that hold the same value in every field one handler run read, make that run
go the same way and predict the same outcomes. ``Reads`` wraps a profile and keeps each
field read with its value (methods and properties are run with the wrapper as ``self``, so
their reads are kept too); ``same_reads`` tells whether another profile holds those values.
The kip axis's deviation search (harness/differential/compare.py ``_explain``) uses it to
skip the deviation sets whose profile the reads of an already evaluated set cannot tell
apart. Hashing or comparing a wrapper raises: a use that would read every field without
saying so is an error, not a silent miss.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from reference.releases.profiles import Profile

#: (field, value) pairs, in the order of their first read.
ReadSet = tuple[tuple[str, Any], ...]


class Reads:
    """``profile`` with its field reads kept in ``read``."""

    __slots__ = ("profile", "read")

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.read: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        read = self.read
        if name in read:  # a field read before: fields do not change
            return read[name]
        attr = _member(type(self.profile), name)
        if isinstance(attr, property) and attr.fget is not None:
            return attr.fget(self)
        if attr is not None:  # a method: run with the wrapper as self, so its reads are kept
            return attr.__get__(self)
        value = getattr(self.profile, name)
        self.read.setdefault(name, value)
        return value

    def __hash__(self) -> int:
        raise TypeError("a Reads profile is not hashable (it would read every field)")

    def __eq__(self, other: object) -> bool:
        raise TypeError("a Reads profile is not comparable (it would read every field)")

    def as_profile(self) -> Profile:
        """The wrapper, typed as the profile it stands for."""
        return cast(Profile, self)

    def reads(self) -> ReadSet:
        return tuple(self.read.items())


#: Each (profile class, name): its property or method, None for a field.
_MEMBERS: dict[tuple[type, str], Any] = {}


def _member(cls: type, name: str) -> Any:
    """The property or method ``name`` of ``cls``; None for a field."""
    key = (cls, name)
    if key not in _MEMBERS:
        attr = getattr(cls, name, None)
        if isinstance(attr, property):
            _MEMBERS[key] = attr if attr.fget is not None else None
        else:
            _MEMBERS[key] = attr if callable(attr) else None
    return _MEMBERS[key]


def real(profile: Profile) -> Profile:
    """The profile itself, unwrapped if it is a ``Reads``."""
    return profile.profile if isinstance(profile, Reads) else profile


def note(profile: Profile, reads: Sequence[tuple[str, Any]]) -> None:
    """Keep ``reads`` (made by an earlier run under an equal profile) as reads of
    ``profile`` if it is a ``Reads``: a kept result stands for the reads that made it."""
    if isinstance(profile, Reads):
        for name, value in reads:
            profile.read.setdefault(name, value)


def same_reads(profile: Profile, reads: ReadSet) -> bool:
    """Whether ``profile`` holds every value of ``reads``."""
    return all(getattr(profile, name) == value for name, value in reads)
