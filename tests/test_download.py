"""Downloads of public files, served from a loopback HTTP server (the tests never use the internet)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.ingest.public import PUBLIC_FILES

runner = CliRunner()


def test_download_tempomed_then_ingest(http_folder: tuple[str, Path], shared_data: Path, tmp_path: Path) -> None:
    base, root = http_folder
    (sample,) = (shared_data / "tempomed-bench").glob("*.jsonl")
    shutil.copy(sample, root / "q.jsonl")
    digest = hashlib.sha256(sample.read_bytes()).hexdigest()
    out = tmp_path / "got"
    result = runner.invoke(app, ["download", "tempomed", "--url", f"{base}/q.jsonl", "--out", str(out),
                                 "--sha256", digest])
    assert result.exit_code == 0, result.output
    saved = out / PUBLIC_FILES["tempomed"].filename
    assert saved.read_bytes() == sample.read_bytes()
    assert "chronokg ingest tempomed" in result.output
    result = runner.invoke(app, ["--store", f"kglite://{tmp_path}/s.kgl", "ingest", "tempomed", str(saved)])
    assert result.exit_code == 0 and "559 records" in result.output


def test_download_failures_save_nothing(http_folder: tuple[str, Path], tmp_path: Path) -> None:
    base, root = http_folder
    (root / "SelfAware.json").write_text('{"example": []}')
    out = tmp_path / "got"
    result = runner.invoke(app, ["download", "selfaware", "--url", f"{base}/SelfAware.json", "--out", str(out),
                                 "--sha256", "0" * 64])
    assert result.exit_code == 2 and "checksum mismatch" in result.output
    result = runner.invoke(app, ["download", "truthfulqa", "--url", f"{base}/missing.csv", "--out", str(out)])
    assert result.exit_code == 2 and "404" in result.output
    assert not out.exists() or list(out.iterdir()) == []


def test_pinned_entries_name_their_loader() -> None:
    for entry in PUBLIC_FILES.values():
        assert entry.url.startswith("https://")
        result = runner.invoke(app, ["ingest", entry.loader, "--help"])
        assert result.exit_code == 0
