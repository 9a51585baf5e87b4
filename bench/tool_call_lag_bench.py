"""Tool-call argument lag, per family: how many tokens after the token that completes each
argument byte the incremental stream sends it.

    python bench/tool_call_lag_bench.py [--families hermes,glm45] [--lines 40]

For every family with an incremental parser, one ``write_file`` call (a path and a Python
module as ``content``) is written in the family's own wire format and tokenized with a real
tokenizer of that family's profile. The call is spelled as segments: raw output text and the
argument bytes it completes (``<parameter=path>`` completes ``"path": "``; a newline that the
format may trim is completed by the character after it; an escape by its last character). The
output is then streamed one token per call through the derender stream in process (the code
the server runs, state encoded and decoded between calls), and for every argument byte the
lag is the token that sent it minus the token that completed it. The accumulated arguments are
checked against the one-shot answer byte for byte.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import statistics
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOKENBRIDGE_SHARED", ROOT.parent / "shared"))
MODELS = SHARED / "models"
TOOLS = [{"type": "function", "function": {"name": "write_file", "description": "Write a file",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                                                          "content": {"type": "string"}},
                         "required": ["path", "content"]}}}]
CODE = [
    "import csv\n", "from collections import defaultdict\n", "\n",
    "def load(path: str) -> dict[str, float]:\n", '    """Totals per item (prices in €)."""\n',
    "    totals: dict[str, float] = defaultdict(float)\n", '    with open(path, newline="") as f:\n',
    "        for row in csv.DictReader(f):\n", '            if not row.get("price"):\n',
    "                continue\n", '            totals[row["item"]] += float(row["price"])  # ünits: €\n',
    "    return dict(totals)\n", "\n",
]

Seg = tuple[str, str]  # raw output text, the argument bytes its last character completes


def escaped(text: str, ascii_only: bool = False) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)[1:-1]


def json_args(args: dict, ascii_only: bool = False) -> list[Seg]:
    """Arguments written as JSON: each character (an escape as one unit) completes itself."""
    raw = json.dumps(args, ensure_ascii=False)
    return [(m, escaped(json.loads(f'"{m}"'), ascii_only) if m not in '{}[]:, "' else m)
            for m in re.findall(r'\\u[0-9a-fA-F]{4}|\\.|.', raw, re.S)]


def completed_json_args(args: dict) -> list[Seg]:
    """Arguments a cut may leave open, then completed (Apertus): a member's separator and key
    are decided by its value's first character (a member cut before it is dropped)."""
    segs: list[Seg] = [("{", "{")]
    for i, (k, v) in enumerate(args.items()):
        key = f'{", " if i else ""}{json.dumps(k, ensure_ascii=False)}: '
        (first, canon), *rest = json_args(v)
        segs += [(key, ""), (first, key + canon), *rest]
    return [*segs, ("}", "}")]


def xml_args(args: dict, key: Callable[[str, bool], str], value_open: str, value_close: str,
             trims: bool) -> list[Seg]:
    """Key/value markup: a member's key and separator are completed by the markup that opens
    its value, each value character by itself, a newline the format may trim by the next."""
    segs: list[Seg] = []
    for i, (k, v) in enumerate(args.items()):
        segs.append((key(k, i == 0) + value_open, f'{", " if i else ""}"{k}": "'))
        if trims:
            segs.append(("\n", ""))
        held = ""  # a newline the format may trim is decided by the character after it
        for ch in v:
            canon, held = held, ""
            if trims and ch == "\n":
                held = escaped(ch)
            else:
                canon += escaped(ch)
            segs.append((ch, canon))
        segs.append((("\n" if trims else "") + value_close, held + '"'))
    return segs


def qwen(args: dict, open_: str = "<tool_call>\n", close: str = "\n</tool_call>", trims: bool = True) -> list[Seg]:
    params = xml_args(args, lambda k, first: f"\n<parameter={k}>", "", "</parameter>", trims)
    return [(f"{open_}<function=write_file>", "{"), *params, ("\n</function>", "}"), (close, "")]


def glm(args: dict) -> list[Seg]:
    params = xml_args(args, lambda k, first: ("" if first else "\n<arg_key>") + f"{k}</arg_key>\n",
                      "<arg_value>", "</arg_value>", False)
    return [("<tool_call>write_file\n<arg_key>", "{"), *params, ("\n</tool_call>", "}")]


