"""`nli_authoring`: authors write three NLI pairs (entailment, contradiction, neutral) from one
multiple-choice question, which become items of a linked `nli_relabel` project (FarsTail §3.1)."""
