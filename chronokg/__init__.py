"""chronokg: a bitemporal knowledge-graph fact store for time-specific LLM evaluation."""

__version__ = "0.1.0"
