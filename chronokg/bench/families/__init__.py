"""Benchmark families: one module each, with a `FAMILY` spec registered in `chronokg.bench.family.FAMILIES`."""