def minimax(args: dict) -> list[Seg]:
    params = xml_args(args, lambda k, first: f'\n<parameter name="{k}">', "", "</parameter>", False)
    return [('<minimax:tool_call>\n<invoke name="write_file">', "{"), *params, ("\n</invoke>", "}"),
            ("\n</minimax:tool_call>", "")]


def hermes(args: dict, start: str = "<tool_call>", end: str = "</tool_call>") -> list[Seg]:
    return [(f'{start}\n{{"name": "write_file", "arguments": ', ""), *json_args(args), (f"}}\n{end}", "")]


def pythonic(args: dict, open_: str = "[") -> list[Seg]:
    """``[write_file(k='v', …)]``: a keyword's ``=`` completes its key, a string's first
    character its opening quote too (``''`` or ``'''`` would be read otherwise), and the
    character after a closing quote that quote (another string may continue it)."""
    segs: list[Seg] = [(f"{open_}write_file(", "{")]
    close = ""
    for i, (k, v) in enumerate(args.items()):
        if i:
            segs.append((",", close))
            close = ""
        segs += [(f"{' ' if i else ''}{k}=", f'{", " if i else ""}"{k}": '), ("'", "")]
        body = re.findall(r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}|\\.|.", repr(v)[1:-1], re.S)
        segs += [(m, ('"' if j == 0 else "") + escaped(ast.literal_eval(f"'{m}'"))) for j, m in enumerate(body)]
        segs.append(("'", ""))
        close = '"'
    return [*segs, (")", close + "}"), ("]", "")]


def functiongemma(args: dict) -> list[Seg]:
    """``call:write_file{k:<escape>v<escape>,…}``: a text value's first character completes its
    key too (a value that may be JSON is held), ``<escape>`` its closing quote."""
    segs: list[Seg] = [("<start_function_call>call:write_file{", "{")]
    for i, (k, v) in enumerate(args.items()):
        segs.append((f"{',' if i else ''}{k}:<escape>", ""))
        segs += [(ch, (f'{", " if i else ""}"{k}": "' if j == 0 else "") + escaped(ch)) for j, ch in enumerate(v)]
        segs.append(("<escape>", '"'))
    return [*segs, ("}<end_function_call>", "}")]


def step3(args: dict) -> list[Seg]:
    """Step-3's ``<steptml:parameter name="k">v</steptml:parameter>``: values are stripped, so
    a run of space is completed by the character after it (and a trailing one by nothing)."""
    segs: list[Seg] = [("<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>"
                        '<steptml:invoke name="write_file">', "{")]
    for i, (k, v) in enumerate(args.items()):
        segs.append((f'<steptml:parameter name="{k}">', f'{", " if i else ""}"{k}": "'))
        body = v.rstrip()
        parts = re.findall(r"\s*\S", body)
        segs += [(m, escaped(m.lstrip() if j == 0 else m)) for j, m in enumerate(parts)]
        segs.append((v[len(body):] + "</steptml:parameter>", '"'))
    return [*segs, ("</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>", "}")]


def dsml(args: dict, calls: str = "tool_calls", tag: str = "｜DSML｜") -> list[Seg]:
    """DeepSeek DSML: the name is sent alone, ``{`` with the first parameter's header."""
    params = xml_args(args, lambda k, first: f'\n<{tag}parameter name="{k}" string="true">', "",
                      f"</{tag}parameter>", False)
    params[0] = (params[0][0], "{" + params[0][1])
    return [(f'<{tag}{calls}>\n<{tag}invoke name="write_file">', ""), *params, (f"\n</{tag}invoke>", "}"),
            (f"\n</{tag}{calls}>", "")]


def dots(args: dict) -> list[Seg]:
    """dots' ``<parameter name="k">v</parameter>``: values are stripped (a run of space is
    completed by the character after it) and may be ``null`` (the first character that rules it
    out completes the opening quote too)."""
    segs: list[Seg] = [('<dots_function_call>\n<invoke name="write_file">', "{")]
    for i, (k, v) in enumerate(args.items()):
        segs.append((f'\n<parameter name="{k}">', f'{", " if i else ""}"{k}": '))
        body = v.rstrip()
        segs += [(m, ('"' if j == 0 else "") + escaped(m.lstrip() if j == 0 else m))
                 for j, m in enumerate(re.findall(r"\s*\S", body))]
        segs.append((v[len(body):] + "</parameter>", '"'))
    return [*segs, ("\n</invoke>\n</dots_function_call>", "}")]


