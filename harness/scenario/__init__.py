"""Loading: the scenario format (YAML read as bounded nodes, ``nodes.py``), the step kinds
(``steps/``, one module per kind with its parser, model step, executor and generator) and
the loader (``loader.py``: a file to a validated ``Scenario``)."""
