"""``tokenbridge serve`` (vLLM's flag names) and ``tokenbridge parsers``."""

from __future__ import annotations

import argparse
import json
import os
import sys


def _json_arg(value: str):
    try:
        v = json.loads(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON: {e}") from e
    if not isinstance(v, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return v


def serve_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("serve", help="serve the render/derender API for one model")
    p.add_argument("model", help="a local model folder or a Hugging Face hub id")
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--served-model-name", nargs="+", default=None)
    p.add_argument("--tokenizer", default=None)
    p.add_argument("--tokenizer-mode", choices=["auto", "hf", "slow", "mistral"], default="auto")
    p.add_argument("--chat-template", default=None)
    p.add_argument("--chat-template-content-format", choices=["auto", "string", "openai"], default="auto")
    p.add_argument("--default-chat-template-kwargs", type=_json_arg, default=None)
    p.add_argument("--trust-request-chat-template", action="store_true")
    p.add_argument("--tool-call-parser", default=None, metavar="NAME")
    p.add_argument("--enable-auto-tool-choice", action="store_true")
    p.add_argument("--reasoning-parser", default=None, metavar="NAME")
    p.add_argument("--max-model-len", type=int, default=None)
    p.add_argument("--generation-config", default="auto")
    p.add_argument("--max-logprobs", type=int, default=20)
    p.add_argument("--api-key", default=os.environ.get("VLLM_API_KEY"))
    p.add_argument("--workers", type=int, default=None, help="processes sharing the port (default: min(cores, 2))")
    p.add_argument("--max-body-bytes", type=int, default=64 * 1024 * 1024)
    p.add_argument("--engine-url", default=None, help="a token engine (vllm serve --tokens-only): adds /v1/chat/completions and /v1/completions")
    p.add_argument("--engine-api-key", default=os.environ.get("TOKENBRIDGE_ENGINE_API_KEY"))
    p.add_argument("--engine-connect-timeout", type=float, default=10.0, metavar="S")
    p.add_argument("--engine-first-token-timeout", type=float, default=600.0, metavar="S")
    p.add_argument("--engine-idle-timeout", type=float, default=120.0, metavar="S", help="longest wait between two engine events")
    p.add_argument(
        "--tool-call-streaming",
        choices=["incremental", "whole"],
        default="incremental",
        help="stream tool-call arguments as the model writes them (default), or each call whole once decided",
    )
    return p


def check_parser_names(p: argparse.ArgumentParser, args) -> None:
    """argparse's invalid-choice error for an unknown parser name, listing the valid ones."""
    from tokenbridge.parsers import registry

    for flag, value, names in (
        ("--tool-call-parser", args.tool_call_parser, registry.tool_names),
        ("--reasoning-parser", args.reasoning_parser, registry.reasoning_names),
    ):
        if value is not None and value not in names():
            p.error(f"argument {flag}: invalid choice: {value!r} (choose from {', '.join(names())})")


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas before any thread starts: each thread that decodes a large
    body would otherwise keep an arena of its own, and RSS grows with no gain in speed."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        ctypes.CDLL(name).mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def run_serve(p: argparse.ArgumentParser, args) -> int:
    from tokenbridge.model.context import ModelLoader

    limit_malloc_arenas()

    # The tokenizer builds on a thread (mostly without the GIL) while the parser modules and
    # the server are imported: start-up is the longer of the two, not their sum.
    loader = ModelLoader(args)
    check_parser_names(p, args)
    from tokenbridge.server.run import serve

    return serve(args, loader)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tokenbridge")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = serve_parser(sub)
    pp = sub.add_parser("parsers", help="list the reasoning and tool-call parser names")
    pp.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "serve":
        return run_serve(sp, args)
    from tokenbridge.parsers import registry

    doc = registry.describe()
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        for kind in ("tool", "reasoning"):
            print(f"{kind} parsers:")
            for e in doc[kind]:
                alias = f" (aliases: {', '.join(e['aliases'])})" if e["aliases"] else ""
                print(f"  {e['name']}{alias}  [{e['family']}] {e['module']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
