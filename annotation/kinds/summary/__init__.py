"""`summary_rating`: annotators rate system summaries of an article, blind and shuffled, for
coherence and completeness (1-5) and tag their errors; the results give per-system means with
95% intervals, the error-tag table, intrinsic measures, correlations with automatic scores and
interval alpha (HeSum: §3.3 intrinsic measures, §4 human evaluation, Table 4 error phenomena)."""
