"""`nli_relabel`: relabel premise/hypothesis pairs entailment / neutral / contradiction by a
k-of-n consensus in which the author's or original label is one vote, failed pairs going
back to their author for revision (FarsTail §3, §3.2). Its page, labels and per-round
agreement also serve `label_test` (annotation/kinds/label_test), which subclasses NliKind."""
