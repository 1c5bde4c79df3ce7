"""A family's prompt templates: text files in `prompts/<family>/`, read on first use, checked against their hashes.

Templates are part of a benchmark's definition, so each family records every file's sha256 beside it
(`<family>_prompts.py`) and its tests assert `check() == []`: an edited template is a visible change.
"""

from __future__ import annotations

import hashlib
from importlib import resources


class TemplateSet:
    """The templates of one family: `template(NAME)` reads `prompts/<family>/<name>.txt`."""

    def __init__(self, family: str, sha256: dict[str, str], title: str,
                 package: str = "chronokg.bench.families") -> None:
        self.family = family
        self.package = package
        self.sha256 = sha256
        self.title = title
        self._texts: dict[str, str] = {}

    def template(self, name: str) -> str:
        """The template `name` (a key of the recorded hashes), exactly as stored."""
        if name not in self.sha256:
            raise KeyError(f"no {self.title} template {name!r} (known: {', '.join(self.sha256)})")
        if name not in self._texts:
            path = resources.files(self.package) / "prompts" / self.family / f"{name.lower()}.txt"
            self._texts[name] = path.read_bytes().decode("utf-8")
        return self._texts[name]

    def render(self, name: str, **values: object) -> str:
        """Template `name` with each `{key}` given in `values` replaced (other braces are left as they are)."""
        out = self.template(name)
        for key, value in values.items():
            out = out.replace("{" + key + "}", str(value))
        return out

    def check(self) -> list[str]:
        """Names of the templates whose text no longer matches its recorded hash (empty: all as recorded)."""
        return [n for n, h in self.sha256.items()
                if hashlib.sha256(self.template(n).encode("utf-8")).hexdigest() != h]
