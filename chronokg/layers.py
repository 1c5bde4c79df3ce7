"""The package's layers, lowest first, declared once: a module imports from its own layer and lower ones only,
and no chain of imports comes back to where it started (tests/test_layers.py checks both; DEVELOPERS.md shows
`rendered()`). Data only: nothing imported, nothing run."""

from __future__ import annotations

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "settings", "environ", "store_uri", "progress", "registry", "controls", "files"),
    ("graph",),
    ("ingest", "queries"),
    ("models",),
    ("bench",),
    ("retrieval",),
    ("serve", "eval"),
    ("metrics",),
    ("reports",),
    ("demo", "integrations"),
    ("cli", "__main__"),
    ("testing",),  # the shipped test helpers exercise every layer, the CLI included; nothing imports them
)


def rank(package: str) -> int:
    """The layer of a top-level part of `chronokg` (a sub-package or a leaf module's name)."""
    for n, layer in enumerate(LAYERS):
        if package in layer:
            return n
    raise KeyError(f"chronokg.{package} is in no layer of chronokg/layers.py: add it there")


def rendered() -> str:
    """The layers as DEVELOPERS.md shows them: `errors, settings, … → graph → …`."""
    return " → ".join(", ".join(layer) for layer in LAYERS)
