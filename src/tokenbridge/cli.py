"""``tokenbridge serve`` (vLLM's command line, see ``flags``), ``tokenbridge parsers``, ``--version``."""

from __future__ import annotations

import argparse
import json
import sys

from tokenbridge import VLLM_COMPAT_VERSION, __version__
from tokenbridge import flags


def check_parser_names(args) -> None:
    """An unknown parser name: argparse's invalid-choice wording, listing the valid names."""
    from tokenbridge.parsers import registry

    for flag, value, find, names in (  # a lookup imports its parser's module only; the list, all
        ("--tool-call-parser", args.tool_call_parser, registry.get_tool_parser, registry.tool_names),
        ("--reasoning-parser", args.reasoning_parser, registry.get_reasoning_parser, registry.reasoning_names),
    ):
        if value and find(value) is None:
            raise flags.FlagError(f"argument {flag}: invalid choice: {value!r} (choose from {', '.join(names())})")


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas before any thread starts: each thread that decodes a large
    body would otherwise keep an arena of its own, and RSS grows with no gain in speed."""
    import ctypes

    try:  # libc's, among the process's own symbols (find_library would import subprocess, tempfile)
        ctypes.CDLL(None).mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def parse_serve_args(argv: list[str]) -> argparse.Namespace:
    """``serve`` flags as the command line reads them, checked (FlagError on a usage error)."""
    _, sp = build_parser()
    args = sp.parse_args(flags.normalize_argv(argv))
    flags.check(args)
    return args


def run_serve(args) -> int:
    from tokenbridge.server import logs, memory
    from tokenbridge.model.context import ModelLoader

    limit_malloc_arenas()
    memory.map_large_buffers()  # until the tokenizers are loaded (server/run.py)
    try:
        flags.check(args)
        access = logs.setup(args)
        # The tokenizer builds on a thread (mostly without the GIL) while the parser modules and
        # the server are imported: start-up is the longer of the two, not their sum.
        loader = ModelLoader(args)
        check_parser_names(args)
    except flags.FlagError as e:
        return flags.main_error(str(e))
    ignored = flags.engine_flags_given(args)
    if ignored:
        logs.log.warning("ignored (engine settings, no effect on a render tier): %s", " ".join(ignored))
    from tokenbridge.server.run import serve

    return serve(args, loader, access)


def build_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    ap = flags._Parser(prog="tokenbridge")
    ap.add_argument("--version", action="version", version=f"tokenbridge {__version__} (vLLM {VLLM_COMPAT_VERSION} render API)")
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=flags._Parser)
    sp = sub.add_parser("serve", help="serve the render/derender API for one model (vLLM's flags)",
                        usage="tokenbridge serve MODEL [options]  (MODEL: a folder or a hub id)")
    flags.add_serve_arguments(sp)
    pp = sub.add_parser("parsers", help="list the reasoning and tool-call parser names")
    pp.add_argument("--json", action="store_true")
    return ap, sp


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap, _ = build_parser()
    if argv[:1] == ["serve"]:
        try:
            argv = ["serve", *flags.normalize_argv(argv[1:])]
        except flags.FlagError as e:
            return flags.main_error(str(e))
    args = ap.parse_args(argv)
    if args.cmd == "serve":
        return run_serve(args)
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
