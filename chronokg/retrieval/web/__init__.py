"""Web search providers and the "When Benchmarks Age" web pipeline (imports httpx when used)."""
