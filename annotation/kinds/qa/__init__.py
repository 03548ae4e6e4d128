"""`qa_authoring`: question authoring with answer spans, after HeQ (Cohen et al., "HeQ: a Large
and Diverse Hebrew Reading Comprehension Benchmark", §3): annotators write questions about a
paragraph and mark their answers, reviewers grade them and the annotators read the grades in
their feedback inbox, validators answer the dev/test questions blind, and the questions are
exported as SQuAD v2 in HeQ's shape."""
