"""The benchmark workloads on the qwen3 profile, built from the real tokenizer.

Each workload is a route plus a list of request bodies (sent in turn by wrk) and the raw
tokenizer operation on the same payload (the floor a server cannot beat: encode of the
rendered prompt text for render, decode of the output ids for derender).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Callable

from tokenizers import Tokenizer

IM_END = "<|im_end|>"
WORDS = (
    "the quarterly report shows revenue growth across regions while costs remained stable and "
    "engineering shipped three releases with fewer regressions than planned although the "
    "migration of the billing service slipped by two weeks because of a vendor outage in march "
    "customers asked for better exports dashboards alerts and an offline mode for field teams "
    "who travel through areas without coverage so the roadmap now prioritises sync conflicts"
).split()
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search_docs",
        "description": "Search the internal documentation and return the best passages",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"],
        },
    },
}


SEQ = "#SEQ#"


@dataclass
class Workload:
    name: str
    path: str
    bodies: list[bytes]
    raw_label: str
    raw_op: Callable[[], object]
    info: str
    unique: bool = False  # bodies hold SEQ, which the load generator makes unique per request
    encode_texts: tuple[str, ...] = ()  # for render workloads: the texts the raw op encodes


class Prose:
    """Deterministic English-like text of a requested token length."""

    def __init__(self, tok: Tokenizer, seed: int = 0) -> None:
        self.tok = tok
        self.rng = random.Random(seed)

    def sentence(self) -> str:
        words = [self.rng.choice(WORDS) for _ in range(self.rng.randint(8, 16))]
        return " ".join(words).capitalize() + ". "

    def text(self, tokens: int) -> str:
        out = ""
        while len(self.tok.encode(out, add_special_tokens=False).ids) < tokens:
            out += self.sentence()
        return out.strip()


def _chat_render(model: str, messages: list, tools: list | None = None) -> dict:
    body = {"model": model, "messages": messages}
    if tools:
        body["tools"] = tools
        body["tool_choice"] = "auto"
    return body


def _dump(body: dict) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def build(tok: Tokenizer, model: str, render: Callable[[str, dict], dict]) -> list[Workload]:
    """All workloads; ``render(path, body)`` asks a running server for the prompt ids once."""
    prose = Prose(tok)
    eos = tok.token_to_id(IM_END)

    def prompt_text(path: str, body: dict) -> str:
        ids = render(path, body)["token_ids"]
        return tok.decode(ids, skip_special_tokens=False)

    workloads = []

    short = _chat_render(model, [{"role": "user", "content": prose.text(85)}])
    short_text = prompt_text("/v1/chat/completions/render", short)
    workloads.append(Workload(
        "render 100 tok", "/v1/chat/completions/render", [_dump(short)],
        "encode", lambda: tok.encode(short_text, add_special_tokens=False),
        f"{len(tok.encode(short_text).ids)} prompt tokens, the same body every request", encode_texts=(short_text,),
    ))

    short_new = _chat_render(model, [{"role": "user", "content": f"Request {SEQ}: {prose.text(80)}"}])
    short_new_text = prompt_text("/v1/chat/completions/render", short_new)
    workloads.append(Workload(
        "render 100 tok, new text", "/v1/chat/completions/render", [_dump(short_new)],
        "encode", lambda: tok.encode(short_new_text, add_special_tokens=False),
        f"{len(tok.encode(short_new_text).ids)} prompt tokens, a user message never seen before in every request",
        unique=True, encode_texts=(short_new_text,),
    ))

    base = prose.text(1150)
    fresh_body = _chat_render(model, [{"role": "user", "content": f"Request {SEQ}: {base}"}], [WEATHER_TOOL])
    tool_text = prompt_text("/v1/chat/completions/render", fresh_body)
    tool_tokens = len(tok.encode(tool_text).ids)
    workloads.append(Workload(
        "render 1.2k + tool, new text", "/v1/chat/completions/render", [_dump(fresh_body)],
        "encode", lambda: tok.encode(tool_text, add_special_tokens=False),
        f"{tool_tokens} prompt tokens, a user message never seen before in every request", unique=True,
        encode_texts=(tool_text,),
    ))

    for label, target, sizes in (("8k", 7500, (100, 60, 80, 60)), ("32k", 31000, (400, 150, 350, 150))):
        history = [{"role": "system", "content": prose.text(300)}]
        turn = 0
        while len(tok.encode(json.dumps(history)).ids) < target:
            call_id = f"call_{turn:04d}"
            history += [
                {"role": "user", "content": prose.text(sizes[0])},
                {"role": "assistant", "content": prose.text(sizes[1]), "tool_calls": [{
                    "id": call_id, "type": "function",
                    "function": {"name": "search_docs", "arguments": json.dumps({"query": prose.sentence(), "limit": 5})},
                }]},
                {"role": "tool", "tool_call_id": call_id, "content": prose.text(sizes[2])},
                {"role": "assistant", "content": prose.text(sizes[3])},
            ]
            turn += 1
        last_turn = prose.text(60)
        tools = [WEATHER_TOOL, SEARCH_TOOL]
        body = _chat_render(model, [*history, {"role": "user", "content": f"Turn {SEQ}: {last_turn}"}], tools)
        text = prompt_text("/v1/chat/completions/render", body)
        workloads.append(Workload(
            f"render {label} multi-turn, new last turn", "/v1/chat/completions/render", [_dump(body)],
            "encode", lambda text=text: tok.encode(text, add_special_tokens=False),
            f"{len(tok.encode(text).ids)} prompt tokens, {turn} turns with tool calls and results, a new last user "
            "message per request", unique=True, encode_texts=(text,),
        ))
    fresh_history = [{**history[0], "content": f"Session {SEQ}. {history[0]['content']}"}, *history[1:]]
    body = _chat_render(model, [*fresh_history, {"role": "user", "content": last_turn}], tools)
    workloads.append(Workload(
        "render 32k never seen", "/v1/chat/completions/render", [_dump(body)],
        "encode", lambda text=text: tok.encode(text, add_special_tokens=False),
        "the 32k conversation with a new system prompt per request: no part of it was seen before", unique=True,
        encode_texts=(text,),
    ))

    prompts = [prose.text(120) for _ in range(8)]
    completions = {"model": model, "prompt": prompts, "max_tokens": 64}
    workloads.append(Workload(
        "render completions 8 prompts", "/v1/completions/render", [_dump(completions)],
        "encode x8", lambda: [tok.encode(p, add_special_tokens=False) for p in prompts],
        f"8 x ~{len(tok.encode(prompts[0]).ids)} tokens", encode_texts=tuple(prompts),
    ))

    tokenize_text = prose.text(1100)
    workloads.append(Workload(
        "tokenize 1.1k new text", "/tokenize", [_dump({"model": model, "prompt": f"Note {SEQ}: {tokenize_text}"})],
        "encode", lambda: tok.encode(tokenize_text, add_special_tokens=False),
        f"{len(tok.encode(tokenize_text).ids)} tokens of text never seen before per request", unique=True,
        encode_texts=(tokenize_text,),
    ))

    chat_request = _chat_render(model, [{"role": "user", "content": "What is the weather in Paris and Rome?"}], [WEATHER_TOOL])
    prompt_ids = render("/v1/chat/completions/render", chat_request)["token_ids"]
    out_text = (
        "<think>\n" + prose.text(120) + "\n</think>\n\n" + prose.text(30)
        + '\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n</tool_call>'
    )
    out_ids = tok.encode(out_text, add_special_tokens=False).ids + [eos]
    derender = {
        "model": model,
        "generate_response": {"request_id": "bench-1", "choices": [{"index": 0, "token_ids": out_ids, "finish_reason": "stop"}]},
        "prompt_tokens": len(prompt_ids), "prompt_token_ids": prompt_ids, "chat_request": chat_request,
    }
    workloads.append(Workload(
        "derender 200 tok reasoning+tool", "/v1/chat/completions/derender", [_dump(derender)],
        "decode", lambda: tok.decode(out_ids, skip_special_tokens=True),
        f"{len(out_ids)} output tokens",
    ))

    lp_request = {"model": model, "messages": [{"role": "user", "content": "Write a long report."}],
                  "logprobs": True, "top_logprobs": 5}
    lp_prompt = render("/v1/chat/completions/render", lp_request)["token_ids"]
    lp_ids = tok.encode("<think>\n\n</think>\n\n" + prose.text(1990), add_special_tokens=False).ids[:1999] + [eos]
    rng = random.Random(1)
    content = []
    for tid in lp_ids:
        alts = [tid] + [rng.randrange(1000, 150000) for _ in range(4)]
        top = [{"token_id": a, "logprob": -0.25 * r - rng.random(), "rank": r + 1} for r, a in enumerate(alts)]
        content.append({"token_id": tid, "logprob": top[0]["logprob"], "rank": 1, "top_logprobs": top})
    logprobs = {
        "model": model,
        "generate_response": {"request_id": "bench-2", "choices": [{
            "index": 0, "token_ids": lp_ids, "finish_reason": "stop", "logprobs": {"content": content}}]},
        "prompt_tokens": len(lp_prompt), "prompt_token_ids": lp_prompt, "chat_request": lp_request,
    }
    vocab_ids = sorted({t for c in content for t in (x["token_id"] for x in c["top_logprobs"])})
    workloads.append(Workload(
        "derender 2k tok top-5 logprobs", "/v1/chat/completions/derender", [_dump(logprobs)],
        "decode + 5 pieces/token", lambda: (tok.decode(lp_ids), [tok.decode([t]) for t in vocab_ids[:len(lp_ids) * 5]]),
        f"{len(lp_ids)} output tokens",
    ))
    return workloads
