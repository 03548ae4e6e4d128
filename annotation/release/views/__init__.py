"""The release stage's HTML pages: the model leaderboard, dataset bias and curation."""
