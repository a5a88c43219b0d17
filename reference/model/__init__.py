"""The protocol model of one partition: the cluster's state (``state``), the KIP-966 rules
the controller applies (``controller``, ``election``, ``elr``), the world's steps
(``steps``, ``timing``, ``snapshot``) and their settling (``protocol``), the predictions a
run is judged against (``predict``) and the invariants every state must keep
(``invariants``)."""
