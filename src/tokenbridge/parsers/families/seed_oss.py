"""ByteDance Seed-OSS: ``<seed:think>`` reasoning and Qwen3-Coder's XML calls in ``<seed:tool_call>``."""

from __future__ import annotations

from tokenbridge.parsers.engine.reasoning import MarkerEngineParser, MarkerFormat, register_format
from tokenbridge.parsers.engine.tag_stream import QWEN_PARAMS, streamed_tag_parser
from tokenbridge.parsers.engine.tags import family_parser
from tokenbridge.parsers.engine.thinking import ENABLE_THINKING_DEFAULT_ON
from tokenbridge.parsers.families.qwen import QWEN3, qwen_coder_family
from tokenbridge.parsers.registry import tool_parser


SeedOssToolParser = tool_parser("seed_oss", family="qwen3_coder")(
    family_parser(
        "SeedOssToolParser",
        qwen_coder_family(
            "seed_oss",
            think=("<seed:think>", "</seed:think>"),
            tool=("<seed:tool_call>", "</seed:tool_call>"),
        ),
    )
)
SeedOssToolParser.incremental = streamed_tag_parser(SeedOssToolParser, QWEN_PARAMS)


SEED_OSS = MarkerFormat(
    start=("<seed:think>",),
    end=("</seed:think>",),
    implicit_end=("<seed:tool_call>",),
    literals=("</seed:tool_call>",) + QWEN3.literals[1:],
    thinking=ENABLE_THINKING_DEFAULT_ON,
    strip_trailing_whitespace=False,
    turn_boundaries=("<seed:bos>", "<seed:eos>"),
)
register_format(MarkerEngineParser, SEED_OSS, "seed_oss", family="seed_oss", keeps_special=True)
