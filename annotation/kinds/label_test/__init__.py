"""`label_test`: annotators label premise/hypothesis pairs whose gold label is hidden, and
are scored against it: LCHAIM's human baseline (LCHAIM §3.2, Table 2)."""
