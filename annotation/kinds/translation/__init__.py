"""`translation_rating`: blind side-by-side rating of machine translations of an NLI dataset,
with stratified sampling, a back-translation similarity filter and Table 1 (LCHAIM §2.2).
The results page at /p/<slug>/lchaim/ also shows `label_test`'s Table 2 (LCHAIM §3.2)."""
