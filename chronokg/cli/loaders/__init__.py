"""Each source's commands (`ingest`, `download`, `export`, `generate`): one module per source, named in SOURCES."""
