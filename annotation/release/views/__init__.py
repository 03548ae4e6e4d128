"""The release stage's HTML pages: the model leaderboard, dataset bias, curation and
the dataset releases."""
