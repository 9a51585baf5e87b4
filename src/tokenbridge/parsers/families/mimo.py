"""Xiaomi MiMo: Qwen3's reasoning, and Qwen3-Coder's XML calls with values kept byte for byte."""

from __future__ import annotations

from tokenbridge.parsers.engine.reasoning import MarkerEngineParser, register_format
from tokenbridge.parsers.engine.tag_stream import VERBATIM_PARAMS, streamed_tag_parser
from tokenbridge.parsers.engine.tags import family_parser
from tokenbridge.parsers.families.qwen import QWEN3, qwen_coder_family, verbatim_params
from tokenbridge.parsers.registry import tool_parser


MiMoToolParser = tool_parser("mimo", family="qwen3_coder")(
    family_parser("MiMoToolParser", qwen_coder_family("mimo", arg_converter=verbatim_params))
)
MiMoToolParser.incremental = streamed_tag_parser(MiMoToolParser, VERBATIM_PARAMS)
register_format(MarkerEngineParser, QWEN3, "mimo", family="qwen3")
