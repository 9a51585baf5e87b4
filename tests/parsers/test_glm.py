"""GLM-4.5 and its kin (``families/glm.py``: glm45, glm47, ling3) tool calls against vLLM 0.33's
non-streaming ``extract_tool_calls``, and chunking invariance (the tag engine, ``engine/tags.py``).

Known gaps: none known (the incremental stream is tested at the end).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feeding import ctx, parse
from incremental import XML_VALUES, check_tag_stream
from tag_families import gcall, one, run

# (family, output text, expected content, expected calls); expectations follow vLLM 0.33's
# non-streaming extract_tool_calls for the same text.
CASES = [
    ("glm45", gcall("get_weather", city="Paris", days="3"), None,
     [("get_weather", '{"city": "Paris", "days": 3}')]),
    ("glm45", "Done." + gcall("search", q="日本") + " later", "Done.", [("search", '{"q": "日本"}')]),
    ("glm45", gcall("get_weather", city="A") + gcall("search", q="B"), None,
     [("get_weather", '{"city": "A"}'), ("search", '{"q": "B"}')]),
    # unknown names are rejected by glm45; the markup goes, later text stays
    ("glm45", gcall("unknown_fn", a="1") + "<|user|>", "<|user|>", []),
    ("glm45", "<tool_call>search\n<arg_key>q</arg_key>\n<arg_value>x</arg_value>\n", None,
     [("search", '{"q": "x"}')]),
    ("glm45", "<tool_call>get_weather", None, [("get_weather", "{}")]),
    ("glm45", "<tool_call>search\n<arg_key>q</arg_key><arg_value>cut", None, [("search", "{}")]),
    ("glm45", "<tool_call>search<arg_key>q</arg_key><arg_value>{not json</arg_value></tool_call>",
     None, [("search", '{"q": "{not json"}')]),
]


@pytest.mark.parametrize("name,text,content,calls", CASES)
def test_one_shot(name, text, content, calls):
    assert one(name, text) == (content, calls)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_random_chunkings_accumulate_to_one_shot(data):
    name, text, _, _ = data.draw(st.sampled_from(CASES))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    restore = data.draw(st.booleans())
    assert run(name, pieces, restore=restore) == one(name, text)


def test_glm_reasoning_markup_depends_on_reasoning_parser():
    text = "<think>x</think>A" + gcall("search", q="z")
    assert one("glm45", text) == ("<think>x</think>A", [("search", '{"q": "z"}')])
    assert one("glm45", text, reasoning_parser="glm45") == ("A", [("search", '{"q": "z"}')])
    # with thinking off the markers are plain text even then
    off = one("glm45", text, reasoning_parser="glm45", chat_template_kwargs={"enable_thinking": False})
    assert off == ("<think>x</think>A", [("search", '{"q": "z"}')])


# -- reasoning: vLLM 0.33's non-streaming ``extract_reasoning`` ------------------------------------

def test_glm45_reasoning():
    c = ctx("synthetic-families")
    assert parse("glm45", "a \n</think>\n\nb", c) == ("a", "\n\nb")  # trailing ws stripped
    assert parse("glm45", "a</think>b<think>c \n</think>d", c) == ("ac", "bd")  # reopens
    assert parse("glm45", "a<tool_call>f\n</tool_call>", c) == ("a", "<tool_call>f\n</tool_call>")
    off = ctx("synthetic-families", {"enable_thinking": False})
    assert parse("glm47", "<think>a</think>b", off) == (None, "<think>a</think>b")


# -- the incremental stream (``--tool-call-streaming incremental``) ------------------------------

@st.composite
def glm_output(draw) -> str:
    out = [draw(st.sampled_from(["", "Sure.\n\n"]))]
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from(["write_file", "unknown_fn"]))
        args = "".join(
            f"<arg_key>{k}</arg_key>{draw(st.sampled_from(['', chr(10)]))}<arg_value>{draw(XML_VALUES)}</arg_value>"
            for k in draw(st.lists(st.sampled_from(["path", "content", "mode", "opts", "flag", "x"]), max_size=4, unique=True))
        )
        out.append(f"<tool_call>{name}\n{args}</tool_call>{draw(st.sampled_from(['', chr(10)]))}")
    return "".join(out)


def test_stream_adds_up_to_the_one_shot_answer():
    check_tag_stream("glm45", glm_output())
