"""The cluster's birth keys of ``cluster:`` (FORMAT.md "The cluster's birth"):
``metadata_version``, ``features``, ``unstable_features`` and ``builds``. What can be checked
without a build is checked here, with the file and line; what a build knows (a level, a
feature) is its own storage tool's answer once the builds are resolved, before any cluster
starts (harness/run/runner/birth.py)."""

from __future__ import annotations

from typing import Any

from yaml.nodes import MappingNode, Node

from harness.cluster.topology import MAX_LOG_DIRS
from harness.scenario.nodes import Items, Reader
from reference.model import features as F
from reference.model import metadata_version as MV

KEYS = ("metadata_version", "features", "unstable_features", "builds", "log_dirs")
#: The first metadata.version with directory assignment (KIP-858: JBOD in KRaft),
#: MetadataVersion.IBP_3_7_IV2.isDirectoryAssignmentSupported.
JBOD_MV = "3.7-IV2"
#: The finalized features a storage tool formats (org.apache.kafka.server.common.Feature,
#: 4.3.1/4.4.0, production ones), with the highest level any of them has; the build says
#: which it knows. The model reads ELR's (and metadata.version, which is its own key).
FEATURES: dict[str, int] = {
    F.ELR: 1, "group.version": 1, "transaction.version": 2, "kraft.version": 1,
    "share.version": 1, "streams.version": 1,
}
MAX_LEVEL = 32767


def parse_birth(ctx: Reader, items: Items, node_ids: tuple[int, ...], elr: bool | None
                ) -> dict[str, Any]:
    """ClusterShape keyword arguments for the birth keys in ``items`` (a ``cluster:``
    mapping). ``node_ids``: the cluster's brokers and controllers."""
    out: dict[str, Any] = {}
    lines: list[tuple[str, int]] = []
    level: int | None = None
    if "metadata_version" in items:
        vnode = items["metadata_version"][1]
        name = ctx.scalar(vnode, "cluster.metadata_version")
        level = MV.level_of(name) if isinstance(name, str) else None
        if level is None:
            raise ctx.fail(vnode, "cluster.metadata_version",
                           f"unknown metadata.version {name!r}: name one as Kafka does, "
                           f"quoted, e.g. \"3.9-IV0\" (known: {MV.LEVELS[0][0]} .. "
                           f"{MV.LEVELS[-1][0]}; the build says which of them it accepts)")
        out["metadata_version"] = name
        lines.append(("metadata_version", _line(vnode)))
    if "features" in items:
        fnode = items["features"][1]
        feats = _features(ctx, fnode)
        lines.append(("features", _line(fnode)))
        for fname, lv in feats:
            if fname == F.ELR and lv >= 1 and not MV.elr_supported(level):
                raise ctx.fail(fnode, "cluster.features", f"{F.ELR} {lv} needs "
                               f"metadata.version 4.0-IV1 or above, the cluster is born at "
                               f"{out['metadata_version']} (EligibleLeaderReplicasVersion"
                               ".ELRV_1 depends on metadata.version 23)")
            if fname == F.ELR and elr is not None:
                raise ctx.fail(fnode, "cluster.features", f"give ELR once: cluster.elr or "
                               f"features: {{{F.ELR}: L}}, not both")
        out["features"] = feats
    if "unstable_features" in items:
        unode = items["unstable_features"][1]
        out["unstable_features"] = ctx.bool_(unode, "cluster.unstable_features")
        lines.append(("unstable_features", _line(unode)))
    if elr and not MV.elr_supported(level):
        raise ctx.fail(items["elr"][1], "cluster.elr", "ELR needs metadata.version 4.0-IV1 "
                       f"or above, the cluster is born at {out['metadata_version']}")
    if "builds" in items:
        bnode = items["builds"][1]
        out["builds"] = _builds(ctx, bnode, node_ids)
        lines.append(("builds", _line(bnode)))
        lines.extend((f"builds.{n}", ln) for n, ln in _build_lines(ctx, bnode))
    if "log_dirs" in items:
        dnode = items["log_dirs"][1]
        n = ctx.int_(dnode, "cluster.log_dirs")
        if not 1 <= n <= MAX_LOG_DIRS:
            raise ctx.fail(dnode, "cluster.log_dirs", f"{n} log directories: choose "
                           f"1..{MAX_LOG_DIRS}")
        if n > 1 and level is not None and level < MV.BY_NAME[JBOD_MV]:
            raise ctx.fail(dnode, "cluster.log_dirs", f"several log directories need "
                           f"metadata.version {JBOD_MV} or above (KIP-858, MetadataVersion"
                           f".isDirectoryAssignmentSupported), the cluster is born at "
                           f"{out['metadata_version']}")
        out["log_dirs"] = n
        lines.append(("log_dirs", _line(dnode)))
    out["lines"] = tuple(lines)
    return out


def _line(node: Node) -> int:
    return node.start_mark.line + 1


def _features(ctx: Reader, node: Node) -> tuple[tuple[str, int], ...]:
    items = ctx.mapping(node, "cluster.features")
    out: list[tuple[str, int]] = []
    for fname, (knode, vnode) in items.items():
        where = f"cluster.features.{fname}"
        if fname == "metadata.version":
            raise ctx.fail(knode, where, "give metadata.version as cluster.metadata_version "
                           "(\"3.9-IV0\"), not as a feature")
        if fname not in FEATURES:
            raise ctx.fail(knode, where, f"unknown feature {fname!r} (known: "
                           f"{', '.join(sorted(FEATURES))})")
        lv = ctx.int_(vnode, where, 0, MAX_LEVEL)
        if fname == F.ELR and lv > 1:
            raise ctx.fail(vnode, where, f"level {lv} of {F.ELR}: 0 (off) or 1 (on)")
        out.append((fname, lv))
    return tuple(sorted(out))


def _build_pairs(ctx: Reader, node: Node) -> list[tuple[Node, Node]]:
    """The (key, value) nodes of ``builds`` (its keys are node ids: integers, which the
    Reader's string-keyed mappings refuse)."""
    ctx.collection_tag(node, "cluster.builds")
    if not isinstance(node, MappingNode):
        raise ctx.fail(node, "cluster.builds", "expected a mapping of node id to "
                       "\"X.Y.Z\"")
    return list(node.value)


def _builds(ctx: Reader, node: Node, node_ids: tuple[int, ...]) -> tuple[tuple[int, str], ...]:
    pairs = _build_pairs(ctx, node)
    if not pairs:
        raise ctx.fail(node, "cluster.builds", "names no node (node id: \"X.Y.Z\")")
    out: dict[int, str] = {}
    for knode, vnode in pairs:
        nid = ctx.scalar(knode, "cluster.builds")
        if isinstance(nid, bool) or not isinstance(nid, int) or nid not in node_ids:
            raise ctx.fail(knode, "cluster.builds", f"{nid!r} is not a node of the cluster "
                           f"(brokers and controllers: {', '.join(map(str, node_ids))})")
        if nid in out:
            raise ctx.fail(knode, "cluster.builds", f"node {nid} is named twice")
        ctx.version(vnode, f"cluster.builds.{nid}")
        out[nid] = str(ctx.scalar(vnode, f"cluster.builds.{nid}"))
    return tuple(sorted(out.items()))


def _build_lines(ctx: Reader, node: Node) -> list[tuple[int, int]]:
    return [(int(ctx.scalar(k, "cluster.builds")), _line(v))
            for k, v in _build_pairs(ctx, node)]
