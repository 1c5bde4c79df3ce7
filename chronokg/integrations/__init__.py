"""chronokg inside the evaluation tools researchers already use: inspect_ai tasks (`inspect_tasks`, found through
inspect's `inspect_ai` entry point) and lm-evaluation-harness task folders (`lm_eval_export`). Nothing here is
imported by `chronokg.cli` until a command needs it."""
