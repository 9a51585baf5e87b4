"""Tool-call streaming: state size, per-call cost and argument latency, incremental vs whole.

    python bench/tool_call_stream_bench.py [--tokens 2000] [--call-tokens 1500] [--port 20100]
        [--oracle-port Q] [--cpu 1] [--family hermes|pythonic]

Starts two tokenbridge servers on the qwen3 profile (hermes + qwen3 reasoning), one with
``--tool-call-streaming incremental`` and one with ``whole``, each pinned to one core
(``taskset -c CPU``, one at a time). ``--oracle-port`` adds a running vLLM 0.33 render server
(``shared/oracle/serve.sh profile qwen3 Q``) side by side.

The output is reasoning followed by one ``write_file`` call whose arguments take
``--call-tokens`` of the ``--tokens``, tokenized with the model's tokenizer and streamed one
token per call, carrying ``stream_state``. Reported per server: the first, last and largest
request body; mean call time over the first and the last 200 calls (the last ones inside the
call), and inside the call over its first and last 200 (the same work, so only state growth
changes it); when the name and the first argument byte arrive, and, for every argument character,
how many tokens after the token that completed it in the output it was sent (its lag). The
accumulated stream is checked byte for byte against the server's own one-shot answer.

``--family pythonic`` runs the llama3-pythonic profile instead: the output is the call list
``[write_file(path=…, content='…')]`` alone (a pythonic list must open the output), so the call is
all ``--tokens``; its argument lag is the in-process row below (the arguments are not in the
output verbatim).

Then the argument lag of every family with an incremental parser, one row per family, measured
in process by ``tool_call_lag_bench.py`` (where the token that completes each byte is read from
the family's own call spelling; ``--no-families`` skips it).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOKENBRIDGE_SHARED", ROOT.parent / "shared"))
MODEL = SHARED / "models" / "qwen3"
NAME = "Qwen/Qwen3-8B"
PYTHONIC_NAME = "meta-llama/Llama-3.2-3B-Instruct"
WINDOW = 200
_TOOLS = [{"type": "function", "function": {"name": "write_file", "description": "Write a file",
           "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                                                           "content": {"type": "string"}},
                          "required": ["path", "content"]}}}]
_MESSAGES = [{"role": "user", "content": "Write a small Python module that parses a CSV of prices."}]
_REASONING = ("The user wants a module that reads a CSV of prices — columns date, item, price in €. "
              "I should validate rows, skip blanks, and report totals per item. ")
_CODE = [
    "import csv\n", "from collections import defaultdict\n", "\n",
    "def load(path: str) -> dict[str, float]:\n", '    """Totals per item (prices in €)."""\n',
    "    totals: dict[str, float] = defaultdict(float)\n", "    with open(path, newline=\"\") as f:\n",
    "        for row in csv.DictReader(f):\n", "            if not row.get(\"price\"):\n",
    "                continue\n", "            totals[row[\"item\"]] += float(row[\"price\"])  # ünits: €\n",
    "    return dict(totals)\n", "\n",
]


def build_pythonic_output(tok, n_tokens: int) -> tuple[list[int], str]:
    """``[write_file(path='prices.py', content='…')]`` + ``<|eot_id|>``: the ids and the
    canonical arguments."""
    code, k = "", 0
    while len(tok.encode(f"[write_file(path='prices.py', content={code!r})]", add_special_tokens=False).ids) < n_tokens - 1:
        code += _CODE[k % len(_CODE)]
        k += 1
    ids = tok.encode(f"[write_file(path='prices.py', content={code!r})]", add_special_tokens=False).ids
    args = json.dumps({"path": "prices.py", "content": code}, ensure_ascii=False)
    return ids + [tok.token_to_id("<|eot_id|>")], args


def build_output(tok, n_tokens: int, call_tokens: int) -> tuple[list[int], str]:
    """``<think>…</think>\\n\\n<tool_call>\\n{"name": "write_file", "arguments": {…}}\\n</tool_call>``
    + ``<|im_end|>``: the ids and the canonical arguments."""
    def call_text(code: str) -> tuple[str, str]:
        args = json.dumps({"path": "prices.py", "content": code}, ensure_ascii=False)
        return f'<tool_call>\n{{"name": "write_file", "arguments": {args}}}\n</tool_call>', args

    code, k = "", 0
    while len(tok.encode(call_text(code)[0]).ids) < call_tokens:
        code += _CODE[k % len(_CODE)]
        k += 1
    call, args = call_text(code)
    reasoning, head = "", "</think>\n\n"
    while len(tok.encode(reasoning + head + call).ids) < n_tokens - 1:
        reasoning += _REASONING
    text = reasoning + head + call
    ids = tok.encode(text).ids
    drop = len(ids) - (n_tokens - 1)
    if drop > 0:
        text = text[len(tok.decode(ids[:drop])):]
        ids = tok.encode(text).ids
    return ids + [tok.token_to_id("<|im_end|>")], args


class Client:
    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def post(self, path: str, payload: bytes) -> dict:
        self.conn.request("POST", path, payload, {"content-type": "application/json"})
        r = self.conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise SystemExit(f"{path}: HTTP {r.status}: {body[:300]!r}")
        return json.loads(body)


def ready_tokens(tok, ids: list[int], args: str) -> tuple[list[int], int]:
    """For each argument character, the index of the token that completes it in the output;
    and the index of the token where the call starts."""
    ends = [len(tok.decode(ids[: k + 1], skip_special_tokens=False)) for k in range(len(ids))]
    text = tok.decode(ids, skip_special_tokens=False)
    start = text.index('"arguments": ') + len('"arguments": ')
    assert text[start : start + len(args)] == args
    call = text.index("<tool_call>")
    out, k = [], 0
    for pos in range(start, start + len(args)):
        while ends[k] <= pos:
            k += 1
        out.append(k)
    return out, next(i for i, e in enumerate(ends) if e > call)


def run(port: int, ids: list[int], ready: list[int], label: str, call_start: int = 0) -> dict:
    srv = Client(port)
    ready = ready or [0]
    chat_request = {"model": NAME, "messages": _MESSAGES, "tools": _TOOLS}
    prompt = srv.post("/v1/chat/completions/render", json.dumps(chat_request).encode())["token_ids"]
    base = {"model": NAME, "stream": True, "prompt_token_ids": prompt, "prompt_tokens": len(prompt),
            "chat_request": chat_request}
    state, times, sizes = None, [], []
    name, args, sent_at, name_at = "", "", [], None
    for k, token in enumerate(ids):
        chunk = {"request_id": "chatcmpl-bench",
                 "choices": [{"index": 0, "token_ids": [token], "finish_reason": "stop" if k == len(ids) - 1 else None}]}
        payload = json.dumps(dict(base, generate_chunk=chunk, stream_state=state)).encode()
        t0 = time.perf_counter()
        resp = srv.post("/v1/chat/completions/derender", payload)
        times.append(time.perf_counter() - t0)
        sizes.append(len(payload))
        state = resp["stream_state"]
        for ch in resp["chunk"]["choices"]:
            for tc in ch["delta"].get("tool_calls") or []:
                if tc["function"].get("name"):
                    name += tc["function"]["name"]
                    name_at = k if name_at is None else name_at
                piece = tc["function"].get("arguments") or ""
                args += piece
                sent_at += [k] * len(piece)
    oneshot = srv.post("/v1/chat/completions/derender", json.dumps(dict(
        base, stream=False, generate_response={"request_id": "chatcmpl-bench", "prompt_token_ids": prompt,
                                               "choices": [{"index": 0, "token_ids": ids, "finish_reason": "stop"}]})).encode())
    want = oneshot["choices"][0]["message"]["tool_calls"][0]["function"]
    exact = name == want["name"] and args == want["arguments"]
    lags = [s - r for s, r in zip(sent_at, ready)] if exact and len(ready) > 1 else []
    first, last = statistics.mean(times[:WINDOW]) * 1000, statistics.mean(times[-WINDOW:]) * 1000
    in_call = times[call_start:]
    call_ratio = statistics.mean(in_call[-WINDOW:]) / statistics.mean(in_call[:WINDOW])
    row = {"label": label, "first_bytes": sizes[0], "last_bytes": sizes[-1], "max_bytes": max(sizes),
           "first_ms": first, "last_ms": last, "ratio": last / first, "call_ratio": call_ratio, "exact": exact,
           "name_at": name_at, "first_arg_at": sent_at[0] if sent_at else None, "first_arg_ready": ready[0],
           "max_lag": max(lags) if lags else None,
           "p99_lag": sorted(lags)[int(len(lags) * 0.99)] if lags else None}
    print(f"{label}: request first {sizes[0]} B, last {sizes[-1]} B (+{sizes[-1] - sizes[0]}), max {max(sizes)} B; "
          f"mean call first {WINDOW} {first:.2f} ms, last {WINDOW} {last:.2f} ms (x{last / first:.2f}; "
          f"inside the call, its last {WINDOW} vs its first {WINDOW}: x{call_ratio:.2f}); "
          f"name at token {name_at}, first argument byte at {row['first_arg_at']} (completed by {ready[0]}); "
          f"argument lag max {row['max_lag']} p99 {row['p99_lag']} tokens; stream == one-shot byte for byte: {exact}")
    return row


def start(port: int, mode: str, cpu: str) -> subprocess.Popen:
    if NAME == PYTHONIC_NAME:
        flags = ["--tool-call-parser", "pythonic", "--chat-template",
                 str(SHARED / "models" / "templates" / "llama3.2-pythonic.vllm.jinja")]
    else:
        flags = ["--tool-call-parser", "hermes", "--reasoning-parser", "qwen3"]
    argv = [sys.executable, "-m", "tokenbridge.cli", "serve", str(MODEL), "--host", "127.0.0.1", "--port", str(port),
            "--served-model-name", NAME, *flags, "--enable-auto-tool-choice",
            "--max-model-len", "8192", "--workers", "1", "--tool-call-streaming", mode]
    if shutil.which("taskset"):
        argv = ["taskset", "-c", cpu, *argv]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(300):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGTERM)
    raise SystemExit(f"server on port {port} did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=2000)
    ap.add_argument("--call-tokens", type=int, default=1500)
    ap.add_argument("--port", type=int, default=20100, help="first of the two ports to serve on")
    ap.add_argument("--oracle-port", type=int, help="a running vLLM 0.33 render server (qwen3 profile)")
    ap.add_argument("--cpu", default="1", help="the core the servers are pinned to")
    ap.add_argument("--json", help="write the numbers here")
    ap.add_argument("--no-families", action="store_true", help="skip the per-family argument lag")
    ap.add_argument("--family", choices=("hermes", "pythonic"), default="hermes")
    a = ap.parse_args()
    global MODEL, NAME
    if a.family == "pythonic":
        MODEL, NAME = SHARED / "models" / "llama3", PYTHONIC_NAME
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    if a.family == "pythonic":
        ids, args = build_pythonic_output(tok, a.tokens)
        ready, call_start = [], 0
    else:
        ids, args = build_output(tok, a.tokens, a.call_tokens)
        ready, call_start = ready_tokens(tok, ids, args)
    print(f"output: {len(ids)} tokens, the call from token {call_start} on; arguments {len(args)} characters; "
          f"load: {os.getloadavg()[0]:.2f} (1-min average over the machine's {os.cpu_count()} cores)")
    rows = []
    for offset, mode in enumerate(("incremental", "whole")):
        proc = start(a.port + offset, mode, a.cpu)
        try:
            rows.append(run(a.port + offset, ids, ready, f"tokenbridge {mode}", call_start))
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
    if a.oracle_port:
        rows.append(run(a.oracle_port, ids, ready, "vLLM 0.33", call_start))
    if not a.no_families:
        sys.path.insert(0, str(Path(__file__).parent))
        import tool_call_lag_bench as lag

        print("argument lag per family (tokens after the completing token; in process, one token per call):")
        families = [lag.measure(name, 40) for name in lag.FAMILIES]
        lag.report(families)
        rows.append({"families": families})
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
