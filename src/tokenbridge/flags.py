"""The ``tokenbridge serve`` command line: vLLM 0.33's render-server options plus our own.

One table (``FLAGS``), one row per option, whose ``use`` says what reads it, as Dynamo documents
its flags. vLLM options that mean nothing to a render tier are in ``vllm_flags.ENGINE``: accepted,
shown in ``--help`` and named in one start-up warning. The command line is read as vLLM's
``FlexibleArgumentParser`` reads it: ``--max_model_len`` is ``--max-model-len``, sizes take ``8k``,
``--default-chat-template-kwargs.enable_thinking false`` builds the JSON object, and
``--config FILE.yaml`` inserts its keys after the model (the command line wins).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

from tokenbridge.vllm_flags import ENGINE, OUTPUT_DEFAULTS

TOKENIZER_MODES = (
    "auto", "hf", "slow", "mistral", "deepseek_v32", "deepseek_v4", "inkling", "kimi_k3", "cohere",
    "alpamayo2_super",
)
LOG_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "NOTSET")


@dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]
    use: str  # who reads it, and what it does there
    kind: str = "str"
    default: Any = None
    choices: tuple | None = None
    group: str = "server"
    metavar: str | None = None


FLAGS: tuple[Flag, ...] = (
    # -- the model -------------------------------------------------------------------------
    Flag(("--model",), "model/: the model folder or hub id when MODEL is not given", group="model"),
    Flag(("--tokenizer",), "model/: tokenizer folder or hub id, when not the model's", group="model"),
    Flag(("--tokenizer-mode",), "model/: hf (tokenizer.json) or mistral (mistral-common); auto picks hf; "
         "vLLM's modes with their own prompt builder are refused", default="auto", choices=TOKENIZER_MODES,
         group="model"),
    Flag(("--revision",), "model/: hub revision (branch, tag, commit) of the model files", group="model"),
    Flag(("--tokenizer-revision",), "model/: hub revision of the tokenizer files", group="model"),
    Flag(("--hf-token",), "model/: hub token; bare flag: the stored login (HF_TOKEN also works)",
         kind="str?", group="model"),
    Flag(("--download-dir",), "model/: hub cache folder", group="model"),
    Flag(("--hf-config-path",), "model/: read config.json from this folder or hub id", group="model"),
    Flag(("--hf-overrides",), "model/: JSON object merged over config.json (max_position_embeddings, "
         "eos_token_id…)", kind="json", group="model"),
    Flag(("--served-model-name",), "server/: names accepted in \"model\"; the first is reported",
         kind="str+", group="model"),
    Flag(("--max-model-len",), "render/: context limit (8k, 32K…); default config.json's", kind="size",
         group="model"),
    Flag(("--max-logprobs",), "derender/: most top_logprobs a request may ask", kind="int", default=20,
         group="model"),
    Flag(("--generation-config",), "model/: auto (the model's generation_config.json), vllm (none) "
         "or a folder holding one", default="auto", group="model"),
    Flag(("--override-generation-config",), "model/: JSON merged over the generation config's "
         "sampling defaults", kind="json", group="model"),
    # -- templates and parsers --------------------------------------------------------------
    Flag(("--chat-template",), "render/: template file or inline Jinja, over the tokenizer's",
         group="chat"),
    Flag(("--chat-template-content-format",), "render/: message content as a string or OpenAI parts",
         default="auto", choices=("auto", "string", "openai"), group="chat"),
    Flag(("--default-chat-template-kwargs",), "render/: JSON merged under each request's "
         "chat_template_kwargs", kind="json", group="chat"),
    Flag(("--trust-request-chat-template", "--no-trust-request-chat-template"), "render/: allow a "
         "per-request chat_template", kind="bool", default=False, group="chat"),
    Flag(("--response-role",), "none, as in vLLM's render server (its derenderer answers role assistant)", default="assistant",
         group="chat"),
    Flag(("--tool-call-parser",), "render/, derender/: the tool-call format (tokenbridge parsers)",
         group="chat", metavar="NAME"),
    Flag(("--enable-auto-tool-choice", "--disable-auto-tool-choice"), "render/: allow tool_choice "
         "\"auto\" (needs --tool-call-parser)", kind="bool", default=False, group="chat"),
    Flag(("--reasoning-parser",), "render/, derender/: the reasoning format (tokenbridge parsers)",
         group="chat", metavar="NAME"),
    Flag(("--tool-call-streaming",), "derender/ (tokenbridge): stream tool-call arguments as written "
         "(incremental, vLLM's way) or each call whole once decided", default="incremental",
         choices=("incremental", "whole"), group="chat"),
    Flag(("--enable-prompt-tokens-details", "--disable-prompt-tokens-details"), "none, as in "
         "vLLM's render server (the engine reports cached tokens)", kind="bool", default=False, group="chat"),
    # -- the HTTP server --------------------------------------------------------------------
    Flag(("--host",), "server/: address to listen on", default="0.0.0.0"),
    Flag(("--port",), "server/: TCP port", kind="port", default=8000),
    Flag(("--uds",), "server/: listen on this Unix socket instead of host:port"),
    Flag(("--api-server-count", "-asc"), "server/: processes sharing the port (as --workers)", kind="int"),
    Flag(("--workers",), "server/ (tokenbridge): processes sharing the port; default min(cores, 2)",
         kind="int"),
    Flag(("--api-key",), "server/: Bearer keys accepted (any of them); default $VLLM_API_KEY",
         kind="str+"),
    Flag(("--root-path",), "server/: path prefix a proxy strips; routes answer with and without it"),
    Flag(("--allowed-origins",), "server/: CORS origins (JSON list); none by default", kind="json",
         default=[]),
    Flag(("--allowed-methods",), "server/: CORS methods (JSON list)", kind="json", default=["*"]),
    Flag(("--allowed-headers",), "server/: CORS headers (JSON list)", kind="json", default=["*"]),
    Flag(("--allow-credentials", "--no-allow-credentials"), "server/: CORS credentials", kind="bool",
         default=False),
    Flag(("--ssl-keyfile",), "server/: TLS private key (with --ssl-certfile)"),
    Flag(("--ssl-certfile",), "server/: TLS certificate chain"),
    Flag(("--ssl-ca-certs",), "server/: CA bundle for client certificates"),
    Flag(("--ssl-cert-reqs",), "server/: client certificates: 0 none, 1 optional, 2 required", kind="int",
         default=0),
    Flag(("--ssl-ciphers",), "server/: OpenSSL cipher list"),
    Flag(("--enable-request-id-headers", "--disable-request-id-headers"), "server/: answer with "
         "X-Request-Id (the client's, or a new one)", kind="bool", default=False),
    Flag(("--disable-fastapi-docs", "--enable-fastapi-docs"), "server/: drop /openapi.json and /docs",
         kind="bool", default=False),
    Flag(("--shutdown-timeout",), "server/: seconds in-flight requests may finish after SIGTERM "
         "(0: close at once); default 10", kind="int"),
    Flag(("--max-body-bytes",), "server/ (tokenbridge): 413 past this request body size; default "
         "what --max-model-len tokens with --max-logprobs entries each can need (2-64 MiB)", kind="size"),
    Flag(("--header-timeout",), "server/ (tokenbridge): seconds for a request line and headers, "
         "then 408 (a deadline: bytes do not extend it)", kind="float", default=10.0, metavar="S"),
    Flag(("--body-timeout",), "server/ (tokenbridge): seconds for a request body, then 408",
         kind="float", default=30.0, metavar="S"),
    Flag(("--keep-alive-timeout",), "server/ (tokenbridge): seconds an idle connection stays open; "
         "default $VLLM_HTTP_TIMEOUT_KEEP_ALIVE or 5", kind="float",
         default=float(os.environ.get("VLLM_HTTP_TIMEOUT_KEEP_ALIVE", 5)), metavar="S"),
    Flag(("--max-connections",), "server/ (tokenbridge): open connections per worker; at the cap the "
         "oldest idle (then stalled) one is closed; default 10% below the file limit", kind="int", default=0),
    Flag(("--stream-state-key-file",), "derender/ (tokenbridge): a file holding the stream-state "
         "secret (else $TOKENBRIDGE_STATE_KEY, else random per start)"),
    # -- the OpenAI frontend over a token engine (gateway/) -----------------------------------
    Flag(("--engine-url",), "gateway/ (tokenbridge): a token engine (vllm serve --tokens-only); adds "
         "/v1/chat/completions and /v1/completions", group="gateway"),
    Flag(("--engine-api-key",), "gateway/ (tokenbridge): Bearer key for the engine; default "
         "$TOKENBRIDGE_ENGINE_API_KEY", group="gateway"),
    Flag(("--engine-connect-timeout",), "gateway/ (tokenbridge): seconds to connect to the engine",
         kind="float", default=10.0, group="gateway", metavar="S"),
    Flag(("--engine-first-token-timeout",), "gateway/ (tokenbridge): seconds to the engine's first token",
         kind="float", default=600.0, group="gateway", metavar="S"),
    Flag(("--engine-idle-timeout",), "gateway/ (tokenbridge): longest wait between two engine events",
         kind="float", default=120.0, group="gateway", metavar="S"),
    # -- logs -------------------------------------------------------------------------------
    Flag(("--log-level",), "logs: level of tokenbridge's log (default INFO; $VLLM_LOGGING_LEVEL)",
         choices=LOG_LEVELS, group="logs"),
    Flag(("--logging-config",), "logs: JSON {log_level, formatter: \"json\"}; dotted keys work",
         kind="json", group="logs"),
    Flag(("--log-config-file",), "logs: a logging.config.dictConfig JSON file", group="logs"),
    Flag(("--uvicorn-log-level",), "logs: level of the HTTP server's own messages", default="info",
         choices=("critical", "debug", "error", "info", "trace", "warning"), group="logs"),
    Flag(("--enable-log-requests", "--disable-log-requests"), "logs: one access line per request "
         "(off by default); request bodies at DEBUG", kind="bool", default=False, group="logs"),
    Flag(("--disable-uvicorn-access-log", "--enable-uvicorn-access-log"), "logs: no access lines even "
         "with --enable-log-requests", kind="bool", default=False, group="logs"),
    Flag(("--enable-log-outputs", "--disable-log-outputs"), "logs: response bodies at DEBUG "
         "(needs --enable-log-requests)", kind="bool", default=False, group="logs"),
    Flag(("--max-log-len",), "logs: characters of a body logged", kind="int", group="logs"),
    Flag(("--log-error-stack", "--no-log-error-stack"), "logs: tracebacks of 500s", kind="bool",
         default=False, group="logs"),
    Flag(("--config",), "cli: a YAML file of flags (keys as the flag names); the command line wins",
         group="cli"),
)

GROUPS = {
    "model": "model: what is served and how it is tokenized",
    "chat": "chat: templates, parsers and answer shape",
    "server": "server: HTTP, TLS, CORS, auth and workers",
    "gateway": "gateway: the OpenAI frontend over a token engine (tokenbridge's own)",
    "logs": "logs",
    "cli": "config file",
}


class FlagError(Exception):
    """A usage error found after parsing: printed as one line, exit 2."""


class _Toggle(argparse.Action):
    """A vLLM ``--x`` / ``--no-x`` pair (its own negative spellings): the first name sets True."""

    def __init__(self, option_strings, dest, default=None, help=None, **kw):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)
        self.positive = option_strings[0]

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, option_string == self.positive)

    def format_usage(self) -> str:
        return " | ".join(self.option_strings)


def human_int(value: str) -> int:
    """vLLM's sizes: ``8k`` = 8000, ``8K`` = 8192, ``25.6k`` = 25600; ``auto``/-1 = -1."""
    v = value.strip()
    if v.lower() == "auto" or v == "-1":
        return -1
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT])", v)
    if m:
        number, suffix = m.groups()
        if suffix.islower():
            return int(float(number) * 10 ** (3 * "kmgt".index(suffix) + 3))
        if "." in number:
            raise argparse.ArgumentTypeError(f"decimals are not allowed with {suffix}; did you mean {suffix.lower()}?")
        return int(number) * 2 ** (10 * "KMGT".index(suffix) + 10)
    try:
        return int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid size: {value!r}") from None


