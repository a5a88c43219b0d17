"""Shrinking a failing schedule (issue 13 item 2), independent of how a schedule is run.

``shrink`` takes the failing schedule, its failure signature, a function that runs a
schedule and returns its signature (the fuzz campaign's: a fresh cluster, the normal
Runner and every judge; tests inject a fake), and a function that repairs a candidate
into a schedule the generator's rules allow (or None). It tries, greedily and in this
order, smaller schedules:

1. drop a chunk of steps (halves, quarters, ... single steps: ddmin's complements),
   with the steps that dropping makes invalid (a lose_unflushed whose kill went) dropped
   too by the repair;
2. merge two adjacent produces of the same acks into one;
3. lower counts: a produce's count to 1, else to half; a lose_unflushed offset to 0.

A final ``consume`` is never dropped (see ``candidates``).

A candidate is kept when its run gives the same signature; the search then starts over
from it. It stops at a schedule no candidate improves (1-minimal for these moves), or
when the attempts or the time run out (the best schedule so far is the result).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from reference.model import steps as S

Steps = tuple[Any, ...]
#: One entry per axis not as expected: (axis, verdict, sorted rule/check names).
Signature = tuple[tuple[str, str, tuple[str, ...]], ...]


@dataclass
class Attempt:
    steps: Steps
    signature: Signature | None
    kept: bool
    seconds: float
    note: str = ""


@dataclass
class ShrinkResult:
    original: Steps
    steps: Steps
    signature: Signature
    attempts: list[Attempt] = field(default_factory=list)
    stopped: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"original_steps": len(self.original), "steps": len(self.steps),
                "signature": [list(map(_jsonable, s)) for s in self.signature],
                "attempts": [{"steps": len(a.steps), "kept": a.kept, "seconds": round(a.seconds, 1),
                              "signature": None if a.signature is None
                              else [list(map(_jsonable, s)) for s in a.signature],
                              "note": a.note} for a in self.attempts],
                "stopped": self.stopped, "seconds": round(self.seconds, 1)}


def _jsonable(x: Any) -> Any:
    return list(x) if isinstance(x, tuple) else x


def candidates(steps: Steps) -> list[tuple[Steps, str]]:
    """Smaller schedules to try, most reducing first, each with what it changed. A final
    ``consume`` stays (the recovery tail's read): it is where the end state is read and
    sampled, and a schedule that ends on the fault leaves the sampler no time to see it
    (a 3.9.1 minimal schedule ending with its restart reproduced the loss without the
    sampled HWM drop)."""
    if steps and isinstance(steps[-1], S.Consume):
        return [(c + steps[-1:], what) for c, what in candidates(steps[:-1])]
    n = len(steps)
    out: list[tuple[Steps, str]] = []
    size = n // 2
    sizes: list[int] = []
    while size >= 1:
        sizes.append(size)
        size //= 2
    if 1 not in sizes and n >= 1:
        sizes.append(1)
    for size in sizes:
        for start in range(0, n, size):
            stop = min(start + size, n)
            what = (f"drop step {start + 1}" if stop - start == 1
                    else f"drop steps {start + 1}-{stop}")
            out.append((steps[:start] + steps[stop:], what))
    for i in range(n - 1):
        a, b = steps[i], steps[i + 1]
        if isinstance(a, S.Produce) and isinstance(b, S.Produce) and a.acks == b.acks:
            merged = replace(a, count=a.count + b.count, record_ids=())
            out.append((steps[:i] + (merged,) + steps[i + 2:], f"merge produces {i + 1}-{i + 2}"))
    for i, s in enumerate(steps):
        if isinstance(s, S.Produce) and s.count > 1:
            out.append((steps[:i] + (replace(s, count=1),) + steps[i + 1:],
                        f"produce {i + 1}: count 1"))
            if s.count > 3:
                out.append((steps[:i] + (replace(s, count=s.count // 2),) + steps[i + 1:],
                            f"produce {i + 1}: count {s.count // 2}"))
        if isinstance(s, S.LoseUnflushed) and s.offset > 0:
            out.append((steps[:i] + (replace(s, offset=0),) + steps[i + 1:],
                        f"lose_unflushed {i + 1}: offset 0"))
    return out


def shrink(steps: Sequence[Any], target: Signature,
           attempt: Callable[[Steps], Signature | None],
           repair: Callable[[Steps], Steps | None],
           max_attempts: int = 30, budget_s: float = math.inf,
           clock: Callable[[], float] = time.monotonic,
           on_attempt: Callable[[Attempt], None] = lambda a: None,
           prefer: Callable[[Steps], bool] | None = None) -> ShrinkResult:
    """Reduce ``steps`` keeping ``target`` (see the module's doc). ``prefer``: candidates
    it holds for are tried first (the model's guess that one keeps the failure; it only
    orders the runs, the run decides)."""
    t0 = clock()
    best: Steps = tuple(steps)
    result = ShrinkResult(best, best, target)
    tried: set[Steps] = {best}
    improved = True
    while improved:
        improved = False
        todo: list[tuple[Steps, str]] = []
        for cand, what in candidates(best):
            fixed = repair(cand)
            if fixed is None or not fixed or fixed in tried or len(fixed) > len(best) \
                    or (len(fixed) == len(best) and _weight(fixed) >= _weight(best)) \
                    or any(fixed == t for t, _ in todo):
                continue
            todo.append((fixed, what))
        if prefer is not None:
            todo.sort(key=lambda c: not prefer(c[0]))  # stable: preferred ones first
        for fixed, what in todo:
            if len(result.attempts) >= max_attempts:
                result.stopped = f"attempts exhausted ({max_attempts})"
                break
            if clock() - t0 >= budget_s:
                result.stopped = f"time exhausted ({budget_s:.0f} s)"
                break
            tried.add(fixed)
            a0 = clock()
            sig = attempt(fixed)
            kept = sig == target
            att = Attempt(fixed, sig, kept, clock() - a0, what)
            result.attempts.append(att)
            on_attempt(att)
            if kept:
                best, improved = fixed, True
                break
        if result.stopped:
            break
    if not result.stopped:
        result.stopped = "no smaller schedule keeps the signature"
    result.steps, result.seconds = best, clock() - t0
    return result


def _weight(steps: Steps) -> int:
    """Size beyond the step count: records produced and offsets cut (lower is smaller)."""
    return sum(s.count for s in steps if isinstance(s, S.Produce)) + \
        sum(s.offset for s in steps if isinstance(s, S.LoseUnflushed))
