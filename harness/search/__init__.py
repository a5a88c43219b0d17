"""Searching: generated schedules (``fuzz``), model mutants against recorded runs
(``mutate``), and shrinking a failing schedule (``shrink``)."""