def minimax_m3(args: dict, ns: str = "]<]minimax[>[") -> list[Seg]:
    """MiniMax-M3 elements: a key is sent when its tag closes, its opening quote with the first
    character that is not whitespace (an element may still follow)."""
    segs: list[Seg] = [(f'{ns}<tool_call>\n{ns}<invoke name="write_file">', "{")]
    for i, (k, v) in enumerate(args.items()):
        segs.append((f"\n{ns}<{k}>", f'{", " if i else ""}"{k}": '))
        segs += [(ch, ('"' if j == 0 else "") + escaped(ch)) for j, ch in enumerate(v)]
        segs.append((f"{ns}</{k}>", '"'))
    return [*segs, (f"\n{ns}</invoke>", "}"), (f"\n{ns}</tool_call>", "")]


def kimi_k3(args: dict, o: str = "<|open|>", c: str = "<|close|>", s: str = "<|sep|>") -> list[Seg]:
    segs: list[Seg] = [(f'{o}tools{s}{o}call tool="write_file" index="1"{s}', "{")]
    for i, (k, v) in enumerate(args.items()):
        segs.append((f'{o}argument key="{k}" type="string"{s}', f'{", " if i else ""}"{k}": "'))
        segs += [(ch, escaped(ch)) for ch in v]
        segs.append((f"{c}argument{s}", '"'))
    return [*segs, (f"{c}call{s}", "}"), (f"{c}tools{s}", "")]


def k2_horizon(args: dict) -> list[Seg]:
    """K2 Horizon's xml format: the name is sent at the first key, ``{`` with the first value's open."""
    segs: list[Seg] = [("<ifm|tool_calls><ifm|tool_call>write_file<ifm|arg_key>", "")]
    for i, (k, v) in enumerate(args.items()):
        segs.append((("<ifm|arg_key>" if i else "") + f"{k}</ifm|arg_key><ifm|arg_value>", f'{", " if i else "{"}"{k}": "'))
        segs += [(ch, escaped(ch)) for ch in v]
        segs.append(("</ifm|arg_value>", '"'))
    return [*segs, ("</ifm|tool_call>", "}"), ("</ifm|tool_calls>", "")]


def gemma4(args: dict, q: str = '<|"|>') -> list[Seg]:
    """Gemma 4's ``call:name{k:<|"|>v<|"|>,…}``: a quoted value's opening completes its key."""
    segs: list[Seg] = [("<|tool_call>call:write_file{", "")]
    for i, (k, v) in enumerate(args.items()):
        segs.append((f"{',' if i else ''}{k}:{q}", f'{", " if i else "{"}"{k}": "'))
        segs += [(ch, escaped(ch)) for ch in v]
        segs.append((q, '"'))
    return [*segs, ("}<tool_call|>", "}")]


DS_BEGIN, DS_END = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>", "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"

