"""The gpt-oss Harmony encoding, loaded once per process.

``openai_harmony`` reads ``o200k_base.tiktoken`` from ``$TIKTOKEN_ENCODINGS_BASE`` (as vLLM
requires); when that is unset and the tokenizer's folder ships the file, the folder is used.
Render (Harmony prompts) and derender (the ``openai``/``openai_gptoss`` parsers, through
``ParseContext.harmony``) share this one encoding.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

ENCODINGS_ENV = "TIKTOKEN_ENCODINGS_BASE"
VOCAB_FILE = "o200k_base.tiktoken"

_encoding = None


def harmony_encoding(vocab: Any = None):
    """The process-wide ``HarmonyGptOss`` encoding (``vocab``: the tokenizer whose folder may
    hold the encoding file)."""
    global _encoding
    if _encoding is None:
        from openai_harmony import HarmonyEncodingName, load_harmony_encoding

        folder = getattr(vocab, "folder", None)
        if not os.environ.get(ENCODINGS_ENV) and folder and (Path(folder) / VOCAB_FILE).is_file():
            os.environ[ENCODINGS_ENV] = str(folder)
        _encoding = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    return _encoding
