"""Caches a client can fill are bounded: in entries of bounded size (token bytes, piece texts)
or in bytes (compiled templates, content-format verdicts); the default body limit follows the
model's limits."""

from __future__ import annotations

import json

from conftest import MODELS
from tokenbridge.config import default_max_body_bytes
from tokenbridge.model import template
from tokenbridge.model.tokenizer import HFTokenizer
from tokenbridge.render import conversation


def _qwen3() -> HFTokenizer:
    path = MODELS / "qwen3"
    return HFTokenizer(path, json.loads((path / "tokenizer_config.json").read_text()))


def test_token_bytes_and_piece_texts_are_bounded_whatever_ids_arrive():
    tok = _qwen3()
    assert tok.token_bytes(9707) == b"Hello"
    for i in range(tok.vocab_size, tok.vocab_size + 100_000):
        assert tok.token_bytes(i) == b""
        assert tok.piece_text(i) is None
    assert tok.token_bytes.cache_info().currsize <= tok.token_bytes.cache_info().maxsize < 100_000
    assert not hasattr(tok.piece_text, "cache_info")  # kept only by derender's bounded table


def test_compiled_templates_are_bounded_in_bytes():
    pad = "{# " + "x" * 50_000 + " #}"
    for i in range(200):  # 10 MB of distinct templates
        assert template.compile_template(f"{pad}{i}").render() == str(i)
    assert template._compiled.size <= 1 << 20


def test_content_format_verdicts_are_bounded_in_bytes():
    pad = "{# " + "x" * 50_000 + " #}"
    for i in range(200):
        assert conversation.detect_content_format(f"{pad}{{% for m in messages %}}{{{{ m.content }}}}{{% endfor %}}{i}") == "string"
    assert conversation._formats.size <= 1 << 20


def test_default_body_limit_follows_max_model_len_and_max_logprobs():
    assert default_max_body_bytes(8192, 20) == 8192 * 64 * 22 + (1 << 20)
    assert default_max_body_bytes(8192, 0) < default_max_body_bytes(8192, 20)
    assert default_max_body_bytes(16, 20) == 2 << 20  # the floor
    assert default_max_body_bytes(1 << 20, 20) == 64 << 20  # the ceiling
