"""minijinja against Jinja2 on every chat template: byte-identical output, and time per render.

    python bench/templates.py

The template inputs are the real ones: every chat render of the parity corpus is run through
tokenbridge in-process (per profile, as ``tokenbridge serve`` builds it) and the context each
render hands to Jinja2 is captured. Each captured context is then rendered by minijinja
(trim_blocks, lstrip_blocks, pycompat, HF's ``tojson``/``raise_exception``/``strftime_now``)
and by the operator-template Jinja2 path, and the outputs compared byte for byte. Templates in
``shared/models/templates`` that no profile uses are rendered with the contexts of every
profile. Prints per template: contexts, identical, minijinja / Jinja2 microseconds.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

SHARED = Path("/work/shared")


def captured_contexts() -> dict[str, list[dict]]:
    """``template source -> [context, ...]`` from the corpus's chat renders."""
    from tokenbridge.cli import parse_serve_args
    from tokenbridge.model import template as tpl
    from tokenbridge.protocol.errors import ApiError
    from tokenbridge.server.app import POST_ROUTES, Request
    from tokenbridge.server.run import build

    profiles = json.loads((SHARED / "parity" / "profiles.json").read_text())["profiles"]
    seen: dict[str, list[dict]] = {}
    real_render = tpl.render

    def capture(source: str, **context):
        seen.setdefault(source, []).append(dict(context))
        return real_render(source, **context)

    tpl.render = capture
    try:
        for name, prof in profiles.items():
            flags = [f.replace("{shared}", str(SHARED)) for f in prof.get("extra_flags", [])]
            if "mistral" in flags:
                continue
            cases = SHARED / "parity" / "cases" / f"{name}.jsonl"
            argv = [str((SHARED / "parity" / prof["model"]).resolve()), "--served-model-name", prof["served_name"],
                    *flags]
            if prof.get("tool_parser"):
                argv += ["--tool-call-parser", prof["tool_parser"], "--enable-auto-tool-choice"]
            if prof.get("reasoning_parser"):
                argv += ["--reasoning-parser", prof["reasoning_parser"]]
            app = build(parse_serve_args(argv))
            for line in cases.read_text(encoding="utf-8").splitlines():
                case = json.loads(line)
                req = case.get("request") or {}
                if case["kind"] != "chat_render" or not isinstance(req.get("body"), dict):
                    continue
                body = json.dumps(req["body"]).encode()
                try:
                    POST_ROUTES["/v1/chat/completions/render"](Request(body, {}, app.model, app.cfg))
                except ApiError:
                    pass
            print(f"  {name}: {sum(map(len, seen.values()))} contexts so far", file=sys.stderr, flush=True)
    finally:
        tpl.render = real_render
    return seen


def minijinja_env():
    import minijinja

    from tokenbridge.model import template as tpl

    env = minijinja.Environment(trim_blocks=True, lstrip_blocks=True, pycompat=True, keep_trailing_newline=False)
    env.add_filter("tojson", tpl._tojson)
    env.add_function("raise_exception", tpl._raise_exception)
    env.add_function("strftime_now", tpl._strftime_now)
    return env


def per_render_us(fn, budget: float = 0.2) -> float:
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < budget:
        fn()
        n += 1
    return (time.perf_counter() - t0) / n * 1e6


def main() -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    from tokenbridge.model import template as tpl

    seen = captured_contexts()
    all_contexts = [c for cs in seen.values() for c in cs]
    for path in sorted((SHARED / "models" / "templates").glob("*.jinja")):
        source = path.read_text(encoding="utf-8")
        seen.setdefault(source, list(all_contexts))
    names = {p.read_text(encoding="utf-8"): p.name for p in (SHARED / "models" / "templates").glob("*.jinja")}
    env = minijinja_env()
    for i, source in enumerate(seen):
        env.add_template(f"t{i}", source)
    print("| template | contexts | identical | minijinja us | Jinja2 us |")
    print("|---|---|---|---|---|")
    for i, (source, contexts) in enumerate(seen.items()):
        name = names.get(source) or source.split("\n", 1)[0][:40]
        same = differ = 0
        jt = mt = 0.0
        for ctx in contexts:
            try:
                want = tpl.render(source, **ctx)
            except Exception as e:
                want = f"ERROR {type(e).__name__}"
            try:
                got = env.render_template(f"t{i}", **ctx)
            except Exception as e:
                got = f"ERROR {type(e).__name__}"
            if got == want or (got.startswith("ERROR") and want.startswith("ERROR")):
                same += 1
            else:
                differ += 1
        sample = max(contexts, key=lambda c: len(json.dumps(c, default=str)))
        try:
            jt = per_render_us(lambda: tpl.render(source, **sample))
            mt = per_render_us(lambda: env.render_template(f"t{i}", **sample))
        except Exception:
            pass
        print(f"| {shlex.quote(name)} | {len(contexts)} | {'yes' if not differ else f'NO ({differ} differ)'} "
              f"| {mt:.0f} | {jt:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
