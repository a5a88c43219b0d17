"""Classification of each de-duplicated failure of a build (docs/HUNT.md "Classification").

**Classification** (``classify``) of each de-duplicated failure of a build, from its
signature (the axes not as expected) and, for an axis not in it, the first failing run's
own verdict (run.json); the first rule that applies decides:

1. ``harness-error``: the run ended in ERROR (the runner's ERROR verdict or an exception
   of the run itself; de-duplicated by the error's first line, numbers blanked), or an axis
   of the signature is ERROR, INCOMPLETE or UNSUPPORTED.
2. ``known-bug``: release DIVERGES by a trace rule that names a known bug of the build
   (reference/releases/known_bugs.py: reported, measured on the releases it affects). The
   ``why`` names the bug and any other names the signature holds: a second cause showing
   beside a known bug would look the same, so the shrunk schedule is the thing to read.
3. ``model-gap``, hidden records: release DIVERGES and safety UNSAFE only by
   ``acked-record-hidden`` (acks=all records the final read missed and the recovery read
   found once the cluster was healed, harness/run/recovery.py) on a build whose profile
   carries ``new-leader-hwm-lag``: the broker's HWM lag outlasted the model's window
   (docs/KNOWN-DEVIATIONS.md#new-leader-hwm-lag), nothing was lost.
   ``kafka-candidate``: release DIVERGES and safety UNSAFE otherwise: the broker left the
   build's documented behaviour and broke what no profile relaxes.
4. ``cited-deviation``: release as expected, safety UNSAFE, kip DEVIATES, and every
   deviation the kip axis adopted is one of the build's catalog deviations
   (reference/releases/catalog.py): the build's profile predicted the unsafe outcome and a
   cited deviation explains it (e.g. no ELR: data lost with min ISR - 1 unclean shutdowns).
5. ``model-gap``: (a) release as expected, safety UNSAFE, kip CONFORMS: the KIP's own model
   predicts what the safety checks forbid, so the model or a check is wrong; or (b) release
   DIVERGES, safety as expected, kip CONFORMS or DEVIATES: the KIP (with cited deviations)
   explains what the broker did and the build's profile does not: the profile is wrong (the
   fix needs a citation).
   (c) ``model-gap``, replication race: release (and kip, if it failed) DIVERGES on ``hwm``
   alone, safety as expected, and the first run (``replication_race``) diverged on an HWM
   at a step after acks 0/1 records: a follower had or lacked records the leader held
   above a frozen HWM when a fault or an election came, which the observer cannot see
   (docs/KNOWN-DEVIATIONS.md#new-leader-hwm-lag, gaps (2a) and (2b)).
   (d) ``model-gap``, HWM lag outlived: the same signature, the observed HWM below every
   predicted one (``hwm_lag_outlived``), on a build whose profile carries
   ``new-leader-hwm-lag``: a leader still held an HWM it learned a fetch round late after
   the model's one-step window (gap 1 of that entry), nothing lost.
6. ``kafka-candidate``: release DIVERGES, safety as expected, kip KIP-DIVERGES: neither the
   build's profile nor the KIP with any cited deviation explains it (it matches no
   deviation). The class says so; it may still be a behaviour the KIP allows and the model
   lacks, which only reading the KIP can tell (the ``why`` says that too).
7. ``undecided``: anything else (e.g. release as expected but kip KIP-DIVERGES: the judges
   disagree; the first run's kip verdict unreadable), named as undecided with the verdicts,
   never guessed.

Whether the failure reproduced (``status``: reproducible, flaky, ...) is shown beside the
class, never folded into it. Also the readers of a run's kip axis (``kip_of_run``) and the
key of a harness error (``error_key``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.search.shrink import Signature
from reference.releases.deviations import BY_ID, DOC
from reference.releases.known_bugs import KnownBug, affecting

CLASSES = ("known-bug", "cited-deviation", "model-gap", "harness-error", "kafka-candidate",
           "undecided")
_NOT_JUDGED = ("ERROR", "INCOMPLETE", "UNSUPPORTED")
#: The cited deviation under which acked records may be hidden by a lagging HWM (looked up
#: in the catalog, so a renamed deviation fails at import, not silently here).
HWM_LAG = BY_ID["new-leader-hwm-lag"].id


@dataclass(frozen=True)
class Classification:
    cls: str
    why: str


def build_deviation_ids(version: str) -> frozenset[str]:
    """The catalog deviations of a build's profiles (both ELR settings where it has two)."""
    from harness.cluster.builds import version_tuple
    from reference.releases.catalog import get_profile, profile_for_build
    from reference.releases.deviations import deviations_of
    out: set[str] = set()
    for elr in (True, False):
        profile = get_profile(profile_for_build(version_tuple(version), elr))
        for on in (True, False):
            try:
                out |= {d.id for d in deviations_of(profile, on)}
            except ValueError:
                continue
    return frozenset(out)


