"""Not a benchmark: a helper module discovery skips (and says why)."""

SIZE = 96