#: family -> (model folder, reasoning parser, the call's segments)
FAMILIES: dict[str, tuple[str, str | None, Callable[[dict], list[Seg]]]] = {
    "hermes": ("qwen3", None, hermes),
    "longcat": ("qwen3", None, lambda a: hermes(a, "<longcat_tool_call>", "</longcat_tool_call>")),
    "llama3_json": ("llama3", None, lambda a: [('{"name": "write_file", "parameters": ', ""), *json_args(a), ("}", "")]),
    "qwen3_coder": ("qwen3", None, qwen),
    "step3p5": ("qwen3", None, qwen),
    "step5": ("qwen3", None, qwen),
    "seed_oss": ("qwen3", None, lambda a: qwen(a, "<seed:tool_call>\n", "\n</seed:tool_call>")),
    "mimo": ("qwen3", None, lambda a: qwen(a, trims=False)),
    "glm45": ("synthetic-families", None, glm),
    "ling3": ("synthetic-families", None, glm),
    "poolside_v1": ("qwen3", None, glm),
    "minimax_m2": ("qwen3", None, minimax),
    "minimax_m3": ("qwen3", None, minimax_m3),
    "kimi_k3": ("qwen3", None, kimi_k3),
    "k2_horizon": ("qwen3", None, k2_horizon),
    "gemma4": ("qwen3", None, gemma4),
    "jamba": ("qwen3", None, lambda a: [('<tool_calls>[{"name": "write_file", "arguments": ', ""), *json_args(a),
                                       ("}]</tool_calls>", "")]),
    "hunyuan_a13b": ("qwen3", None, lambda a: [('<tool_calls>[{"name": "write_file", "arguments": ', ""),
                                              *json_args(a), ("}]</tool_calls>", "")]),
    "phi4_mini_json": ("synthetic-families", None, lambda a: [('functools[{"name": "write_file", "arguments": ', ""),
                                                             *json_args(a), ("}]", "")]),
    "mistral": ("mistral-tekken", None, lambda a: [('[TOOL_CALLS][{"name": "write_file", "arguments": ', ""),
                                                  *json_args(a), ("}]", "")]),
    "inkling": ("qwen3", None, lambda a: [('<|message_model|><|content_invoke_tool_json|>{"name": "write_file", "args": ', ""),
                                         *json_args(a), ("}<|end_message|>", "")]),
    "plamo3": ("qwen3", None, lambda a: [
        ("<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>write_file"
         "<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>", ""),
        *json_args(a), ("<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
                        "<|plamo:end_tool_requests:plamo|>", "")]),
    "granite": ("synthetic-families", None, lambda a: [('<|tool_call|>[{"name": "write_file", "arguments": ', ""),
                                                      *json_args(a), ("}]", "")]),
    "granite4": ("synthetic-families", None, lambda a: hermes(a, "<tool_call>", "</tool_call>")),
    "granite-20b-fc": ("synthetic-families", None, lambda a: [('<function_call> {"name": "write_file", "arguments": ', ""),
                                                             *json_args(a), ("}", "")]),
    "deepseek_v3": ("deepseek-v3", None, lambda a: [(f"{DS_BEGIN}function<｜tool▁sep｜>write_file\n```json\n", ""),
                                                    *json_args(a), (f"\n```{DS_END}", "")]),
    "deepseek_v31": ("deepseek-v3", None, lambda a: [(f"{DS_BEGIN}write_file<｜tool▁sep｜>", ""), *json_args(a),
                                                     (DS_END, "")]),
    "ernie45": ("qwen3", None, hermes),
    "internlm": ("qwen3", None, lambda a: [('<|action_start|><|plugin|>{"name": "write_file", "parameters": ', ""),
                                          *json_args(a), ("}<|action_end|>", "")]),
    "deepseek_v32": ("deepseek-v3", None, lambda a: dsml(a, "function_calls")),
    "deepseek_v4": ("deepseek-v3", None, dsml),
    "deepseek_v41": ("deepseek-v3", None, lambda a: dsml(a, " calls", "｜DSML｜ ")),
    "pythonic": ("llama3", None, pythonic),
    "functiongemma": ("qwen3", None, functiongemma),
    "step3": ("qwen3", None, step3),
    "gigachat3": ("qwen3", None, lambda a: [('<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "write_file", '
                                             '"arguments": ', ""), *json_args(a), ("}", "")]),
    "apertus": ("qwen3", None, lambda a: [("<|tools_prefix|>[{", ""), ('"write_file": ', ""),
                                          *completed_json_args(a), ("}]<|tools_suffix|>", "")]),
    "dots": ("qwen3", None, dots),
    "cohere_command3": ("qwen3", None, lambda a: [('<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "write_file", '
                                                    '"parameters": ', ""), *json_args(a), ("}]<|END_ACTION|>", "")]),
    "muse": ("qwen3", None, lambda a: [
        ('<|start|>assistant to=write_file<|message|><atem:function_calls><atem:invoke name="write_file">', "{"),
        *xml_args(a, lambda k, first: f'<atem:parameter name="{k}">', "", "</atem:parameter>", False),
        ("</atem:invoke>", "}"), ("</atem:function_calls><|eom|>", "")]),
    "xlam": ("qwen3", None, lambda a: [('[{"name": "write_file", "arguments": ', ""), *json_args(a), ("}]", "")]),
    "olmo3": ("qwen3", None, lambda a: pythonic(a, "")[:-1]),
    "lfm2": ("qwen3", None, lambda a: [*pythonic(a, "<|tool_call_start|>["), ("<|tool_call_end|>", "")]),
    "llama4_pythonic": ("llama3", None, lambda a: pythonic(a, "<|python_start|>[")),
    "openai": ("gpt-oss", "openai_gptoss", lambda a: [
        ("<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>", ""),
        *json_args(a, ascii_only=True), ("<|call|>", "")]),
}


