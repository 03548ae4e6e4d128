"""`phrase_pair`: label a phrase pair with one of PhrasIS's seven fine-grained relations,
with reversed copies mixed in as coherence probes (fine-grained-nli-coherence §3, §5,
appendix A.1; docs/kinds.md "The kinds").

kind.py holds the rules (settings, import rows, what an annotator sees and submits, gold,
export records); labels.py the seven labels' spellings and the majority gold; formats.py
PhrasIS's own files, read and written; probes.py the reversed copies; reports.py the
coherence figures, label distributions and agreement per source; pages.py the coherence
dashboard and api.py the PhrasIS export. The coherence math itself is the core's
annotation/metrics/coherence.py."""
