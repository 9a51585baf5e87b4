"""The reasoning checks every family module runs on its own cases: each case against vLLM 0.33's
non-streaming ``extract_reasoning``, the same case under any chunking, and random marker-heavy
text that adds up to its one-shot answer under any chunking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, parse, split
from tokenbridge.parsers.base import ParseContext

#: The characters of the think/tool markers most families write.
MARKER_ALPHABET = "<|>/thinkmo:ucaglpedr \n日"
#: The switches the random text is parsed under.
SWITCHES = ({}, {"thinking_mode": "enabled"}, {"force_nonempty_content": True})


def reasoning_ctx(kwargs: dict, folder: str | None) -> ParseContext:
    """A context with the shared model ``folder``'s tokenizer, or none (no special drops)."""
    if folder is None:
        return ParseContext(chat_template_kwargs=kwargs)
    return ctx(folder, kwargs)


def reasoning_tests(cases: list[tuple], names: tuple[str, ...], *, alphabet: str = MARKER_ALPHABET,
                    switches: tuple[dict, ...] = SWITCHES, folder: str | None = None, max_cut: int = 200,
                    chunk_examples: int = 100, random_examples: int = 40) -> type:
    """A test class (bind it to a ``Test*`` name) for ``cases``: rows of ``(parser name,
    chat_template_kwargs, model folder or None, text, (reasoning, content))``. The random text is
    drawn from ``alphabet`` and parsed by one of ``names`` under one of ``switches`` with
    ``folder``'s tokenizer."""

    class ReasoningCases:
        @pytest.mark.parametrize("name,kwargs,folder,text,expected", cases)
        def test_one_shot_matches_vllm(self, name, kwargs, folder, text, expected):
            assert parse(name, text, reasoning_ctx(kwargs, folder)) == expected

        @settings(max_examples=chunk_examples, deadline=None)
        @given(case=st.sampled_from(cases), cuts=st.lists(st.integers(0, max_cut), max_size=8))
        def test_any_chunking_accumulates_to_one_shot(self, case, cuts):
            name, kwargs, folder, text, expected = case
            assert parse(name, text, reasoning_ctx(kwargs, folder), split(text, cuts)) == expected

        @settings(max_examples=random_examples, deadline=None)
        @given(text=st.text(alphabet=alphabet, max_size=40), data=st.data())
        def test_random_text_chunking(self, text, data):
            name = data.draw(st.sampled_from(names))
            c = reasoning_ctx(data.draw(st.sampled_from(switches)), folder)
            cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=5))
            assert parse(name, text, c, split(text, cuts)) == parse(name, text, c)

    return ReasoningCases
