"""The release verdict once the data checks are in (harness.judge.compare.with_checks), the
same online (runner) and offline (audit). A failed check names itself when no step gave a
reason: a fuzz signature then names the check, not "other" (seen with fuzz --traffic: a
`gaps` failure signed `release DIVERGES [other]`)."""

from __future__ import annotations

from harness.judge.compare import with_checks
from harness.search.fuzz.outcome import _reason_name


def test_a_failed_check_diverges_and_names_itself() -> None:
    checks = [{"name": "acked_lost", "ok": True}, {"name": "gaps", "ok": False}]
    verdict, reason = with_checks("CONFORMS", "", checks)
    assert (verdict, reason) == ("DIVERGES", "check gaps")
    assert _reason_name(reason) == "check gaps"


def test_a_step_reason_comes_first() -> None:
    checks = [{"name": "gaps", "ok": False}]
    assert with_checks("DIVERGES", "isr: predicted [1], observed [1, 2]", checks) == (
        "DIVERGES", "isr: predicted [1], observed [1, 2]")


def test_checks_that_pass_change_nothing() -> None:
    checks = [{"name": "gaps", "ok": True}]
    assert with_checks("CONFORMS", "", checks) == ("CONFORMS", "")
    assert with_checks("UNSUPPORTED", "a step is unsupported", checks) == (
        "UNSUPPORTED", "a step is unsupported")
