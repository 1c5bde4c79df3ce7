"""Hostile input from a new user: odd store URIs, stored text that looks like markup, bad cutoffs."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronokg.errors import StoreError
from chronokg.store_uri import StoreURI, redact


@pytest.mark.parametrize("text", ["bolt://localhost:99999", "bolt://u:s3cret@localhost:notaport",
                                  "neo4j://u:s3cret@host:-1", "neo4j://u:s3cret@[::1", "bolt://u:s3cret@h:0"])
def test_a_bad_port_is_refused_when_parsed_without_the_password(text: str) -> None:
    with pytest.raises(StoreError, match="not a usable store URI") as caught:
        StoreURI.parse(text)
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize("text", ["bolt://u:pa/s3cret@127.0.0.1:7687", "bolt://u:pa?s3cret@127.0.0.1:7687",
                                  "bolt://u:pa#s3cret@127.0.0.1:7687", "bolt://u:pa@s3cret@127.0.0.1:7687"])
def test_a_password_typed_with_uri_characters_stays_a_password(text: str) -> None:
    uri = StoreURI.parse(text)
    assert uri.location == "127.0.0.1:7687" and uri.credentials()[1] is not None
    assert uri.credentials()[1].endswith("s3cret")  # type: ignore[union-attr]
    assert "s3cret" not in uri.redacted() and "s3cret" not in redact(text)
    assert "s3cret" not in redact(text.replace("://", ":/"))  # a mistyped scheme still hides the login


def test_an_embedded_uri_with_no_path_is_refused_and_a_tilde_is_home(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for text in ("kglite://", "kglite://?durable=off"):
        with pytest.raises(StoreError, match="names no file"):
            StoreURI.parse(text)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert StoreURI.parse("kglite://~/s.kgl").file == str(tmp_path / "s.kgl")
    assert StoreURI.parse("kglite://data/s@1.kgl").file == "data/s@1.kgl"
