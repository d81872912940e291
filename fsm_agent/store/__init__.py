"""The run store: an index of runs over their JSONL traces (SQLite or PostgreSQL), issue 13."""
