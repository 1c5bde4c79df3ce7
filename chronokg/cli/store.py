"""`chronokg store check [--repair]`: what an embedded store's files hold, and the recovery of a damaged log
(`chronokg.graph.recover`; docs/integrity.md, "A damaged store file")."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from chronokg.cli.common import FormatOpt, console, guarded, state
from chronokg.cli.render import Format
from chronokg.errors import ChronoKGError
from chronokg.store_uri import StoreURI

WRITER = {  # what the next writer does, in words (`StoreCheck.writer`)
    "open": "opens the store and starts a new log (nothing to replay)",
    "replay": "replays {n} commit(s) from the log and checkpoints",
    "replay-discard": "replays {n} intact commit(s), sets the torn tail aside and checkpoints",
    "wait": "waits for the lease's holder, then refuses",
    "refuse": "refuses to open the store (nothing is changed)",
}


def register(app: typer.Typer) -> None:
    store_app = typer.Typer(help="The store's files: check them, recover a damaged write-ahead log.",
                            no_args_is_help=True)
    app.add_typer(store_app, name="store")
    store_app.command("check")(check)


def check(
    repair: Annotated[bool, typer.Option("--repair", help="Recover a damaged log (header or commit): the damaged "
                                                          "log is kept aside, every intact commit before the damage "
                                                          "is replayed and checkpointed")] = False,
    fmt: FormatOpt = Format.table,
) -> None:
    """Check the embedded store's checkpoint and write-ahead log, and say what the next writer does with them
    (exit 1 when it cannot open the store)."""
    from chronokg.graph import recover
    from chronokg.settings import Settings

    def body() -> bool:
        uri = StoreURI.parse(state.store_uri or Settings().store)
        path = uri.file
        if path is None:
            raise ChronoKGError("store check reads an embedded store's files (kglite:///path/store.kgl), not "
                                f"{uri.redacted()}")
        before = recover.check(path)
        found = recover.repair(path) if repair else before
        if fmt is Format.json:
            print(json.dumps({"before": before.model_dump(), "after": found.model_dump()} if repair
                             else found.model_dump(), indent=2))
            return found.ok
        counts = f" ({found.nodes:,} nodes, {found.relationships:,} relationships)" if found.nodes is not None else ""
        console.print(f"checkpoint: {found.checkpoint}{counts}", markup=False, highlight=False)
        log = f"log: {found.log} ({found.log_bytes:,} bytes)" + (f": {found.log_problem}" if found.log_problem
                                                                 else "")
        console.print(log, markup=False, highlight=False)
        console.print(f"lease: {found.lease}", markup=False, highlight=False)
        console.print(f"next writer: {WRITER[found.writer].format(n=found.commits)}", markup=False, highlight=False)
        if repair and before.log == "damaged":
            gained = (found.nodes or 0) - (before.nodes or 0), (found.relationships or 0) - (before.relationships or 0)
            kept = next((n for n in reversed(found.kept_aside) if ".damaged-" in n), "?")
            console.print(f"repaired: the damaged log is kept as {kept}; "
                          f"{gained[0]:,} nodes and {gained[1]:,} relationships replayed from it", markup=False,
                          highlight=False)
        for name in found.kept_aside:
            console.print(f"kept aside: {name}", markup=False, highlight=False)
        console.print(("ok: " if found.ok else "damaged: ") + found.advice, markup=False, highlight=False)
        return found.ok

    if not guarded(body):
        raise typer.Exit(1)
