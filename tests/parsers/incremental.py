"""The harness of the incremental tool-call stream tests (``--tool-call-streaming incremental``):
a family's whole parser and its incremental one fed the same text, and the output generators the
JSON-body families share. A family's stream must add up byte for byte to the one-shot answer for
every split of a well-formed output, and give the documented answer, the same for every split, for
a malformed or truncated one."""

from __future__ import annotations

from feeding import feed, split
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbridge.parsers import registry
from tokenbridge.parsers.base import ParseContext

from parsers.engine.test_json_stream import JSON_TEXT, json_string

CTX = ParseContext(tools=[{"type": "function", "function": {"name": "f"}}], tool_choice="auto")
#: White space a model may write between JSON tokens.
WS = st.text(" \n", max_size=2)
OBJECTS = JSON_TEXT.filter(lambda t: t.startswith("{"))


XML_TOOLS = [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "content": {"type": "string"}, "mode": {"type": "integer"},
    "opts": {"type": "object"}, "flag": {"type": ["boolean", "string"]}}}}}]
#: The context of the tag families, whose values the tool's schema types.
XML_CTX = ParseContext(tools=XML_TOOLS, tool_choice="auto")
XML_VALUES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="<>"), max_size=15),
    st.sampled_from(["\n", "\n\n", "\nx\n", "0644", "12", "true", '{"a": [1, 2]}', "a < b > c", "\n</x>\n"]),
)


def whole(name: str, text: str, ctx: ParseContext = CTX):
    return feed(lambda: registry.get_tool_parser(name)(ctx), [text])


def incremental(name: str, pieces: list[str], restore: bool = True, ctx: ParseContext = CTX):
    return feed(lambda: registry.get_tool_parser(name).incremental(ctx), pieces, restore=restore)


def restored(name: str, pieces: list[str], incremental: bool = True, ctx: ParseContext = CTX):
    """``name``'s incremental parser (or its whole one) fed ``pieces``, restored from a snapshot
    before every step after the first."""
    cls = registry.get_tool_parser(name)
    return feed(lambda: (cls.incremental if incremental else cls)(ctx), pieces, restore=True)


@st.composite
def hermes_output(draw, start="<tool_call>", end="</tool_call>") -> str:
    """Prose and ``start``-wrapped ``{"name": …, "arguments": …}`` calls, an ``end`` marker
    sometimes missing (Hermes; Granite 4, Granite-20B-FC and Jamba with their markers)."""
    out = [draw(st.sampled_from(["", "Sure.\n", "Let me check <tool", "日本 😀 "]))]
    for _ in range(draw(st.integers(1, 3))):
        args = draw(JSON_TEXT)
        name = draw(json_string())
        members = [f'"name"{draw(WS)}:{draw(WS)}{name}', f'"arguments"{draw(WS)}:{draw(WS)}{args}']
        if draw(st.booleans()):
            members.insert(draw(st.integers(0, 2)), f'"id": {draw(JSON_TEXT)}')
        if draw(st.booleans()):
            members.reverse()
        out.append(f"{start}{draw(WS)}{{{draw(WS)}{', '.join(members)}}}{draw(WS)}")
        out.append(end if draw(st.integers(0, 4)) else "")
        out.append(draw(st.sampled_from(["", "\n", " between "])))
    return "".join(out)


def check_tag_stream(family: str, outputs: st.SearchStrategy[str]) -> None:
    """Any split of a tag family's output, with or without restores, adds up to its one-shot
    answer, malformed or not."""

    @settings(max_examples=250, deadline=None)
    @given(outputs, st.lists(st.integers(0, 10_000), max_size=10))
    def check(text, cuts):
        want = whole(family, text, XML_CTX)
        got = incremental(family, split(text, cuts), ctx=XML_CTX)
        assert (got.content, got.named_calls()) == (want.content, want.named_calls())
        assert incremental(family, list(text), restore=False, ctx=XML_CTX) == got

    check()


# no NUL: Python source cannot hold one (vLLM reads the calls with ``ast``, and the key filter
# below with ``eval``)
_PY_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"), max_size=12)


@st.composite
def py_string(draw) -> str:
    """A Python string literal for random text, in one of its spellings."""
    value = draw(st.one_of(_PY_TEXT, st.sampled_from(["", "a'b\"c", "x\\y", "\n\t", "{}", "😀 日本", "a\r\nb"])))
    form = draw(st.sampled_from(["repr", "double", "triple", "raw", "concat", "escapes", "f"]))
    if form == "double" and "\\" not in value and '"' not in value and "\n" not in value and "\r" not in value:
        return '"' + value + '"'
    if form == "triple" and "\\" not in value and "'" not in value and "\r" not in value:
        return "'''" + value + "'''"
    if form == "raw" and "\\" not in value and "'" not in value and "\n" not in value and "\r" not in value:
        return "r'" + value + "'"
    if form == "f" and not set(value) & set("{}\\'\n\r"):
        return "f'" + value + "'"
    if form == "concat" and len(value) > 1:
        k = draw(st.integers(1, len(value) - 1))
        return repr(value[:k]) + draw(st.sampled_from(["", " ", "\n"])) + repr(value[k:])
    if form == "escapes":
        return '"' + "".join(draw(st.sampled_from([f"\\x{ord(c):02x}", f"\\u{ord(c):04x}", f"\\{ord(c):o}"]))
                             if ord(c) < 256 else c for c in value if c not in '"\\\n\r') + '"'
    return repr(value)


_NUMBERS = st.one_of(
    st.integers(-10**20, 10**20).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["0x1F", "0o17", "0b101", "1_000", "1e400", "-1e400", "1.", ".5", "1E-3", "-0", "-0.0", "+3", "- 2"]),
)
_NAMES = st.sampled_from(["True", "False", "None", "true", "false", "null"])


def py_value(depth: int = 2):
    """A Python literal, nested up to ``depth`` deep, in the spellings a model may write (the
    pythonic, LFM2 and Olmo 3 calls)."""
    scalar = st.one_of(py_string(), _NUMBERS, _NAMES)
    if depth == 0:
        return scalar
    inner = py_value(depth - 1)
    keys = st.one_of(py_string(), st.sampled_from(["1", "2.5", "False", "None", "0x10"]))
    return st.one_of(
        scalar,
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(scalar, max_size=3).map(lambda xs: "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")"),
        st.lists(scalar, min_size=1, max_size=3).map(lambda xs: "{" + ", ".join(xs) + "}"),
        # distinct keys (a repeated key is sent again: test_pythonic.py pins it)
        st.lists(st.tuples(keys, inner), max_size=3, unique_by=lambda kv: eval("(" + kv[0] + ")")).map(
            lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
        scalar.map(lambda x: f"({x})"),
    )
