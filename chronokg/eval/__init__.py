"""Evaluation runs: send questions to models, log every sample, resume, score, write predictions into the graph."""
