"""Evaluation runs: send questions to models, log every sample, resume, score, write predictions into the graph.

Importing this package registers the reference baselines as the `baseline/...` model provider.
"""

from chronokg.models import CLIENTS

if "baseline" not in CLIENTS:
    CLIENTS.register("baseline", "chronokg.eval.baselines:baseline_client")
