"""The summary_rating kind's own tests."""
