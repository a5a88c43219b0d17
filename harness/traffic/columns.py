"""Compact memory for the in-process checks: what they keep grows with the distinct
record ids and offsets of a history, never with its events, and costs a few bytes each.

- `Names` numbers strings (record ids, producers) and (topic, partition) pairs densely
  from 0, so that per-id facts are array slots instead of dict entries.
- `Column` is an int array indexed by such a number (8 bytes a slot, absent = -1);
  `Times` the same for times.
- `OffsetMap` maps a partition's offsets to id numbers: an array while the offsets are
  dense (Kafka gives consecutive ones), a dict for the few that are not.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

ABSENT = -1
#: how far past its end an OffsetMap's array grows for one offset (else: the dict)
DENSE_SLACK = 1 << 16

K = TypeVar("K", bound=Hashable)


class Names(Generic[K]):
    """Numbers keys densely from 0 in the order first seen."""

    __slots__ = ("_numbers", "keys")

    def __init__(self) -> None:
        self._numbers: dict[K, int] = {}
        self.keys: list[K] = []

    def number(self, key: K) -> int:
        number = self._numbers.get(key)
        if number is None:
            number = self._numbers[key] = len(self.keys)
            self.keys.append(key)
        return number

    def find(self, key: K) -> int:
        return self._numbers.get(key, ABSENT)

    def __len__(self) -> int:
        return len(self.keys)


class Column:
    """int -> int over dense non-negative keys, ABSENT where never set."""

    __slots__ = ("_values",)

    def __init__(self, typecode: str = "q") -> None:
        self._values = array(typecode)

    def __getitem__(self, key: int) -> int:
        return self._values[key] if key < len(self._values) else ABSENT

    def __setitem__(self, key: int, value: int) -> None:
        values = self._values
        if key < len(values):
            values[key] = value
        elif key == len(values):
            values.append(value)
        else:
            values.extend(array(values.typecode, [ABSENT]) * (key - len(values)))
            values.append(value)

    def __len__(self) -> int:
        return len(self._values)


class Times:
    """int -> a time (the history's `t`, seconds) over dense non-negative keys, None where
    never set: 8 bytes a slot, NaN for absent."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values = array("d")

    def __getitem__(self, key: int) -> float | None:
        value = self._values[key] if key < len(self._values) else _NAN
        return None if value != value else value  # NaN is the one value unequal to itself

    def __setitem__(self, key: int, value: float) -> None:
        values = self._values
        if key >= len(values):
            values.extend(array("d", [_NAN]) * (key + 1 - len(values)))
        values[key] = value


_NAN = float("nan")


class OffsetMap:
    """offset -> id number for one partition, ABSENT where never set."""

    __slots__ = ("_base", "_dense", "_sparse")

    def __init__(self) -> None:
        self._base: int | None = None
        self._dense = array("q")
        self._sparse: dict[int, int] = {}

    def get(self, offset: int) -> int:
        if self._base is not None and 0 <= offset - self._base < len(self._dense):
            value = self._dense[offset - self._base]
            if value != ABSENT:
                return value
        return self._sparse.get(offset, ABSENT)

    def set(self, offset: int, value: int) -> None:
        if offset in self._sparse:  # set far ahead once, before the array reached it
            self._sparse[offset] = value
            return
        if self._base is None:
            self._base = offset
        slot = offset - self._base
        if 0 <= slot < len(self._dense):
            self._dense[slot] = value
        elif 0 <= slot < len(self._dense) + DENSE_SLACK:
            self._dense.extend(array("q", [ABSENT]) * (slot - len(self._dense)))
            self._dense.append(value)
        else:
            self._sparse[offset] = value

    def items(self) -> Iterator[tuple[int, int]]:
        base = self._base or 0
        for slot, value in enumerate(self._dense):
            if value != ABSENT:
                yield base + slot, value
        yield from self._sparse.items()
