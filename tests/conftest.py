"""Shared fixtures: stores on the embedded engine, and the real data beside the checkout."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from chronokg.graph.kglite_store import KgliteStore

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`../shared/data` beside the checkout: fails loudly under CI if missing, skips elsewhere."""
    if not SHARED_DATA.is_dir():
        message = f"real sample data not found at {SHARED_DATA} (expected ../shared/data beside the checkout)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return SHARED_DATA


@pytest.fixture
def store() -> Iterator[KgliteStore]:
    """A fresh in-memory embedded store."""
    with KgliteStore(":memory:") as s:
        yield s


@pytest.fixture
def file_store(tmp_path: Path) -> Iterator[KgliteStore]:
    """A fresh embedded store in a file (write-ahead log, reopenable)."""
    with KgliteStore(tmp_path / "store.kgl") as s:
        yield s


def pytest_report_header(config: pytest.Config) -> str:
    from chronokg.settings import Settings

    uri = Settings().neo4j_uri
    if uri:
        return f"chronokg: conformance suite also runs on Neo4j at {uri}"
    return "chronokg: Neo4j conformance tests skipped (CHRONOKG_NEO4J_URI is not set); embedded engine only"


@pytest.fixture
def http_folder(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real HTTP server on loopback serving a temporary folder: stands in for the public internet in tests."""
    from tests.helpers import serve_folder

    root = tmp_path / "served"
    root.mkdir()
    with serve_folder(root) as base:
        yield base, root
