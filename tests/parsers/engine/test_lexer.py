"""The hold-back of a possibly cut marker is the longest tail of the text that begins a marker,
found however the scan skips ahead (``partial_suffix`` and ``MarkerLexer.partial_at``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.parsers.engine.lexer import partial_suffix
from tokenbridge.parsers.engine.reasoning import MarkerFormat, MarkerLexer

_ALPHABET = "<>/|ab "
_MARKERS = st.lists(st.text(_ALPHABET, min_size=1, max_size=6), min_size=1, max_size=4, unique=True)


def _longest_cut_marker(text: str, markers: list[str]) -> int:
    return max((n for n in range(1, len(text) + 1) for m in markers if len(m) > n and m.startswith(text[-n:])),
               default=0)


@settings(max_examples=500, deadline=None)
@given(st.text(_ALPHABET, max_size=12), _MARKERS)
def test_partial_suffix_is_the_longest_tail_that_begins_a_marker(text, markers):
    assert partial_suffix(text, markers) == _longest_cut_marker(text, markers)


@settings(max_examples=500, deadline=None)
@given(st.text(_ALPHABET, max_size=12), _MARKERS, st.integers(0, 12))
def test_partial_at_is_the_first_place_from_pos_where_a_marker_is_cut(text, markers, pos):
    lexer = MarkerLexer(MarkerFormat(start=tuple(markers[:1]), end=tuple(markers[1:])), None)
    expected = next((j for j in range(pos, len(text))
                     if any(len(m) > len(text) - j and m.startswith(text[j:]) for m in markers)), -1)
    assert lexer.partial_at(text, pos) == expected