def ready_tokens(decode: Callable[[list[int]], str], ids: list[int], segs: list[Seg]) -> list[int]:
    """For each argument byte, the index of the token whose text completes its segment."""
    raw = "".join(r for r, _ in segs)
    out, end, k = [], 0, 0
    for r, canon in segs:
        end += len(r)
        while not decode(ids[: k + 1]).startswith(raw[:end]):
            k += 1
        out += [k] * len(canon)
    return out


def measure(family: str, lines: int) -> dict:
    import msgspec

    from tokenbridge.config import ServeConfig
    from tokenbridge.derender.stream import chat_chunk
    from tokenbridge.model.context import load_model
    from tokenbridge.protocol.engine import DerenderChatRequest

    folder, reasoning, spell = FAMILIES[family]
    if folder == "gpt-oss":
        os.environ.setdefault("TIKTOKEN_ENCODINGS_BASE", str(MODELS / "gpt-oss"))
    mode = "auto" if (MODELS / folder / "tokenizer.json").exists() else "mistral"
    model = load_model(str(MODELS / folder), max_model_len=32768, tokenizer_mode=mode)
    cfg = ServeConfig(tool_call_parser=family, reasoning_parser=reasoning, enable_auto_tool_choice=True)
    args = {"path": "prices.py", "content": "".join(CODE[k % len(CODE)] for k in range(lines))}
    segs = spell(args)
    raw = "".join(r for r, _ in segs)
    tok = model.tokenizer
    ids = tok.encode(raw)
    decode = lambda ids: tok.decode(ids, skip_special_tokens=False)  # noqa: E731
    if decode(ids) != raw:
        return {"family": family, "skipped": "the tokenizer does not round-trip the output"}
    ready = ready_tokens(decode, ids, segs)
    prompt = tok.encode("<|start|>assistant" if folder == "gpt-oss" else "hi")
    chat = {"messages": [{"role": "user", "content": "Write prices.py"}], "tools": TOOLS}
    base = {"model": "m", "stream": True, "prompt_token_ids": prompt, "chat_request": chat}
    state, sent_at, name, got = None, [], None, ""
    for k, token in enumerate(ids):
        last = k == len(ids) - 1
        body = dict(base, stream_state=state, generate_chunk={"request_id": "r", "choices": [
            {"index": 0, "token_ids": [token], "finish_reason": "stop" if last else None}]})
        resp = chat_chunk(model, cfg, msgspec.convert(body, DerenderChatRequest))
        state = resp["stream_state"]
        for ch in msgspec.to_builtins(resp["chunk"])["choices"]:
            for tc in ch["delta"].get("tool_calls") or []:
                name = name or tc["function"].get("name")
                piece = tc["function"].get("arguments") or ""
                got += piece
                sent_at += [k] * len(piece)
    want = "".join(c for _, c in segs)
    exact = name == "write_file" and got == want
    lags = [s - r for s, r in zip(sent_at, ready)] if exact else []
    return {"family": family, "tokens": len(ids), "exact": exact,
            "first_lag": lags[0] if lags else None, "max_lag": max(lags) if lags else None,
            "p99_lag": sorted(lags)[int(len(lags) * 0.99)] if lags else None,
            "worst": (want[max(0, lags.index(max(lags)) - 12): lags.index(max(lags)) + 3]) if lags else None}


def report(rows: list[dict]) -> None:
    print(f"{'family':<14} {'tokens':>6} {'first':>5} {'max':>4} {'p99':>4}  exact  worst at")
    for r in rows:
        if "skipped" in r:
            print(f"{r['family']:<14} skipped: {r['skipped']}")
            continue
        print(f"{r['family']:<14} {r['tokens']:>6} {r['first_lag']!s:>5} {r['max_lag']!s:>4} {r['p99_lag']!s:>4}  "
              f"{r['exact']!s:<5}  {r['worst']!r}")
    lags = [r["max_lag"] for r in rows if r.get("max_lag") is not None]
    if lags:
        print(f"argument lag over {len(lags)} families: max {max(lags)}, median of maxima {statistics.median(lags)} tokens")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", help="comma-separated (default: every family listed here)")
    ap.add_argument("--lines", type=int, default=40, help="lines of code in the call's content")
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    names = a.families.split(",") if a.families else list(FAMILIES)
    unknown = set(names) - set(FAMILIES)
    if unknown:
        sys.exit(f"no call spelling for {sorted(unknown)}")
    rows = [measure(n, a.lines) for n in names]
    report(rows)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
