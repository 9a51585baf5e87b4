"""MiniCPM5 XML tool calls: ``<function name="f"><param name="k">v</param>…</function>``.

vLLM 0.33 (``MiniCPM5XMLToolParser.extract_tool_calls``): every ``<function…</function>`` block
is read as XML (falling back to regular expressions when that fails); a block is a call only
when its tool exists (after a few hard-coded alias renames), its parameters are named, unique
and known to the schema, and its required parameters are present. Parameters of string type
stay text, others are read as JSON or a Python literal. With any call the content is null; with
none it is the whole text — so nothing can be emitted before the output ends. Call ids are
``call_<16 hex>``.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
import xml.etree.ElementTree as ET
from typing import Any

from tokenbridge.parsers.registry import tool_parser
from tokenbridge.parsers.engine.json import dumps_args
from tokenbridge.parsers.engine.held import HeldBlockParser
from tokenbridge.parsers.engine.held import Extraction, as_content, random_uuid

_FUNC_NAME = re.compile(r"<function\s+name=['\"]([^'\"]+)['\"][^>]*>")
_PARAM = re.compile(r"<param\s+name=['\"]([^'\"]+)['\"]>([\s\S]*?)</param>", re.S)
_PARAM_WITHOUT_NAME = re.compile(r"<param(?![^>]*\bname=)[^>]*>", re.S)
_BLOCK = re.compile(r"<function.*?</function>", re.S)
_CDATA_START, _CDATA_END = "<![CDATA[", "]]>"
# Byte-level BPE pieces a raw decode can leave behind, and collapsed attribute spellings.
_NORMALIZE = (("\u0120", " "), ("\u010a", "\n"), ("<functionname=", "<function name="),
              ("<paramname=", "<param name="))


def _normalize(text: str) -> str:
    if not any(old in text for old, _ in _NORMALIZE):
        return text
    for old, new in _NORMALIZE:
        text = text.replace(old, new)
    return text


def _parse_value(text: Any) -> tuple[Any, bool]:
    try:
        try:
            return json.loads(text), True
        except json.JSONDecodeError:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SyntaxWarning)
                return ast.literal_eval(text), True
    except Exception:
        return text, False


class _Tools:
    """The request's tools as MiniCPM5's parser indexes them."""

    def __init__(self, tools: list[dict] | None) -> None:
        self.schemas: dict[str, dict] = {}
        self.allowed: dict[str, set] = {}
        self.required: dict[str, set] = {}
        for tool in tools or []:
            fn = (tool.get("function") or {}) if isinstance(tool, dict) else {}
            name = fn.get("name")
            if not name:
                continue
            self.schemas[name] = fn
            params = fn.get("parameters") or {}
            props = params.get("properties", {}) if isinstance(params, dict) else {}
            self.allowed[name] = set(props.keys())
            required = params.get("required", []) if isinstance(params, dict) else []
            try:
                self.required[name] = set(required)
            except TypeError:
                self.required[name] = set()

    def arg_type(self, function: str, key: str) -> Any:
        fn = self.schemas.get(function)
        if fn is None or fn.get("parameters") is None:
            return None
        props = fn["parameters"].get("properties", {})
        return props[key].get("type") if key in props else None

    def coerce(self, function: str, key: str, value: Any) -> Any:
        if self.arg_type(function, key) == "string":
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return _parse_value(value)[0] if isinstance(value, str) else value

    def add(self, function: str, key: str, text: str, args: dict, seen: set) -> bool:
        """Add one parameter; False when it breaks the schema (the call is then dropped).

        ``properties``/``arguments`` wrappers around the real parameters are unpacked.
        """
        allowed = self.allowed.get(function, set())
        if key in ("properties", "arguments") and allowed and key not in allowed:
            wrapped, ok = _parse_value(text)
            if not ok or not isinstance(wrapped, dict):
                return False
            added = False
            for k, v in wrapped.items():
                if k not in allowed:
                    continue
                if k in seen:
                    return False
                seen.add(k)
                args[k] = self.coerce(function, k, v)
                added = True
            return added
        if allowed and key not in allowed:
            return True
        if key in seen:
            return False
        seen.add(key)
        args[key] = self.coerce(function, key, text)
        return True


def _first(args: dict, *keys: str) -> Any:
    """The first truthy value among ``keys`` (else the last one's value, as ``a or b`` gives)."""
    value = None
    for k in keys:
        value = args.get(k)
        if value:
            return value
    return value


def _alias(name: str, args: dict, names: set) -> tuple[str, dict]:
    """vLLM's hard-coded renames of tool names MiniCPM5 tends to invent."""
    if name in names:
        return name, args
    if name == "get_details_by_phone" and "get_customer_by_phone" in names:
        phone = _first(args, "phone_number", "phone")
        if phone is not None:
            return "get_customer_by_phone", {"phone_number": phone}
    if name == "get_details_by_name" and "get_customer_by_name" in names:
        full_name, dob = _first(args, "full_name", "name"), _first(args, "date_of_birth", "dob")
        mapped = {}
        if full_name is not None:
            mapped["full_name"] = full_name
        if dob is not None:
            mapped["date_of_birth"] = mapped["dob"] = dob
        if mapped:
            return "get_customer_by_name", mapped
    if name in ("get_line_details", "get_line_status", "get_roaming_status") and "get_details_by_id" in names:
        line = _first(args, "line_id", "id")
        if line is not None:
            return "get_details_by_id", {"id": line}
    if name == "get_plan_details" and "get_details_by_id" in names:
        plan = _first(args, "plan_id", "id")
        if plan is not None:
            return "get_details_by_id", {"id": plan}
    if name in ("enable_roaming", "disable_roaming") and "toggle_roaming" in names:
        line = _first(args, "line_id", "id")
        if line is not None:
            return "toggle_roaming", {"line_id": line, "enabled": name == "enable_roaming"}
    if name in ("add_refueled_data", "add_data_to_line") and "refuel_data" in names:
        line = _first(args, "line_id", "id")
        amount = _first(args, "amount_gb", "gb", "gb_amount", "amount")
        mapped = {}
        if "customer_id" in args:
            mapped["customer_id"] = args["customer_id"]
        if line is not None:
            mapped["line_id"] = line
        if amount is not None:
            mapped["amount_gb"] = amount
        if mapped:
            return "refuel_data", mapped
    return name, args


def _parse_block(block: str, tools: _Tools) -> tuple[str, dict] | None:
    """``(name, arguments)`` of one ``<function>`` block, or None when it is not a valid call."""
    name: str | None = None
    args: dict[str, Any] = {}
    invalid = False
    try:
        root = ET.fromstring(block)
        node = root if root.tag == "function" else root.find("function")
        params: list = []
        if node is not None:
            name = (node.attrib.get("name") or "").strip()
            params = node.findall("param")
            holder = node.find("arguments")
            if holder is not None and not params:
                params = holder.findall("param")
            seen: set = set()
            for param in params:
                key = param.attrib.get("name")
                if not key or not tools.add(name, key, param.text or "", args, seen):
                    args.clear()
                    invalid = True
                    break
        parsed = bool(name)
    except Exception:
        parsed = False
    if not parsed:
        try:
            m = _FUNC_NAME.search(block)
            if m:
                name = m.group(1).strip()
            bad = bool(_PARAM_WITHOUT_NAME.search(block))
            seen = set()
            for pm in _PARAM.finditer(block):
                text = pm.group(2) or ""
                if text.startswith(_CDATA_START) and text.endswith(_CDATA_END):
                    text = text[len(_CDATA_START) : -len(_CDATA_END)]
                else:
                    text = text.strip()
                if not tools.add(name or "", pm.group(1).strip(), text, args, seen):
                    bad = True
                    break
            if bad:
                args.clear()
                invalid = True
            parsed = bool(name)
        except Exception:
            parsed = False
    if not name or invalid:
        return None
    name, args = _alias(name, args, set(tools.schemas))
    required = tools.required.get(name, set())
    if name not in tools.schemas or not required.issubset(args.keys()) or not parsed:
        return None
    return name, args


@tool_parser("minicpm5", family="minicpm5")
class MiniCPM5ToolParser(HeldBlockParser):
    """vLLM's ``minicpm5`` tool-call format.

    It has no incremental variant: ``--tool-call-streaming incremental`` sends its calls whole.
    A stream cannot be exact here with a small state: which of vLLM's two readings gives a
    block's values depends on whether the whole block parses as XML (then a string value is
    its text with entities decoded and blanks kept; else it is stripped and kept raw), a block
    is a call only once its required parameters are in and no parameter repeats, and a tool
    name the request lacks is renamed from the call's arguments; each needs the block's end,
    so the block would have to travel in the state.
    """

    name = "minicpm5"

    def stream_markers(self) -> None:
        return None

    def call_id(self, index: int) -> str:
        return f"call_{random_uuid()}"

    def extract(self, text: str, at_start: bool) -> Extraction:
        normalized = _normalize(text)
        if "<function" not in normalized:
            return as_content(text)
        calls = []
        try:
            tools = _Tools(self.ctx.tools)
            for m in _BLOCK.finditer(normalized):
                parsed = _parse_block(m.group(0), tools)
                if parsed is not None:
                    calls.append((parsed[0], dumps_args(parsed[1])))
        except Exception:
            return as_content(text)
        return Extraction(None, calls) if calls else as_content(text)
