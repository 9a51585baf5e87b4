"""Compare exact encoders against `tokenizers` on every profile's corpus texts.

    python bench/encoders.py [--extra-path DIR]

For each profile of the parity corpus whose model folder has a ``tokenizer.json``, the texts
are every string in its request bodies plus the prompt text of every recorded render (the
decode of vLLM's token ids, special tokens included). Each candidate must give the same ids
as ``tokenizers`` on all of them to be usable; its speed is reported on the 32k bench prompt
shape (the corpus joined) and on the longest single text. Candidates that are not installed
are skipped (``--extra-path`` lets a scratch ``pip install --target`` be tried).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

SHARED = Path("/work/shared")


def corpus() -> dict[Path, list[str]]:
    profiles = json.loads((SHARED / "parity" / "profiles.json").read_text())["profiles"]
    texts: dict[Path, set[str]] = {}
    for name, prof in profiles.items():
        folder = (SHARED / "parity" / prof["model"]).resolve()
        if not (folder / "tokenizer.json").exists():
            continue
        cases = SHARED / "parity" / "cases" / f"{name}.jsonl"
        if not cases.exists():
            continue
        bucket = texts.setdefault(folder, set())
        for line in cases.read_text().splitlines():
            case = json.loads(line)
            _strings((case.get("request") or {}).get("body") or case.get("request_base"), bucket)
            body = (case.get("response") or {}).get("body")
            if isinstance(body, dict) and isinstance(body.get("token_ids"), list):
                bucket.add(("ids", tuple(body["token_ids"])))
    return {k: sorted(v, key=str) for k, v in texts.items()}


def _strings(x, out: set) -> None:
    if isinstance(x, str):
        out.add(x)
    elif isinstance(x, dict):
        for v in x.values():
            _strings(v, out)
    elif isinstance(x, list):
        for v in x:
            _strings(v, out)


def candidates(folder: Path):
    """(name, encode(text) -> list[int]) for each installed encoder."""
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(folder / "tokenizer.json"))
    yield "tokenizers.encode", lambda t: hf.encode(t, add_special_tokens=False).ids
    yield "tokenizers.encode_batch_fast", lambda t: hf.encode_batch_fast([t], add_special_tokens=False)[0].ids
    try:
        import fastokens

        ft = fastokens.Tokenizer.from_file(str(folder / "tokenizer.json"))
        yield "fastokens", lambda t: list(ft.encode(t, add_special_tokens=False).ids)
    except Exception as e:  # not installed, or this format unsupported
        print(f"  fastokens: skipped ({type(e).__name__}: {e})", file=sys.stderr)
    try:
        import gigatoken

        gt = gigatoken.Tokenizer(str(folder / "tokenizer.json"))
        yield "gigatoken", lambda t: gt.encode(t).tolist()
    except Exception as e:
        print(f"  gigatoken: skipped ({type(e).__name__}: {e})", file=sys.stderr)


def per_call_ms(fn, text: str, budget: float = 0.5) -> float:
    fn(text)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < budget:
        fn(text)
        n += 1
    return (time.perf_counter() - t0) / n * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--extra-path", action="append", default=[])
    args = ap.parse_args()
    sys.path[:0] = args.extra_path
    from tokenizers import Tokenizer

    print("| model | encoder | texts | identical | long text ms | 1k-token text ms |")
    print("|---|---|---|---|---|---|")
    for folder, items in corpus().items():
        hf = Tokenizer.from_file(str(folder / "tokenizer.json"))
        texts = [hf.decode(list(x[1]), skip_special_tokens=False) if isinstance(x, tuple) else x for x in items]
        expected = [hf.encode(t, add_special_tokens=False).ids for t in texts]
        long_text = "\n".join(texts)
        k = max(1, len(long_text) // max(1, len(hf.encode(long_text).ids)) * 1000)
        short_text = long_text[:k]
        for name, enc in candidates(folder):
            mismatches = 0
            for t, ids in zip(texts, expected):
                try:
                    if list(enc(t)) != ids:
                        mismatches += 1
                except Exception:
                    mismatches += 1
            same = "yes" if mismatches == 0 else f"NO ({mismatches} differ)"
            print(f"| {folder.name} | {name} | {len(texts)} | {same} | {per_call_ms(enc, long_text):.2f} "
                  f"| {per_call_ms(enc, short_text):.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
