"""The scenario runner: each step runs on the real cluster and on the model in lockstep.

For every step: the model predicts the set of allowed settled states; the harness acts;
the observer polls (bounded) until the observed state is one the model allows or the
deadline passes. Each step gets a verdict (CONFORMS, DIVERGES with the first differing
field, UNSUPPORTED with the missing feature, ERROR for harness faults), recorded in the
history with the prediction and the observations. The first non-conforming step ends
the run: after it the model no longer knows the cluster's state.

Cut by job: ``core`` (the Runner: the run's start, the step loop, its end), ``step`` (one
step on the cluster), ``settle`` (polling a step until its observed state is allowed),
``final_read`` (the final read, data checks, recovery read, metadata archive),
``traffic`` (the traffic clients across the run), ``judging`` (the three axes),
``record`` (what is recorded and printed of a step), ``state`` (what a run holds, the
constructor), ``requirements`` (build against scenario: gap, ELR, profile), ``results``
(StepResult, RunResult).
"""

from harness.run.runner.core import Runner
from harness.run.runner.requirements import choose_profile, elr_enabled, requirement_gap
from harness.run.runner.results import RunResult, StepResult
from harness.run.runner.state import DEFAULT_STEP_TIMEOUT_S
from harness.run.runner.step import step_mapping

__all__ = [
    "DEFAULT_STEP_TIMEOUT_S",
    "RunResult",
    "Runner",
    "StepResult",
    "choose_profile",
    "elr_enabled",
    "requirement_gap",
    "step_mapping",
]
