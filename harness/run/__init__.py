"""Running and judging scenarios: the scenario file loader (scenario), a chaos session
(session), step execution (steps), the runner in lockstep with the model (runner), the
state sampled and checked while steps run (sampler), the three judging axes (judges), data
checks over a history (datachecks), trace validation of the metadata log (trace_check) and
the offline re-judging of a finished run (audit).

May import: reference, harness.infra, harness.cluster, harness.nemesis, harness.client.
"""