def classify(signature: Signature | None, error: str | None, kip: str | None,
             kip_deviations: Sequence[str], build_deviations: Iterable[str],
             build_bugs: Sequence[KnownBug] = (), race: str | None = None,
             lag: str | None = None) -> Classification:
    """The class of one failure (module docstring, rules 1-7). ``kip``: the first run's kip
    verdict (None: unreadable); ``kip_deviations``: the deviations it adopted;
    ``build_bugs``: the known bugs of the build (known_bugs_of); ``race``: what
    ``replication_race`` read in the first run (None: not that shape); ``lag``: what
    ``hwm_lag_outlived`` read there."""
    if error is not None:
        return Classification("harness-error", f"the run ended in ERROR: {error}")
    sig = {axis: verdict for axis, verdict, _ in signature or ()}
    bad = sorted(a for a, v in sig.items() if v in _NOT_JUDGED)
    if bad:
        return Classification("harness-error", "axis " + ", ".join(
            f"{a} {sig[a]}" for a in bad) + ": the harness could not judge the run")
    release, safety = sig.get("release"), sig.get("safety")
    kip_v = sig.get("kip", kip)
    said = f"(release {release or 'as expected'}, kip {kip_v or 'unreadable'}, safety " \
           f"{safety or 'as expected'})"
    known = _known_bug(signature or (), build_bugs)
    if release == "DIVERGES" and known is not None:
        return Classification("known-bug", f"{known} {said}")
    if release == "DIVERGES" and _only_hidden(signature or ()) and \
            HWM_LAG in frozenset(build_deviations):
        return Classification("model-gap", "acks=all records hidden, not lost: the final read "
                              "missed them and the recovery read found them once the cluster "
                              "was healed; the HWM stood below them longer than the model's "
                              f"lag window ({DOC}#{HWM_LAG}) {said}")
    if release == "DIVERGES" and safety == "UNSAFE":
        return Classification("kafka-candidate", f"the broker left the build's profile and "
                              f"broke a safety rule no profile relaxes {said}")
    if release is None and safety == "UNSAFE" and kip_v == "DEVIATES":
        outside = sorted(set(kip_deviations) - set(build_deviations))
        if kip_deviations and not outside:
            return Classification("cited-deviation", "the build's profile predicted it; cited "
                                  f"deviation(s) {', '.join(kip_deviations)} explain it {said}")
        return Classification("undecided", "kip DEVIATES by " + (
            f"{', '.join(outside)}, not a catalog deviation of the build" if outside
            else "no named deviation") + f" {said}")
    if release is None and safety == "UNSAFE" and kip_v == "CONFORMS":
        return Classification("model-gap", "the KIP's model predicts an outcome the safety "
                              f"checks forbid: the model or a check is wrong {said}")
    if release == "DIVERGES" and safety is None and kip_v in ("CONFORMS", "DEVIATES"):
        return Classification("model-gap", "the KIP (with cited deviations) explains the broker, "
                              f"the build's profile does not: the profile is wrong {said}")
    if release == "DIVERGES" and safety is None and race is not None and _only_hwm(signature):
        return Classification("model-gap", f"replication race: {race}; a follower had or "
                              "lacked records the leader held above a frozen HWM when the "
                              "next fault or election came, which no observation shows "
                              f"({DOC}#{HWM_LAG}, gaps 2a/2b) {said}")
    if release == "DIVERGES" and safety is None and lag is not None and _only_hwm(signature) \
            and HWM_LAG in frozenset(build_deviations):
        return Classification("model-gap", f"HWM lag outlived the model's window: {lag}; a "
                              "leader kept an HWM it learned as a follower a fetch round "
                              f"late, which no observation shows ({DOC}#{HWM_LAG}, gap 1) "
                              f"{said}")
    if release == "DIVERGES" and safety is None and kip_v == "KIP-DIVERGES":
        return Classification("kafka-candidate", "neither the build's profile nor the KIP with "
                              "any cited deviation explains it (no deviation matches); a "
                              "behaviour the KIP allows and the model lacks would look the "
                              f"same: read the KIP before filing {said}")
    return Classification("undecided", f"no classification rule decides these verdicts {said}")


def _only_hidden(signature: Signature) -> bool:
    """Whether the safety axis failed only because acked records were hidden: missed by the
    final read, found by the recovery read (harness/run/recovery.py)."""
    safety = next((names for axis, verdict, names in signature
                   if axis == "safety" and verdict == "UNSAFE"), ())
    return set(safety) == {"acked-record-hidden"}


