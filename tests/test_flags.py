"""The command line: vLLM 0.33's render-server options all accepted, read with vLLM's spellings,
and start-up refusals as one line with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MODELS
from tokenbridge import flags
from tokenbridge.cli import build_parser, parse_serve_args
from tokenbridge.vllm_flags import ENGINE

QWEN3 = str(MODELS / "qwen3")
# `VLLM_TARGET_DEVICE=cpu vllm launch render --help=all` (0.33.0), recorded once.
VLLM = json.loads((Path(__file__).parent / "data" / "vllm_render_options.json").read_text())


def _our_options() -> dict[str, object]:
    _, sp = build_parser()
    return {s: a for a in sp._actions for s in a.option_strings}


def test_every_vllm_render_option_is_accepted():
    ours = _our_options()
    theirs = {name for row in VLLM["options"] for name in row[2:]}
    assert len(VLLM["options"]) == VLLM["count"] == 321
    assert sorted(theirs - set(ours)) == []


def test_every_vllm_option_takes_the_same_arity():
    """A vLLM switch stays a switch and a valued option takes a value, so argv parses alike."""
    ours = _our_options()
    for group, kind, *names in VLLM["options"]:
        for name in names:
            nargs = ours[name].nargs
            if kind in ("flag", "bool", "help"):
                assert nargs == 0, name
            else:
                assert nargs != 0, name


def test_engine_table_and_implemented_flags_split_vllm_options():
    implemented = {n for f in flags.FLAGS for n in f.names}
    ignored = {n for entries in ENGINE.values() for names, *_ in entries for n in names}
    assert not implemented & ignored
    theirs = {name for row in VLLM["options"] for name in row[2:]} - {"-h", "--help"}
    assert theirs <= implemented | ignored


def test_vllm_spellings_underscores_sizes_and_dotted_keys():
    args = parse_serve_args([
        QWEN3, "--max_model_len", "8k", "--default-chat-template-kwargs.enable_thinking", "false",
        "--default_chat_template_kwargs.foo.bar=1", "--tensor-parallel-size", "4", "-O3",
    ])
    assert args.max_model_len == 8000
    assert args.default_chat_template_kwargs == {"enable_thinking": False, "foo": {"bar": 1}}
    assert args.tensor_parallel_size == 4
    assert args.optimization_level == "3"
    assert parse_serve_args([QWEN3, "--max-model-len", "32K"]).max_model_len == 32768
    assert parse_serve_args([QWEN3, "--max-model-len", "auto"]).max_model_len is None


def test_toggle_pairs_and_api_server_count():
    args = parse_serve_args([QWEN3, "--enable-log-requests", "--disable-log-requests", "-asc", "3"])
    assert args.enable_log_requests is False
    assert args.workers == 3
    assert parse_serve_args([QWEN3, "--workers", "2", "--api-server-count", "5"]).workers == 2


def test_config_yaml_inserts_flags_and_the_command_line_wins(tmp_path):
    cfg = tmp_path / "render.yaml"
    cfg.write_text("port: 12323\nmax_model_len: 16k\nenable-log-requests: true\ntrust_request_chat_template: false\n"
                   "tensor-parallel-size: 8\ndefault-chat-template-kwargs:\n  enable_thinking: false\n")
    args = parse_serve_args([QWEN3, "--config", str(cfg), "--port", "9000"])
    assert args.port == 9000
    assert args.max_model_len == 16000
    assert args.enable_log_requests is True
    assert args.trust_request_chat_template is False
    assert args.default_chat_template_kwargs == {"enable_thinking": False}
    assert flags.engine_flags_given(args) == ["--tensor-parallel-size"]
    cfg.write_text(f"model: {QWEN3}\n")
    assert parse_serve_args(["--config", str(cfg)]).model == QWEN3


def _serve(*argv: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tokenbridge.cli", "serve", *argv], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.mark.parametrize("argv, message", [
    (["--port", "99999"], "argument --port: 99999 is not a TCP port (0-65535)"),
    (["--enable-auto-tool-choice"], "--enable-auto-tool-choice requires --tool-call-parser"),
    (["--generation-config", "/nonexistent/gen"], "--generation-config /nonexistent/gen: no such folder"),
    (["--enable-log-outputs"], "--enable-log-outputs requires --enable-log-requests"),
    (["--tool-call-parser", "nope"], "argument --tool-call-parser: invalid choice: 'nope'"),
    (["--tokenizer-mode", "deepseek_v32"], "--tokenizer-mode deepseek_v32: vLLM renders this mode"),
    (["--exclude-tools-when-tool-choice-none"], "--exclude-tools-when-tool-choice-none changes what vLLM"),
    (["--grpc-port", "50051"], "--grpc-port requires VLLM_USE_RUST_FRONTEND=1"),
    (["--max-model-len", "1.5K"], "decimals are not allowed with K"),
    (["--chat-template", "missing.jinja"], "--chat-template missing.jinja: looks like a path"),
])
def test_usage_errors_are_one_line_and_exit_2(argv, message):
    out = _serve(QWEN3, *argv)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tokenbridge serve: error: "), out.stderr
    assert message in lines[0]


def test_model_errors_are_one_line(tmp_path):
    missing = _serve(str(MODELS / "no-such-model"), "--port", "0")
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"tokenbridge serve: error: model folder {MODELS / 'no-such-model'} does not exist"
    mistral = _serve(str(MODELS / "mistral-tekken"), "--port", "0")
    assert mistral.returncode == 2
    assert "is a Mistral tokenizer folder (no tokenizer.json): pass --tokenizer-mode mistral" in mistral.stderr
    assert len(mistral.stderr.strip().splitlines()) == 1
    env = {**__import__("os").environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path)}
    hub = _serve("Qwen/Qwen3-8B", "--port", "0", env=env)
    assert hub.returncode == 2
    assert hub.stderr.strip() == (
        "tokenbridge serve: error: Qwen/Qwen3-8B is not in the Hugging Face cache and HF_HUB_OFFLINE=1 forbids "
        "downloading it: download it once online, or pass a model folder"
    )


def test_a_taken_port_is_one_line():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        out = _serve(QWEN3, "--host", "127.0.0.1", "--port", str(port), "--workers", "1")
    assert out.returncode == 1
    assert out.stderr.strip().splitlines()[-1] == f"tokenbridge serve: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert "Traceback" not in out.stderr


def test_version():
    out = subprocess.run([sys.executable, "-m", "tokenbridge.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.startswith("tokenbridge 0.") and "vLLM 0.33.0" in out.stdout
