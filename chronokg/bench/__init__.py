"""Benchmarks computed from the graph: questions whose answers are named, re-runnable queries."""

from chronokg.bench.family import FAMILIES, Context, Family, FamilyOptions, Protocol, generate
from chronokg.bench.question import AnswerKey, Choice, Question, read_jsonl, write_jsonl

__all__ = ["FAMILIES", "AnswerKey", "Choice", "Context", "Family", "FamilyOptions", "Protocol", "Question",
           "generate", "read_jsonl", "write_jsonl"]
