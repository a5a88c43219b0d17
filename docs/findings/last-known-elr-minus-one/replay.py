"""Replay a differential event list on a build's own controller classes (the `kafka-chaos
diff` driver, one lane: brokers 1-5 and 9, min ISR 2), printing each event, both axes'
verdicts, the partitions it changed and the findings.

    cd REPO && PYTHONPATH=. python docs/findings/last-known-elr-minus-one/replay.py \\
        docs/findings/last-known-elr-minus-one/events.json 4.3.1
"""
import json
import sys
from pathlib import Path

from harness.cluster import builds
from harness.differential.campaign import Config
from harness.differential.campaign.session import Session, settings_for

doc = json.loads(Path(sys.argv[1]).read_text())
build = builds.resolve(sys.argv[2] if len(sys.argv) > 2 else "4.3.1", None)
s = Session(build, settings_for(1, Config(seed=0, budget_s=0, min_isr=2), elr=doc["elr"]))
try:
    for i, e in enumerate(doc["events"]):
        a = s.send([e])[0]
        rep = s.comparator.step(e, a)
        print(i, json.dumps(e), "ok" if a.ok else a.error_name, rep.release, rep.kip)
        for k, v in sorted(a.partitions.items()):
            print("    ", k, {f: v[f] for f in ("leader", "leaderEpoch", "partitionEpoch",
                                                 "replicas", "isr", "elr", "lastKnownElr")})
        for f in rep.findings:
            print("   FINDING", f.signature, f.detail[:200])
finally:
    s.close()
