"""``MistralTokenizer``: ``--tokenizer-mode mistral`` on mistral-common (tekken or SentencePiece).

It follows vLLM 0.33's mistral wrapper: special tokens are never parsed from text, chat prompts
are token ids from mistral-common's request encoder (no chat template), and token strings keep
tekken's partial-UTF-8 pieces as raw bytes so the incremental detokenizer can join them.
mistral-common is imported here only, when the mode is selected.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

# A tekken piece that is an incomplete UTF-8 sequence travels as this marker + its bytes in hex,
# so token strings stay ``str`` (stream state requires it) yet rebuild the exact bytes.
_BYTES_MARK = "\U0010fffe"
_REPLACEMENT = "\ufffd"
_LANG_PREFIX = re.compile(r"^lang:[a-z]{2}")
# Special tokens that survive skip_special_tokens and token-string joins (the tool parser needs them).
_KEPT_SPECIAL = ("[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]")


class MistralTokenizer:
    """mistral-common tokenizer with the ``HFTokenizer`` interface render and derender use."""

    kind = "mistral"
    byte_level = False

    def __init__(self, folder: Path) -> None:
        from mistral_common.protocol.instruct.validator import ValidationMode
        from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer as _Mistral
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer
        from mistral_common.tokens.tokenizers.utils import get_one_valid_tokenizer_file

        self.folder = folder
        name = get_one_valid_tokenizer_file(os.listdir(folder))
        self._mistral = _Mistral.from_file(str(folder / name), mode=ValidationMode.test)
        self._tok = self._mistral.instruct_tokenizer.tokenizer
        self._keep, self._ignore = SpecialTokenPolicy.KEEP, SpecialTokenPolicy.IGNORE
        self.is_tekken = isinstance(self._tok, Tekkenizer)
        self.version = int(str(self._tok.version.value).split("v")[-1])
        self.vocab_size: int = self._tok.n_words
        self.max_chars_per_token = max(map(len, self._tok.vocab()))
        self.all_special_ids: frozenset[int] = frozenset(
            i for i in range(self.vocab_size) if self._tok.is_special(i)
        )
        self._special_text = {i: self._tok.decode([i], self._keep) for i in self.all_special_ids}
        self._special_id = {t: i for i, t in sorted(self._special_text.items(), reverse=True)}
        self._kept_ids = frozenset(self._special_id[t] for t in _KEPT_SPECIAL if t in self._special_id)
        self._dropped_texts = frozenset(self._special_text.values()) - set(_KEPT_SPECIAL)
        self.bos_token_id: int = self._tok.bos_id
        self.eos_token_id: int = self._tok.eos_id
        self.special_tokens: dict[str, str] = {
            "bos_token": self._special_text[self.bos_token_id],
            "eos_token": self._special_text[self.eos_token_id],
        }
        self.added_vocab: dict[str, int] = {}  # mistral-common has no added vocabulary
        self.piece_text = lru_cache(maxsize=65536)(self._piece_text)

    # encode / vocab -------------------------------------------------------------------------

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Plain text only: ``<s>`` written in the text is text, never the BOS token."""
        return self._tok.encode(text, bos=add_special_tokens, eos=False)

    def encode_keep_last(self, text: str, keep: int, add_special_tokens: bool = False) -> list[int]:
        """Encode keeping the last ``keep`` ids (left truncation); BOS, when added, stays first."""
        ids = self.encode(text, False)
        if add_special_tokens:
            keep -= 1
        ids = ids[len(ids) - keep :] if keep > 0 else []
        return [self.bos_token_id, *ids] if add_special_tokens else ids

    def encode_with_offsets(self, text: str, add_special_tokens: bool = False):
        raise NotImplementedError("mistral tokenizers do not report offsets")

    def encode_batch(self, texts: list[str], add_special_tokens: bool = False) -> list[list[int]]:
        return [self.encode(t, add_special_tokens) for t in texts]

    def token_to_id(self, token: str) -> int | None:
        if not token:
            return None
        if token in self._special_id:
            return self._special_id[token]
        if self.is_tekken:
            i = self._tok._tekken_token2id_nospecial.get(_piece_bytes(token))
            return None if i is None else i + self._tok.num_special_tokens
        i = self._tok._model.piece_to_id(token)
        return None if i == self._tok._model.unk_id() and token != self._tok._model.id_to_piece(i) else i

    def id_to_token(self, token_id: int) -> str | None:
        return self._tok.id_to_piece(token_id) if 0 <= token_id < self.vocab_size else None

    # decode ---------------------------------------------------------------------------------

    def undecodable(self, ids: list[int]) -> str | None:
        """The error vLLM's ``/detokenize`` reports (as a 500) for an id past the vocabulary:
        SentencePiece's, or Tekken's with the id counted past its special tokens."""
        bad = next((i for i in ids if i >= self.vocab_size), None)
        if bad is None:
            return None
        if self.is_tekken:
            return f"'Invalid token for decoding: {bad - self._tok.num_special_tokens}'"
        return "OUT_OF_RANGE: piece id is out of range."

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        ids = [i for i in ids if 0 <= i < self.vocab_size]
        text = self._tok.decode(ids, self._ignore if skip_special_tokens else self._keep)
        return _LANG_PREFIX.sub("", text) if skip_special_tokens else text

    def ids_to_tokens(self, ids: list[int], skip_special_tokens: bool = False) -> list[str]:
        """vLLM's ``convert_ids_to_tokens``: when skipping, tool-call and think markers stay; on
        tekken, a batch with a partial-UTF-8 piece carries every piece as raw bytes."""
        if skip_special_tokens:
            special = self.all_special_ids
            ids = [i for i in ids if i in self._kept_ids or i not in special]
        tokens = [self._tok.id_to_piece(i) for i in ids]
        if not (skip_special_tokens and self.is_tekken and any(_REPLACEMENT in t for t in tokens)):
            return tokens
        return [
            self._special_text[i]
            if i in self.all_special_ids
            else _BYTES_MARK + self._tok.id_to_byte_piece(i, self._keep).hex()
            for i in ids
        ]

    def tokens_to_string(self, tokens: list[str]) -> str:
        """vLLM's ``convert_tokens_to_string``: special tokens other than the tool-call and think
        markers vanish; text pieces are joined (tekken) or decoded by SentencePiece."""
        if self.is_tekken:
            tokens = [t for t in tokens if t not in self._dropped_texts]
            if not any(t.startswith(_BYTES_MARK) for t in tokens):
                return "".join(tokens)
            ids = [self._tekken_id(t) for t in tokens]
            return self._tok.decode(ids, self._keep)
        out: list[str] = []
        run: list[str] = []
        for t in tokens:
            if t in _KEPT_SPECIAL:
                if run:
                    out.append(self._tok.decode(run, self._ignore))
                    run = []
                out.append(t)
            else:
                run.append(t)
        if run:
            out.append(self._tok.decode(run, self._ignore))
        return "".join(out)

    def _tekken_id(self, token: str) -> int:
        if token in self._special_id:
            return self._special_id[token]
        i = self._tok._tekken_token2id_nospecial.get(_piece_bytes(token))
        return self._tok.unk_id if i is None else i + self._tok.num_special_tokens

    def _piece_text(self, token_id: int) -> str | None:
        """One token decoded alone, as logprobs show it (None when out of the vocab)."""
        if not 0 <= token_id < self.vocab_size:
            return None
        return self._tok.decode([token_id], self._keep)

    # chat -----------------------------------------------------------------------------------

    def render_chat(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        add_generation_prompt: bool,
        continue_final_message: bool,
    ) -> list[int]:
        """Messages -> prompt ids through mistral-common's request encoder.

        Raises ``ValueError`` for anything the encoder or its validator rejects.
        """
        from mistral_common.exceptions import MistralCommonException
        from mistral_common.protocol.instruct.request import ChatCompletionRequest
        from pydantic import ValidationError

        last = messages[-1] if messages else {}
        role = last.get("role") if isinstance(last, dict) else None
        if add_generation_prompt and continue_final_message:
            raise ValueError("Cannot set both `add_generation_prompt` and `continue_final_message` to True.")
        if add_generation_prompt and role == "assistant":
            raise ValueError(
                "Cannot set `add_generation_prompt` to True when the last message is from the "
                "assistant. Consider using `continue_final_message` instead."
            )
        if continue_final_message and role != "assistant":
            raise ValueError(
                "Cannot set `continue_final_message` to True when the last message is not from the assistant."
            )
        try:
            request = ChatCompletionRequest.from_openai(
                messages=messages, tools=tools, continue_final_message=continue_final_message
            )
            return self._mistral.encode_chat_completion(request).tokens
        except (AssertionError, MistralCommonException, ValidationError, ValueError, TypeError, KeyError) as e:
            raise ValueError(str(e)) from e


def _piece_bytes(token: str) -> bytes:
    if token.startswith(_BYTES_MARK):
        return bytes.fromhex(token[len(_BYTES_MARK) :])
    return token.encode("utf-8")


def reasoning_efforts() -> list[str]:
    """The ``reasoning_effort`` values mistral-common accepts."""
    from mistral_common.protocol.instruct.request import ReasoningEffort

    return [e.value for e in ReasoningEffort]


def shorten_tool_call_ids(messages: list[dict]) -> None:
    """vLLM keeps the last 9 characters of longer tool-call ids (Mistral's id length), in place."""
    for m in messages:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "assistant" and isinstance(m.get("tool_calls"), list):
            for call in m["tool_calls"]:
                if isinstance(call, dict) and isinstance(call.get("id"), str) and len(call["id"]) > 9:
                    call["id"] = call["id"][-9:]
        elif m.get("role") in ("tool", "tool_results") and isinstance(m.get("tool_call_id"), str):
            m["tool_call_id"] = m["tool_call_id"][-9:]
