"""Seed-OSS tool calls: Qwen3-Coder's XML calls inside ``<seed:tool_call>`` (with ``<seed:think>``)."""

from __future__ import annotations

from tokenbridge.parsers.engine.tags import family_parser
from tokenbridge.parsers.families.qwen import qwen_coder_family
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
