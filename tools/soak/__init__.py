"""`make soak MINUTES=N`: the local stack under mixed traffic and faults, then a count of what was
lost, doubled or stuck (docs/soak.md). Not part of CI; `tests/soak` runs a tiny one."""
