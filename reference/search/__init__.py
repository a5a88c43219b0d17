"""Search over schedules: the model's named transitions (``transitions``), exhaustive
exploration (``explorer``) and the schedule generator (``fuzzgen``)."""
