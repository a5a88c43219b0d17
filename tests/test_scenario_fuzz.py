"""Fuzzing the scenario loader (issue 16): bad input never crashes or hangs.

Every input, arbitrary YAML values put into real scenarios, arbitrary bytes, and random
edits of the files in fixtures/scenarios, either loads, and then the model (`kafka-chaos
predict`'s code path) and the runner's pre-checks accept it too, or is rejected with a
``ScenarioError`` reading ``file:line: reason``. Never another exception, never more than
2 s or 500 MB to load a file under 1 MB.

The example budget is small for CI (200 examples in all, a few seconds); set
``KAFKA_CHAOS_FUZZ_EXAMPLES=10000`` for the bench run (bench/RESULTS-fuzz.md).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import resource
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import model as model_cli
from harness.cluster.builds import Build, Features
from harness.infra.history import new_run_id
from harness.judge.compare import shape_of
from harness.run import runner
from harness.scenario.loader import MAX_FILE_BYTES, ScenarioError, load_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "fixtures" / "scenarios"
FIXTURES = sorted(SCENARIOS.glob("*.yaml"))
TEXTS = [f.read_text(encoding="utf-8") for f in FIXTURES]
EXAMPLES = int(os.environ.get("KAFKA_CHAOS_FUZZ_EXAMPLES", "200"))
#: CPU seconds of this process, not wall time: the bound is on the loader's work, which must
#: not depend on what else the machine runs (under a suite's load wall time doubled).
LOAD_SECONDS = 2.0
LOAD_BYTES = 500 * 2**20
#: What the bench run reports (printed at the end of the module with -s).
STATS: dict[str, Any] = {"inputs": 0, "accepted": 0, "rejected": 0, "max_load_s": 0.0,
                         "max_model_s": 0.0}

FUZZ = settings(max_examples=max(1, EXAMPLES // 5), deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture,
                                       HealthCheck.filter_too_much])


def _build(version: str, elr: bool, elr_default_on: bool) -> Build:
    features = Features(elr=elr, elr_default_on=elr_default_on, describe_topic_partitions=True,
                        hwm_rule=True, unclean_recovery=False, kip1303=False,
                        previous_broker_epoch=True)
    return Build(version, f"maven:{version}", Path("/nonexistent"), features)


BUILDS = (_build("3.9.1", False, False), _build("4.0.2", True, False),
          _build("4.3.1", True, True))


# -- the property ----------------------------------------------------------------------------
def check(data: bytes, tmp_path: Path) -> None:
    """The property every input must have."""
    path = tmp_path / "fuzzed.yaml"
    path.write_bytes(data)
    STATS["inputs"] += 1
    try:
        scenario = _timed_load(path)
    except ScenarioError as e:
        STATS["rejected"] += 1
        _check_message(str(e), str(path), data)
        return
    STATS["accepted"] += 1
    _model_accepts(path)
    _runner_accepts(scenario)


def _timed_load(path: Path) -> Any:
    started = time.process_time()
    rss_before = _rss_bytes()
    try:
        return load_scenario(path)
    finally:
        took = time.process_time() - started
        # The process's peak RSS bounds this load's peak from above; measure exactly (with
        # tracemalloc, which slows allocation-heavy code ~6x) only when that bound is high.
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_before
        if peak >= LOAD_BYTES:
            peak = _traced_peak(path)
        STATS["max_load_s"] = max(STATS["max_load_s"], took)
        if path.stat().st_size <= MAX_FILE_BYTES:
            assert took < LOAD_SECONDS, f"loading took {took:.2f} CPU-s"
            assert peak < LOAD_BYTES, f"loading peaked at {peak / 2**20:.0f} MB"


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _traced_peak(path: Path) -> int:
    tracemalloc.start()
    try:
        load_scenario(path)
    except ScenarioError:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def _check_message(message: str, path: str, data: bytes) -> None:
    m = re.fullmatch(rf"{re.escape(path)}:(\d+): (.+)", message, re.DOTALL)
    assert m is not None, f"not file:line: reason: {message!r}"
    lines = data.count(b"\n") + data.count(b"\r") + 1
    assert 1 <= int(m.group(1)) <= lines, message
    assert m.group(2).strip() and "Traceback" not in message


def _model_accepts(path: Path) -> None:
    """`kafka-chaos predict FILE` and `--json`: the model takes every step."""
    started = time.perf_counter()
    for json_out in (False, True):
        args = argparse.Namespace(scenario=path, profile=None, elr=None, json=json_out)
        assert model_cli.predict_command(args, io.StringIO()) == 0
    STATS["max_model_s"] = max(STATS["max_model_s"], time.perf_counter() - started)


def _runner_accepts(scenario: Any) -> None:
    """What `kafka-chaos run` does before it starts a cluster, on three kinds of build."""
    shape_of(scenario)
    assert len(new_run_id(scenario.name)) < 255
    for build in BUILDS:
        runner.requirement_gap(scenario, build)
        runner.Runner(scenario, build)


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    print(f"\nfuzz: {STATS}")


# -- inputs ----------------------------------------------------------------------------------
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-2**70, 2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30)
           | st.sampled_from(["all", "1", "0", "t", "..", ".", "auto", "kafka-4.1", "4.0.0",
                              "3.9.99", "elr", "!!int", "<<", "=", "~", "x" * 300]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=12) | st.sampled_from(
                          ["broker", "node", "count", "acks", "isr", "timeout_s", "<<"]),
                          inner, max_size=4), max_leaves=12)


def _containers(doc: Any, trail: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield trail
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _containers(v, (*trail, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _containers(v, (*trail, i))


@st.composite
def yaml_value_in_scenario(draw: st.DrawFn) -> bytes:
    """A real scenario with one place (or a new key) set to an arbitrary YAML value."""
    doc = yaml.safe_load(draw(st.sampled_from(TEXTS)))
    trail = draw(st.sampled_from(list(_containers(doc))))
    value = draw(VALUES)
    if not trail:
        doc = value if draw(st.booleans()) else {**doc, draw(st.text(max_size=8)): value}
    else:
        parent = doc
        for k in trail[:-1]:
            parent = parent[k]
        parent[trail[-1]] = value
    flow = draw(st.sampled_from([None, True, False]))
    return yaml.safe_dump(doc, default_flow_style=flow, allow_unicode=draw(st.booleans()),
                          sort_keys=False).encode("utf-8")


YAML_BITS = ["- ", ": ", "[", "]", "{", "}", ", ", "&a ", "*a", "<<: *a", "!!int ", "!!str ",
             "!foo ", "!!timestamp ", "!!binary ", "!!set ", "? ", "|\n", ">-\n", "'", '"',
             "#", "---\n", "...\n", "%YAML 1.1\n", "\t", "\n", "  ", ".nan", ".inf", "-1",
             "99999999999999999999", "1:2:3", "0x1f", "~", "null", "yes", "\\u0000", "\x85",
             "\u2028", "\ufeff", "\x00", "\x1b", "é", "😀"]


@st.composite
def mutated_fixture(draw: st.DrawFn) -> bytes:
    """A fixture with a few random edits: spans cut, lines moved, YAML syntax dropped in."""
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "cut", "number", "dup_line", "swap_lines"]))
        if kind == "insert":
            text = text[:at] + draw(st.sampled_from(YAML_BITS) | st.text(max_size=5)) + text[at:]
        elif kind == "cut":
            text = text[:at] + text[at + draw(st.integers(1, 40)):]
        elif kind == "number":
            text = re.sub(r"\d+", str(draw(st.integers(-10, 10**12))), text,
                          count=draw(st.integers(1, 5)))
        else:
            text = _edit_lines(text, kind, draw(st.integers(0, 999)), draw(st.integers(0, 999)))
    return text.encode("utf-8", errors="surrogatepass")


def _edit_lines(text: str, kind: str, i: int, j: int) -> str:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    i, j = i % len(lines), j % len(lines)
    if kind == "dup_line":
        lines.insert(j, lines[i])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def _pick(draw: st.DrawFn, valid: bool, good: st.SearchStrategy[Any],
          bad: st.SearchStrategy[Any]) -> Any:
    return draw(good if valid or draw(st.booleans()) else bad)


def _subset(draw: st.DrawFn, pool: list[int], least: int = 0) -> list[int]:
    return draw(st.lists(st.sampled_from(pool), min_size=least, max_size=len(pool),
                         unique=True))


VALID_CONFIGS = {"min.insync.replicas": st.integers(1, 4).map(str),
                 "unclean.leader.election.enable": st.sampled_from(["true", "false", "TRUE"]),
                 "unclean.recovery.strategy": st.sampled_from(["Aggressive", "balanced", "None"]),
                 "unclean.recovery.manager.enabled": st.sampled_from(["true", "false"]),
                 "leader.election.eligible.local.log.ms": st.integers(-1, 10**6).map(str),
                 "auto.leader.rebalance.enable": st.sampled_from(["true", "false"]),
                 "log.segment.bytes": st.sampled_from(["1048576", "x y", "é", " a\\b"])}
BAD_CONFIGS = {"min.insync.replicas": st.sampled_from(["0", "-1", "x", "1.5"]),
               "unclean.leader.election.enable": st.sampled_from(["no", "maybe"]),
               "unclean.recovery.strategy": st.just("Sometimes"),
               "listeners": st.just("PLAINTEXT://:9092"), "a=b": st.just("1")}


def _configs(draw: st.DrawFn, valid: bool, least: int = 0) -> dict[str, str]:
    cfg = draw(st.fixed_dictionaries({}, optional=VALID_CONFIGS))
    if not valid:
        cfg.update(draw(st.fixed_dictionaries({}, optional=BAD_CONFIGS)))
    return cfg if len(cfg) >= least else {"auto.leader.rebalance.enable": "false"}


def _steps(draw: st.DrawFn, valid: bool, brokers: list[int], nodes: list[int]
           ) -> list[dict[str, Any]]:
    b = _pick(draw, valid, st.sampled_from(brokers), st.sampled_from([0, 10, 100]))
    kind = draw(st.sampled_from(["produce", "consume", "isolate", "partition", "cut", "heal",
                                 "kill", "kill_lose", "stop", "restart", "local_log",
                                 "alter_config", "elect", "reassign", "await"]))
    if kind == "kill_lose":
        return [{"kill": {"broker": b}},
                {"lose_unflushed": {"broker": b, "offset": _pick(
                    draw, valid, st.integers(0, 20), st.sampled_from([-1, 10**9 + 1]))}}]
    order = draw(st.permutations(nodes))
    cut = draw(st.integers(1, len(nodes) - 1)) if len(nodes) > 1 else 1
    params: dict[str, Any] = {
        "produce": lambda: {"count": _pick(draw, valid, st.integers(1, 50),
                                           st.sampled_from([0, 10**4 + 1])),
                            "acks": _pick(draw, valid, st.sampled_from(["all", 1, 0]),
                                          st.just("2"))},
        "isolate": lambda: {"node": draw(st.sampled_from(nodes))},
        "partition": lambda: {"groups": [order[:cut], order[cut:]]},
        "cut": lambda: {"src": order[0], "dst": order[-1],
                        "direction": draw(st.sampled_from(["both", "oneway"]))},
        "kill": lambda: {"broker": b}, "stop": lambda: {"broker": b},
        "restart": lambda: {"broker": b},
        "local_log": lambda: {"broker": b, "age_ms": draw(st.integers(0, 10**6)),
                              "size_bytes": draw(st.integers(0, 10**6))},
        "alter_config": lambda: {"scope": draw(st.sampled_from(["topic", "cluster"])),
                                 "config": _configs(draw, valid, 1)},
        "elect": lambda: {"type": draw(st.sampled_from(
            ["preferred", "unclean", "longest_log_aggressive", "longest_log_balanced"]))},
        "reassign": lambda: {"replicas": _subset(draw, brokers, 1)},
        "await": lambda: {"leader": draw(st.sampled_from([None, *brokers])),
                          "isr": _subset(draw, brokers), "elr": _subset(draw, brokers),
                          "hwm": draw(st.integers(0, 30)),
                          "timeout_s": _pick(draw, valid, st.sampled_from([1, 0.5, 600]),
                                             st.sampled_from([float("nan"), 0, 601]))},
    }.get(kind, dict)()
    return [{kind: params}]


@st.composite
def generated_scenario(draw: st.DrawFn) -> bytes:
    """Scenarios built from the format's grammar, mostly valid (the model's inputs); one in
    four has invalid values sprinkled in."""
    from reference import PROFILES
    valid = draw(st.integers(0, 3)) > 0
    n = draw(st.integers(1, 9))
    brokers = list(range(1, n + 1))
    controllers = draw(st.sampled_from([1, 3, 5]))
    nodes = brokers + list(range(100, 100 + controllers))
    cluster: dict[str, Any] = {"brokers": n, "controllers": controllers,
                               "broker_config": _configs(draw, valid)}
    if draw(st.booleans()):
        cluster["elr"] = draw(st.booleans())
    steps = [s for _ in range(draw(st.integers(1, 12)))
             for s in _steps(draw, valid, brokers, nodes)]
    doc = {"version": 1, "name": "fuzz", "seed": draw(st.integers(0, 99)),
           "profile": draw(st.sampled_from(["auto", *PROFILES])), "cluster": cluster,
           "topic": {"name": "t", "replicas": _subset(draw, brokers, 1),
                     "min_insync_replicas": draw(st.integers(1, n))},
           "steps": steps}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode()


# -- the tests -------------------------------------------------------------------------------
@FUZZ
@given(data=generated_scenario())
def test_generated_scenarios(data: bytes, tmp_path: Path) -> None:
    check(data, tmp_path)


@FUZZ
@given(data=yaml_value_in_scenario())
def test_arbitrary_yaml_values(data: bytes, tmp_path: Path) -> None:
    check(data, tmp_path)


@FUZZ
@given(data=st.binary(max_size=3000) | st.text(max_size=500).map(
    lambda t: t.encode("utf-8", errors="surrogatepass")))
def test_arbitrary_bytes(data: bytes, tmp_path: Path) -> None:
    check(data, tmp_path)


@FUZZ
@given(head=st.sampled_from(TEXTS), cut=st.integers(0, 3000), tail=st.binary(max_size=300))
def test_valid_start_then_arbitrary_bytes(head: str, cut: int, tail: bytes,
                                          tmp_path: Path) -> None:
    check(head.encode()[:cut] + tail, tmp_path)


@FUZZ
@given(data=mutated_fixture())
def test_mutated_fixtures(data: bytes, tmp_path: Path) -> None:
    check(data, tmp_path)


# -- the worst inputs of 1 MB, one by one ----------------------------------------------------
def _alias_bomb() -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 12)]
    return "\n".join(lines) + "\n"


WORST = {
    "dense flow list": "x: [" + "1," * 499_990 + "1]\n",
    "many keys": "".join(f"k{i}: 1\n" for i in range(90_000)),
    "many steps": TEXTS[0].split("steps:")[0] + "steps:\n" + "  - heal: {}\n" * 70_000,
    "long string": "name: " + "a" * 999_000 + "\n",
    "long number": "version: " + "1:" * 400_000 + "1\n",
    "deep nesting": "x: " + "[" * 400_000 + "]" * 400_000 + "\n",
    "deep block nesting": "".join(" " * i + "a:\n" for i in range(1400)),
    "alias bomb": _alias_bomb(),
    "many anchors": "".join(f"- &a{i} 1\n" for i in range(80_000)),
    "many merges": "b: &b {x: 1}\n" + "".join(f"m{i}: {{<<: *b}}\n" for i in range(60_000)),
    "long key": "k" * 999_000 + ": 1\n",
}


@pytest.mark.parametrize("name", sorted(WORST))
def test_worst_inputs_within_2_cpu_s_and_500_mb(name: str, tmp_path: Path) -> None:
    data = WORST[name].encode()[:MAX_FILE_BYTES]
    check(data, tmp_path)