def json_value(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON: {e}") from None


def port(value: str) -> int:
    try:
        p = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port: {value!r}") from None
    if not 0 <= p <= 65535:
        raise argparse.ArgumentTypeError(f"{p} is not a TCP port (0-65535)")
    return p


_TYPES = {"str": str, "int": int, "float": float, "size": human_int, "json": json_value, "port": port}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage block
        self.exit(2, f"{self.prog}: error: {message}\n")


def _add(group, names: tuple[str, ...], kind: str, default: Any, choices, help: str, metavar=None) -> None:
    kind = kind.lstrip("!")
    if kind == "bool":
        group.add_argument(*names, action=_Toggle, default=default, help=help)
    elif kind == "flag":
        group.add_argument(*names, action="store_true", default=default, help=help)
    else:
        nargs = kind[-1] if kind[-1] in "+?" else None
        kw: dict[str, Any] = {"type": _TYPES[kind.rstrip("+?")], "default": default, "help": help}
        if nargs:
            kw["nargs"] = nargs
        if nargs == "?":
            kw["const"] = True
        if choices:
            kw["choices"] = choices
        if metavar:
            kw["metavar"] = metavar
        group.add_argument(*names, **kw)


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model_tag", nargs="?", metavar="MODEL", help="a local model folder or a Hugging Face hub id")
    groups = {k: p.add_argument_group(title) for k, title in GROUPS.items()}
    for f in FLAGS:
        _add(groups[f.group], f.names, f.kind, f.default, f.choices, f.use, f.metavar)
    for title, entries in ENGINE.items():
        g = p.add_argument_group(
            f"vLLM {title} (accepted, no effect on a render tier)" if title != "options" else "vLLM (accepted, no effect)"
        )
        for names, kind, *choices in entries:
            note = "refused unless vLLM's default: changes vLLM's answers" if kind.startswith("!") else "ignored"
            _add(g, names, kind, None, choices[0] if choices else None, note)


# -- reading the command line as vLLM does --------------------------------------------------


def normalize_argv(argv: list[str]) -> list[str]:
    """vLLM's spellings: ``--config`` expanded, ``_`` as ``-`` in names, ``-O3``, dotted JSON keys."""
    if "--config" in argv or any(a.startswith("--config=") for a in argv):
        argv = _expand_config(argv)
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg.startswith("--help="):
            out.append("--help")
        elif arg.startswith("--"):
            key, eq, value = arg.partition("=")
            name, dot, rest = key[2:].partition(".")
            out.append("--" + name.replace("_", "-") + dot + rest + eq + value)
        elif arg.startswith("-O") and arg != "-O":
            out += ["--optimization-level", arg[3:] if arg[2:3] == "=" else arg[2:]]
        elif arg == "-O" and i + 1 < len(argv) and argv[i + 1] in {"0", "1", "2", "3"}:
            out.append("--optimization-level")
        else:
            out.append(arg)
    return _merge_dotted(out)


def _merge_dotted(args: list[str]) -> list[str]:
    """``--a.b.c V`` (or ``--a.b.c=V``) for any flag becomes ``--a '{"b": {"c": V}}'``, merged per flag."""
    merged: dict[str, dict] = {}
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        key = arg.split("=", 1)[0]
        if not (arg.startswith("-") and "." in key and not _is_number(arg)):
            out.append(arg)
            continue
        if "=" in arg:
            value_str = arg.split("=", 1)[1]
        elif i + 1 < len(args):
            value_str, skip = args[i + 1], True
        else:
            raise FlagError(f"argument {key}: expected a value")
        if key.endswith("+"):
            key, value = key[:-1], value_str.split(",")
        else:
            value = _dotted_value(value_str)
        flag, *path = key.split(".")
        node = merged.setdefault(flag, {})
        for k in path[:-1]:
            if not isinstance(node.get(k), dict):
                node[k] = {}
            node = node[k]
        node[path[-1]] = value
    for flag, obj in merged.items():
        out += [flag, json.dumps(obj)]
    return out


def _is_number(arg: str) -> bool:
    try:
        float(arg)
        return True
    except ValueError:
        return False


def _dotted_value(s: str) -> Any:
    try:
        return json.loads(s)
    except ValueError:
        try:
            return human_int(s)
        except argparse.ArgumentTypeError:
            return s


def _expand_config(argv: list[str]) -> list[str]:
    """``--config FILE.yaml``: its keys become flags after the model, before the rest (CLI wins)."""
    at = next(i for i, a in enumerate(argv) if a == "--config" or a.startswith("--config="))
    if argv[at] == "--config":
        if at + 1 >= len(argv):
            raise FlagError("argument --config: expected a YAML file")
        path, rest = argv[at + 1], argv[:at] + argv[at + 2 :]
    else:
        path, rest = argv[at].split("=", 1)[1], argv[:at] + argv[at + 1 :]
    if not path.endswith((".yaml", ".yml")):
        raise FlagError(f"argument --config: {path} is not a .yaml/.yml file")
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            config = yaml.safe_load(f) or {}
    except OSError as e:
        raise FlagError(f"argument --config: cannot read {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise FlagError(f"argument --config: {path} is not valid YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(config, dict):
        raise FlagError(f"argument --config: {path} must map flag names to values")
    flags: list[str] = []
    for key, value in config.items():
        name = "--" + str(key)
        if isinstance(value, bool):
            if value:
                flags.append(name)
            else:
                flags.append(_negative(name))
        elif isinstance(value, list):
            if value:
                flags += [name, *map(str, value)]
        elif isinstance(value, dict):
            flags += [name, json.dumps(value)]
        elif value is not None:
            flags += [name, str(value)]
    model_first = bool(rest) and not rest[0].startswith("-")
    return rest[:1] + flags + rest[1:] if model_first else flags + rest


def _negative(name: str) -> str:
    """The ``--no-x`` spelling of a toggle (or its vLLM-specific negative)."""
    canon = name.replace("_", "-")
    for names in _toggle_pairs():
        if names[0] == canon:
            return names[1]
    return "--no-" + canon[2:]


def _toggle_pairs():
    for f in FLAGS:
        if f.kind == "bool":
            yield f.names
    for entries in ENGINE.values():
        for names, kind, *_ in entries:
            if kind.lstrip("!") == "bool":
                yield names


# -- after parsing --------------------------------------------------------------------------


def _dest(names: tuple[str, ...]) -> str:
    return names[0].lstrip("-").replace("-", "_")


def engine_flags_given(args) -> list[str]:
    """The ignored vLLM flags this command line set (for the one start-up warning)."""
    return [
        names[0]
        for entries in ENGINE.values()
        for names, kind, *_ in entries
        if not kind.startswith("!") and getattr(args, _dest(names), None) is not None
    ]


def check(args) -> None:
    """What vLLM refuses at start-up, and what tokenbridge would answer differently: FlagError."""
    args.model = args.model_tag or args.model
    if not args.model:
        raise FlagError("the model is required: tokenbridge serve MODEL (a folder or hub id), --model or --config")
    for entries in ENGINE.values():
        for names, kind, *_ in entries:
            if not kind.startswith("!"):
                continue
            dest = _dest(names)
            value = getattr(args, dest, None)
            if value not in (None, False, "", [], OUTPUT_DEFAULTS.get(dest)):
                raise FlagError(
                    f"{names[0]} changes what vLLM's render server answers and tokenbridge does not "
                    "implement it; drop it (the render tier needs no engine flag)"
                )
    if args.enable_auto_tool_choice and not args.tool_call_parser:
        raise FlagError("--enable-auto-tool-choice requires --tool-call-parser")
    if args.enable_log_outputs and not args.enable_log_requests:
        raise FlagError("--enable-log-outputs requires --enable-log-requests")
    if (args.sse_keep_alive_interval or 0) < 0:
        raise FlagError("--sse-keep-alive-interval must be a non-negative integer (0 disables keep-alive comments)")
    if args.enable_per_request_metrics and args.disable_log_stats:
        raise FlagError("--enable-per-request-metrics requires engine statistics logging; remove --disable-log-stats")
    if args.grpc_port is not None:
        raise FlagError("--grpc-port requires VLLM_USE_RUST_FRONTEND=1 vllm serve; a render server has no gRPC port")
    if args.tokenizer_mode in ("deepseek_v32", "deepseek_v4", "inkling", "kimi_k3", "cohere"):
        raise FlagError(
            f"--tokenizer-mode {args.tokenizer_mode}: vLLM renders this mode with its own prompt builder, "
            "which tokenbridge does not have; serve the model's chat template with --tokenizer-mode hf"
        )
    for flag in ("hf_overrides", "override_generation_config", "default_chat_template_kwargs", "logging_config"):
        value = getattr(args, flag)
        if value is not None and not isinstance(value, dict):
            raise FlagError(f"--{flag.replace('_', '-')} must be a JSON object")
    for flag in ("allowed_origins", "allowed_methods", "allowed_headers"):
        if not isinstance(getattr(args, flag), list):
            raise FlagError(f"--{flag.replace('_', '-')} must be a JSON list")
    if args.max_model_len == -1:
        args.max_model_len = None  # vLLM's "auto": the config's limit
    elif args.max_model_len is not None and args.max_model_len <= 0:
        raise FlagError("--max-model-len must be positive")
    workers = args.workers if args.workers is not None else args.api_server_count
    if workers is not None and workers < 1:
        raise FlagError("--api-server-count/--workers must be at least 1")
    args.workers = workers
    if args.engine_api_key is None:
        args.engine_api_key = os.environ.get("TOKENBRIDGE_ENGINE_API_KEY")
    if args.api_key is None and os.environ.get("VLLM_API_KEY"):
        args.api_key = [os.environ["VLLM_API_KEY"]]
    if bool(args.ssl_keyfile) != bool(args.ssl_certfile):
        raise FlagError("TLS needs both --ssl-keyfile and --ssl-certfile")
    for flag in ("ssl_keyfile", "ssl_certfile", "ssl_ca_certs", "log_config_file"):
        path = getattr(args, flag)
        if path and not os.path.isfile(path):
            raise FlagError(f"--{flag.replace('_', '-')} {path}: no such file")
    if args.chat_template and not any(c in args.chat_template for c in "{}\n") and not os.path.exists(args.chat_template):
        raise FlagError(f"--chat-template {args.chat_template}: looks like a path, but there is no such file")
    gc = args.generation_config
    if gc not in ("auto", "vllm") and not os.path.isdir(gc):
        raise FlagError(f"--generation-config {gc}: no such folder (use auto, vllm or a folder)")
    if args.uds and os.path.isdir(args.uds):
        raise FlagError(f"--uds {args.uds}: is a folder")


def main_error(message: str) -> int:
    print(f"tokenbridge serve: error: {message}", file=sys.stderr)
    return 2
