"""Metrics of evaluation runs: each a pure function and a Cypher query over Prediction nodes (see `spec`)."""
