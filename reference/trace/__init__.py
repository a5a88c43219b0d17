"""The trace validator: the controller's committed metadata records (``records``) replayed
(``replay``) and every change judged against KIP-966's rules (``rules``)."""
