"""The streaming re-serializer adds up to the one-shot ``json.dumps(json.loads(raw))`` for every
split of every JSON text, holds only a parse position, and fails at the byte that breaks JSON."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.parsers.engine.json import complete_truncated_json
from tokenbridge.parsers.engine.json_stream import CompletingJsonStream, JsonStream, canonical

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_NUMBERS = st.sampled_from(["0", "-0", "1", "-12", "3.14", "1.50", "1e5", "1E+2", "2.5e-3", "-0.0",
                            "123456789012345678901234567890", "1e400", "0.1", "10"])
_LITERALS = st.sampled_from(["true", "false", "null", "NaN", "Infinity", "-Infinity"])
_WS = st.text(" \t\n\r", max_size=2)


@st.composite
def json_string(draw) -> str:
    """A JSON string literal, its characters written plainly or as escapes."""
    out = ['"']
    for ch in draw(_TEXT):
        how = draw(st.integers(0, 3))
        if ch in '"\\' or ord(ch) < 0x20 or how == 0:
            code = ord(ch)
            if code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04X}")
            elif ch in "\n\t\"\\" and how:
                out.append(json.dumps(ch)[1:-1])
            else:
                out.append(f"\\u{code:04x}")
        elif ch == "/" and how == 1:
            out.append("\\/")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _scalars():
    return st.one_of(json_string(), _NUMBERS, _LITERALS)


@st.composite
def _container(draw, children) -> str:
    ws = lambda: draw(_WS)  # noqa: E731
    if draw(st.booleans()):
        items = draw(st.lists(children, max_size=4))
        return "[" + ws() + ("," + ws()).join(f"{v}{ws()}" for v in items) + "]"
    keys = draw(st.lists(_TEXT, max_size=4, unique=True))
    members = [f"{json.dumps(k, ensure_ascii=draw(st.booleans()))}{ws()}:{ws()}{draw(children)}{ws()}" for k in keys]
    return "{" + ws() + ("," + ws()).join(members) + "}"


JSON_TEXT = st.recursive(_scalars(), _container, max_leaves=20)


def _split(text: str, cuts: list[int]) -> list[str]:
    cuts = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]


def stream(text_pieces: list[str], restore: bool = True, **opts) -> str:
    js, out = JsonStream(**opts), []
    for piece in text_pieces:
        if restore:
            snap = msgspec.msgpack.decode(msgspec.msgpack.encode(js.snapshot()))
            js = JsonStream(**opts)
            js.restore(snap)
        part, used = js.feed(piece)
        assert used == len(piece) or js.done
        out.append(part)
    out.append(js.finish())
    assert js.broken is None, js.broken
    return "".join(out)


def broken_at(pieces: list[str]) -> tuple[str, str]:
    """``(output, raw text from the breaking byte)`` of a text that is not JSON."""
    js, out, after = JsonStream(), "", ""
    for piece in pieces:
        if js.broken is not None:
            after += piece
            continue
        out += js.feed(piece)[0]
    out += js.finish()
    assert js.broken is not None
    return out, js.broken + after


@settings(max_examples=400, deadline=None)
@given(JSON_TEXT, st.lists(st.integers(0, 10_000), max_size=12), st.booleans())
def test_any_split_adds_up_to_the_one_shot_form(raw, cuts, ensure_ascii):
    want = canonical(raw, ensure_ascii)
    assert stream(_split(raw, cuts), ensure_ascii=ensure_ascii) == want
    assert stream(list(raw), restore=False, ensure_ascii=ensure_ascii) == want


@settings(max_examples=200, deadline=None)
@given(JSON_TEXT)
def test_every_byte_is_sent_as_soon_as_it_is_decided(raw):
    """Fed one character at a time, the output so far is always a prefix of the answer, and it
    lags the text by at most a held number, literal or escape."""
    want = canonical(raw)
    js, got = JsonStream(), ""
    for ch in raw:
        got += js.feed(ch)[0]
        assert want.startswith(got)
        assert len(js.pending) <= 64
    assert got + js.finish() == want


def test_state_is_a_parse_position_not_the_value():
    body = '{"path": "a.py", "content": "' + "x = 1\\n" * 5000 + '"}'
    js = JsonStream()
    sizes = []
    for k in range(0, len(body), 7):
        js.feed(body[k : k + 7])
        sizes.append(len(msgspec.msgpack.encode(js.snapshot())))
    assert max(sizes) < 64
    assert js.done


def test_value_end_leaves_the_rest_to_the_caller():
    js = JsonStream()
    assert js.feed('{"a": [1, 2]} </tool_call>') == ('{"a": [1, 2]}', 13)
    js = JsonStream()
    assert js.feed("12") == ("", 2)
    assert js.feed(" tail") == ("12", 0)
    assert js.done


def test_a_repeated_key_is_sent_again_and_reads_as_the_one_shot_value():
    raw = '{"a": 1, "b": {"c": [2]}, "a": {"x": [3, {"a": 4, "a": 5}]}, "d": 5}'
    sent = stream(list(raw))
    assert sent == raw
    assert json.loads(sent) == json.loads(canonical(raw))
    assert list(json.loads(sent)) == list(json.loads(canonical(raw)))


def test_keys_stream_as_they_are_written():
    js = JsonStream()
    assert [js.feed(p)[0] for p in ['{"pa', 'th": "a",', ' "con', "tent", '": 1', "}"]] == [
        '{"pa', 'th": "a", ', '"con', "tent", '": ', "1}"]


def test_raw_string_mode_gives_the_decoded_text():
    assert stream(['"{\\"a\\": ', '1}"'], raw_string=True) == '{"a": 1}'
    assert stream(['{"a": "x\\n"}'], raw_string=True) == '{"a": "x\\n"}'


def test_lax_mode_accepts_raw_control_characters():
    assert stream(['{"a": "x\ny"}'], strict=False) == '{"a": "x\\ny"}'
    assert broken_at(['{"a": "x\ny"}']) == ('{"a": "x', '\ny"}')


@pytest.mark.parametrize("bad", ['{"a" 1}', "[1,]", "{,}", '{"a": 01}', "[tru]", '"\\x"', '"\\u12G4"',
                                 "[1 2]", "{'a': 1}", "[1.]", "[-]", '{"a": 1,}', "}"])
def test_malformed_text_breaks_at_the_same_byte_for_every_split(bad):
    with pytest.raises(ValueError):
        json.loads(bad)
    whole = broken_at([bad])
    assert broken_at(list(bad)) == whole
    assert bad.endswith(whole[1]) and whole[1]


@pytest.mark.parametrize("cut", ['{"a": [1, {"b": "x', '{"a": 12', "[", '"\\ud83d'])
def test_truncated_text_breaks_at_finish_with_the_held_bytes(cut):
    out, held = broken_at([cut])
    assert cut.endswith(held)
    assert broken_at(list(cut)) == (out, held)


def test_a_lone_high_surrogate_is_kept_as_json_loads_keeps_it():
    for raw in ['"\\ud83d x"', '"\\ud83d\\n"', '"\\ud83d\\u0041"', '"\\ud83d\\ude80"']:
        for ensure_ascii in (False, True):
            assert stream(list(raw), ensure_ascii=ensure_ascii) == canonical(raw, ensure_ascii)


def test_a_forged_state_is_refused():
    for snap in [None, [0], [99, "", ""], [0, "x", ""], [0, "{", 1], [0, "{" * 300, ""], [0, "", "", ""]]:
        with pytest.raises(ValueError):
            JsonStream().restore(snap)


@settings(max_examples=200, deadline=None)
@given(JSON_TEXT, st.lists(st.integers(0, 10_000), max_size=12))
def test_verbatim_mode_gives_the_text_as_written(raw, cuts):
    assert stream(_split(raw.strip(" \t\n\r"), cuts), verbatim=True) == raw.strip(" \t\n\r")


def test_verbatim_mode_holds_what_may_still_break():
    js = JsonStream(verbatim=True)
    assert js.feed('{"a": tr')[0] == '{"a": '
    assert js.feed("u}")[0] == ""
    assert js.broken == "tru}"


def _completed(pieces: list[str]) -> str | None:
    """A completing stream's output for ``pieces`` then a cut (None: it broke)."""
    js, out = CompletingJsonStream(), []
    for piece in pieces:
        snap = msgspec.msgpack.decode(msgspec.msgpack.encode(js.snapshot()))
        js = CompletingJsonStream()
        js.restore(snap)
        out.append(js.feed(piece)[0])
    out.append(js.complete())
    return None if js.broken is not None else "".join(out)


@settings(max_examples=300, deadline=None)
@given(JSON_TEXT.filter(lambda t: t.strip(" \t\n\r")[:1] in "[{"), st.integers(0, 10_000),
       st.lists(st.integers(0, 10_000), max_size=6))
def test_a_cut_text_is_completed_as_complete_truncated_json_completes_it(raw, cut, cuts):
    text = raw.strip(" \t\n\r")
    text = text[: cut % (len(text) + 1)]
    if not text:
        return
    try:
        want = canonical(json.dumps(complete_truncated_json(text)))
    except ValueError:
        want = None
    assert _completed(_split(text, cuts)) == want


def test_a_completing_stream_holds_a_member_until_its_value_begins():
    js = CompletingJsonStream()
    assert js.feed('{"a": 1, "b')[0] == '{"a": 1'
    assert js.feed('": ')[0] == ""
    assert js.feed("t")[0] == ', "b": '
    assert js.complete() == "true}"
