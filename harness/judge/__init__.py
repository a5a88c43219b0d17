"""Judging: every comparison and check over a run's recorded history, the same code online
(the runner, at each step) and offline (``audit``): the lockstep model, the three axes,
data checks, the trace check, the headline."""