def _only_hwm(signature: Signature | None) -> bool:
    """Whether every failing axis names the HWM and nothing else."""
    return bool(signature) and all(set(names) == {"hwm"} for _, _, names in signature or ())


_HWM_REASON = re.compile(r"^(?:step (\d+): )?hwm: predicted one of \[([\d, ]+)\], observed (\d+)$")


def _hwm_divergence(run_dir: Path | None) -> tuple[str, bool, int, list[int]] | None:
    """A run's kip axis diverging on the HWM alone at step N (``step N: hwm: predicted one
    of [...], observed M``, run.json): what was read (``step N observed HWM M, below|above|
    between the predicted [...]``), whether a produce with acks 0 or 1 came before step N
    (scenario.yaml), the observed HWM and the predicted ones; None otherwise."""
    if run_dir is None:
        return None
    try:
        meta = json.loads((run_dir / "run.json").read_text())
        reason = str(meta["axes"]["kip"]["reason"] or meta["axes"]["release"]["reason"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    m = _HWM_REASON.match(reason.strip())
    if m is None or m.group(1) is None:
        return None
    step = int(m.group(1))
    from harness.scenario.loader import load_scenario
    from reference.model.steps import Produce
    try:
        steps = load_scenario(run_dir / "scenario.yaml").steps
    except Exception:  # noqa: BLE001 - an unreadable scenario is no evidence
        return None
    acks = {s.step.acks for s in steps[: step - 1] if isinstance(s.step, Produce)}
    predicted = [int(x) for x in m.group(2).split(",")]
    observed = int(m.group(3))
    side = "above" if observed > max(predicted) else "below" if observed < min(predicted) \
        else "between"
    said = f"step {step} observed HWM {observed}, {side} the predicted [{m.group(2)}]"
    return said, bool({"0", "1"} & acks), observed, predicted


def replication_race(run_dir: Path | None) -> str | None:
    """The replication-race shape of a run (classify rule 5c): an HWM-only divergence at a
    step after a produce with acks 0 or 1 (``_hwm_divergence``); what was read, or None."""
    d = _hwm_divergence(run_dir)
    if d is None or not d[1]:
        return None
    return d[0] + ", after acks 0/1 records"


def hwm_lag_outlived(run_dir: Path | None) -> str | None:
    """The shape of gap (1) of new-leader-hwm-lag (classify rule 5d): an HWM-only
    divergence whose observed HWM is below every predicted one (a leader still holding an
    HWM it learned before the model's lag window closed); what was read, or None."""
    d = _hwm_divergence(run_dir)
    if d is None or d[2] >= min(d[3]):
        return None
    return d[0]


def known_bugs_of(version: str) -> tuple[KnownBug, ...]:
    from harness.cluster.builds import version_tuple
    return affecting(version_tuple(version))


def _known_bug(signature: Signature, bugs: Sequence[KnownBug]) -> str | None:
    """Which known bug the release axis's trace rules name, and what else the signature
    says; None when no known bug of the build is named."""
    release = next((names for axis, _, names in signature if axis == "release"), ())
    rules = frozenset(n.removeprefix("trace:") for n in release if n.startswith("trace:"))
    named = [b for b in bugs if b.trace_rules & rules]
    if not named:
        return None
    explained = {f"trace:{r}" for b in named for r in b.trace_rules}
    others = sorted({n for _, _, names in signature for n in names} - explained)
    return ("; ".join(f"known bug {b.id} ({b.reference}): {b.summary}" for b in named)
            + (f"; also named: {', '.join(others)}" if others else ""))


def kip_of_run(run_dir: Path | None) -> tuple[str | None, tuple[str, ...]]:
    """The kip axis verdict of a run (run.json) and the deviations it adopted."""
    if run_dir is None:
        return None, ()
    try:
        return kip_of_meta(json.loads((run_dir / "run.json").read_text()))
    except (OSError, ValueError):
        return None, ()


def kip_of_meta(meta: Mapping[str, Any]) -> tuple[str | None, tuple[str, ...]]:
    """``kip_of_run`` from a run.json already read."""
    try:
        kip = meta["axes"]["kip"]
        return str(kip["verdict"]), tuple(str(d["deviation"]) for d in kip.get("details") or ()
                                          if isinstance(d, Mapping) and "deviation" in d)
    except (KeyError, TypeError):
        return None, ()


def error_key(error: str) -> str:
    line = (error or "ERROR").strip().splitlines()[0] if (error or "").strip() else "ERROR"
    return "ERROR: " + re.sub(r"\d+", "N", line)[:160]
