"""Releases: profiles (``profiles``: the rule switches), each release line's profile with
its cited deviations from the KIP (``catalog``, ``deviations``), and one-rule mutants of a
profile (``mutants``)."""
