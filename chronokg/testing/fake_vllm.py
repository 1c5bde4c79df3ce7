"""A stand-in for the `vllm` executable: `serve MODEL --host H --port P [--api-key K] [...]` starts the loopback server.

The real vLLM cannot be installed on machines without a GPU, so tests put a two-line `vllm`
script on PATH that runs this module. Given `--record-argv FILE` (a server argument passed through
by chronokg) it writes its arguments there, so a test can check what chronokg ran; `--fail-at-start`
exits at once with an error in its log, like a model that does not load.
"""

from __future__ import annotations

import argparse
import json
import sys

from chronokg.testing.openai_server import main as serve


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="vllm")
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--record-argv", default=None)
    parser.add_argument("--fail-at-start", action="store_true")
    parser.add_argument("--startup-delay", type=float, default=0.0)
    args, rest = parser.parse_known_args(argv)
    if args.record_argv:
        with open(args.record_argv, "w") as f:
            json.dump(argv, f)
    print(f"INFO fake vllm: serving {args.model} on {args.host}:{args.port} (extra args: {rest})", flush=True)
    if args.fail_at_start:
        print(f"ERROR fake vllm: cannot load model {args.model!r}: out of GPU memory", flush=True)
        sys.exit(1)
    if args.startup_delay:
        import time

        time.sleep(args.startup_delay)
    options = ["--port", str(args.port), "--served-model", args.model]
    serve([*options, "--api-key", args.api_key] if args.api_key else options)


if __name__ == "__main__":
    main()
