"""Running: a scenario executed on a session in lockstep with the model (``runner``), the
state sampled while steps run (``sampler``), several runs at once (``parallel``) and runs
spread over Spark executors (``fanout``). Executing records events; the judging is
``harness.judge``'s.
"""
