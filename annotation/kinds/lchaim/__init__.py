"""What LCHAIM's two kinds share: translation rating (Table 1) and the NLI labeling test
(Table 2) have one results page, with its sample and downloads, and one stratified sample
operation. Not a kind: each of the two declares these URL modules, and either works alone."""
