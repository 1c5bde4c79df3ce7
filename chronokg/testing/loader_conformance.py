"""The contract every source's loader passes, as a pytest mixin (haystack style).

The loader contract (DEVELOPERS.md): `load(store, paths, ..., progress=None) -> LoadSummary`
parses and validates the whole input before it writes, writes in one all-or-nothing step,
and reports what it changed from content. Subclass the mixin once per source, name the
source as SOURCES knows it, and give a good input and a bad one::

    class TestMySource(LoaderConformance):
        source = "mysource"

        def good(self, tmp_path):  # inputs that load
            return [FIXTURES / "mysource"]

        def bad(self, tmp_path):  # inputs whose loading fails with an InputError (after `good` loaded)
            path = tmp_path / "broken.jsonl"
            path.write_text('{"id": 1, "year": ')
            return [path]

Give `oversized(tmp_path, text)`: the good input with one text field replaced by `text`; the mixin makes
it one character over the loader module's declared `MAX_TEXT` (README, "Input limits").
Override `load` when the loader needs more arguments than `(store, paths)`.
Every test uses the real embedded engine, on a file store in `tmp_path`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
import typer

from chronokg.errors import InputError
from chronokg.graph.counts import content_digest, graph_counts
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import common
from chronokg.ingest.common import LoadSummary
from chronokg.ingest.sources import SOURCES, SourceSpec


class LoaderConformance:
    """Mix into a test class; set `source` and implement `good` and `bad`."""

    source: str = ""

    def good(self, tmp_path: Path) -> list[Path]:
        raise NotImplementedError

    def bad(self, tmp_path: Path) -> list[Path]:
        raise NotImplementedError

    def oversized(self, tmp_path: Path, text: str) -> list[Path]:
        raise NotImplementedError

    def max_text(self) -> int:
        """The per-field limit the loader's module declares (`MAX_TEXT`, characters)."""
        module = importlib.import_module(self.spec().loader.partition(":")[0])
        limit = getattr(module, "MAX_TEXT", None)
        assert isinstance(limit, int) and limit > 0, f"{module.__name__} declares no MAX_TEXT (characters per field)"
        return limit

    def spec(self) -> SourceSpec:
        return SOURCES.get(self.source)

    def load(self, store: KgliteStore, paths: list[Path]) -> LoadSummary:
        module, _, name = self.spec().loader.partition(":")
        loader: Any = getattr(importlib.import_module(module), name)
        summary: LoadSummary = loader(store, paths)
        return summary

    # --- the contract ---------------------------------------------------------------------------------

    def test_declared_once_with_the_commands_it_adds(self) -> None:
        from chronokg.cli.common import Groups
        from chronokg.cli.sources import add_commands

        spec = self.spec()
        apps = {g: typer.Typer() for g in ("ingest", "download", "export", "generate")}
        add_commands(spec, Groups(**apps))
        added = {f"{g}/{c.name}" for g, app in apps.items() for c in app.registered_commands}
        assert added == set(spec.commands), f"{spec.name} adds {sorted(added)}, SOURCES says {spec.commands}"
        module, _, name = spec.loader.partition(":")
        assert callable(getattr(importlib.import_module(module), name))

    def test_first_load_reports_what_it_changed(self, tmp_path: Path) -> None:
        with KgliteStore(tmp_path / "s.kgl") as store:
            before = graph_counts(store)
            summary = self.load(store, self.good(tmp_path))
            after = graph_counts(store)
        assert summary.records > 0 and not summary.unchanged
        assert summary.before == before and summary.after == after
        if summary.report is not None:  # created counts, from content, match the store's counts
            for label, n in summary.report.created.items():
                assert after.get(label, 0) - before.get(label, 0) == n, label
            for rel, n in summary.report.edges_created.items():
                assert after.get(rel, 0) - before.get(rel, 0) == n, rel

    def test_second_load_changes_nothing(self, tmp_path: Path) -> None:
        with KgliteStore(tmp_path / "s.kgl") as store:
            self.load(store, self.good(tmp_path))
            digest = content_digest(store)
        mtime = (tmp_path / "s.kgl").stat().st_mtime_ns
        with KgliteStore(tmp_path / "s.kgl") as store:
            again = self.load(store, self.good(tmp_path))
            assert again.unchanged and content_digest(store) == digest
        assert (tmp_path / "s.kgl").stat().st_mtime_ns == mtime  # nothing changed: the file is not rewritten

    def test_bad_input_writes_nothing(self, tmp_path: Path) -> None:
        with KgliteStore(tmp_path / "s.kgl") as store:
            self.load(store, self.good(tmp_path))
        with KgliteStore(tmp_path / "s.kgl", read_only=True) as reader:
            digest = content_digest(reader)
        with pytest.raises(InputError), KgliteStore(tmp_path / "s.kgl") as store:
            self.load(store, self.bad(tmp_path))
        with KgliteStore(tmp_path / "s.kgl", read_only=True) as reader:
            assert content_digest(reader) == digest

    def test_a_field_over_the_limit_is_refused_naming_file_and_record(self, tmp_path: Path) -> None:
        limit = self.max_text()
        paths = self.oversized(tmp_path, "x" * (limit + 1))
        with pytest.raises(InputError) as refused, KgliteStore(tmp_path / "over.kgl") as store:
            self.load(store, paths)
        assert f" characters (at most {limit:,}" in str(refused.value), str(refused.value)
        assert "field " in refused.value.detail and "\n" not in str(refused.value), str(refused.value)
        assert not (tmp_path / "over.kgl").exists()

    def test_bad_input_into_a_new_store_leaves_no_store(self, tmp_path: Path) -> None:
        with pytest.raises(InputError), KgliteStore(tmp_path / "new.kgl") as store:
            self.load(store, self.bad(tmp_path))
        assert not (tmp_path / "new.kgl").exists()

    def test_bulk_path_writes_what_the_transactional_path_writes(self, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
        digests = []
        for threshold in (0, 10**12):  # every batch through graph.bulk, then none
            monkeypatch.setattr(common, "BULK_MIN", threshold)
            with KgliteStore(tmp_path / f"s{threshold}.kgl") as store:
                self.load(store, self.good(tmp_path))
                digests.append(content_digest(store))
        assert digests[0] == digests[1]


__all__ = ["LoaderConformance"]
