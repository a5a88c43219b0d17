"""The upgrade-path scenarios of a certify campaign, made from templates with the two builds
(docs/CERTIFY.md "Upgrade path").

- ``upgrade-OLD-to-NEW-traffic``: fixtures/scenarios/rolling-upgrade-3-9-to-4-0-to-4-4-traffic.yaml
  with one hop: a cluster born on OLD (3 brokers, 3 controllers) upgraded node by node to NEW,
  the controllers first, under two idempotent acks=all producers and a consumer, the
  partition leader killed in the mixed window (some brokers on OLD, the controllers on NEW);
- ``upgrade-OLD-to-NEW-lifecycle``: born on OLD, the controllers upgraded to NEW, then the
  lifecycle steps in the mixed cluster under traffic (the topic deleted and created again, a
  metadata snapshot), then the brokers upgraded;
- ``downgrade-NEW-to-OLD-traffic``: the first one the other way round, born on NEW and
  rolled back to OLD, made only when the model says Kafka allows it
  (harness/run/runner/requirements.py ``downgrade_gap``: no node below the birth build's
  metadata.version); otherwise the part records why not.

Each is written into the campaign directory (upgrade/scenarios/) and loaded by the same
loader as any scenario file, so a bad template fails with file:line before any cluster.
"""

from __future__ import annotations

from pathlib import Path

_HEAD = """version: 1
name: {name}
description: >
  Made by kafka-chaos certify (harness/certify/upgrade.py) from
  fixtures/scenarios/rolling-upgrade-3-9-to-4-0-to-4-4-traffic.yaml: {what}
seed: {seed}
requires:
  min_version: "{birth}"
  max_version: "{birth}"
cluster:
  brokers: 3
  controllers: 3
  broker_config:
    broker.session.timeout.ms: "15000"
topic:
  name: t
  replicas: [1, 2, 3]
  min_insync_replicas: 2
traffic:
  producers:
    - {{count: 2, rate: 200, acks: all}}
  consumers:
    - {{mode: assign}}
steps:
"""

_ROLLING = """  - upgrade: {{controller: 100, version: "{to}"}}
  - upgrade: {{controller: 101, version: "{to}"}}
  - upgrade: {{controller: 102, version: "{to}"}}
  - upgrade: {{broker: 3, version: "{to}"}}
  - kill: {{broker: 1}}                          # the leader, still on {birth}: mixed window
  - restart: {{broker: 1}}
  - await: {{isr: [1, 2, 3], timeout_s: 60}}
  - upgrade: {{broker: 1, version: "{to}"}}
  - upgrade: {{broker: 2, version: "{to}"}}       # every node on {to}
  - await: {{isr: [1, 2, 3], timeout_s: 60}}
"""

_LIFECYCLE = """  - upgrade: {{controller: 100, version: "{to}"}}
  - upgrade: {{controller: 101, version: "{to}"}}
  - upgrade: {{controller: 102, version: "{to}"}}  # controllers on {to}, brokers on {birth}
  - sleep: {{seconds: 3}}
  - delete_topic: {{}}
  - await: {{replicas: [], isr: []}}
  - create_topic: {{}}
  - await: {{isr: [1, 2, 3], timeout_s: 60}}
  - snapshot: {{timeout_s: 60}}
  - upgrade: {{broker: 1, version: "{to}"}}
  - upgrade: {{broker: 2, version: "{to}"}}
  - upgrade: {{broker: 3, version: "{to}"}}       # every node on {to}
  - await: {{isr: [1, 2, 3], timeout_s: 60}}
"""


def scenario_texts(old: str, new: str) -> dict[str, tuple[str, str]]:
    """name -> (birth role, YAML text): the upgrade scenarios and the downgrade candidate."""
    out = {}
    o, n = old.replace(".", "-"), new.replace(".", "-")  # names are [a-z0-9-]+
    for name, birth, to, body, what, seed in (
            (f"upgrade-{o}-to-{n}-traffic", old, new, _ROLLING,
             f"a cluster born on {old} rolled to {new} under traffic, the leader killed in "
             "the mixed window.", 4601),
            (f"upgrade-{o}-to-{n}-lifecycle", old, new, _LIFECYCLE,
             f"born on {old}, controllers on {new}; topic deleted and created again and a "
             f"snapshot in the mixed cluster under traffic; then the brokers on {new}.", 4602),
            (f"downgrade-{n}-to-{o}-traffic", new, old, _ROLLING,
             f"a cluster born on {new} rolled back to {old} under traffic.", 4603)):
        text = _HEAD.format(name=name, what=what, seed=seed, birth=birth) + \
            body.format(to=to, birth=birth)
        out[name] = ("old" if birth == old else "new", text)
    return out


def write_scenarios(directory: Path, old: str, new: str) -> list[tuple[Path, str]]:
    """The files (path, birth role) under ``directory``, rewritten every call (pure text of
    the two versions, so a resumed campaign writes the same)."""
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for name, (role, text) in scenario_texts(old, new).items():
        path = directory / f"{name}.yaml"
        path.write_text(text)
        out.append((path, role))
    return out
