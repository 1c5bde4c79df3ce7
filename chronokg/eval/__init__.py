"""Evaluation runs: send questions to models, log every sample, resume, score, write predictions into the graph.

The reference baselines (`baseline/...`) are a model provider declared as the entry point
`chronokg.model_providers: baseline` (pyproject.toml), so `get_model("baseline/oracle")` needs no import of this
package first.
"""
