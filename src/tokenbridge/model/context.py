"""``ModelContext``: everything about the served model, loaded once per process."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenbridge.model.prompts import PromptMemo
from tokenbridge.model.tokenizer import HFTokenizer

# generation_config keys vLLM turns into server-side sampling defaults.
_GEN_KEYS = (
    "repetition_penalty",
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "presence_penalty",
    "frequency_penalty",
    "max_new_tokens",
    "skip_special_tokens",
)
_HUB_PATTERNS = [
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "chat_template.json",
    "tekken.json",
    "tokenizer.model*",
    "params.json",
    "*.tiktoken",
]


def _read_json(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except FileNotFoundError:
        return {}


def resolve_model_folder(model: str) -> Path:
    """A local folder as is; otherwise a hub id, fetching only config/tokenizer/template files."""
    p = Path(model)
    if p.is_dir():
        return p
    from huggingface_hub import snapshot_download

    return Path(
        snapshot_download(
            model,
            allow_patterns=_HUB_PATTERNS,
            local_files_only=os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"),
        )
    )


@dataclass
class ModelContext:
    folder: Path
    root: str
    served_names: list[str]
    tokenizer: Any
    max_model_len: int
    chat_template: str | None
    generation_defaults: dict[str, Any] = field(default_factory=dict)
    eos_token_ids: frozenset[int] = frozenset()
    config: dict = field(default_factory=dict)
    tokenizer_config: dict = field(default_factory=dict)
    prompt_memo: PromptMemo = field(init=False)

    def __post_init__(self) -> None:
        self.prompt_memo = PromptMemo(self.chat_template)

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    @property
    def engine_vocab_size(self) -> int:
        """How many ids the engine can produce: the model's ``vocab_size`` (its embedding rows,
        which may pad past the tokenizer's vocabulary), never less than the tokenizer's."""
        declared = self.config.get("vocab_size")
        text = self.config.get("text_config")
        if not isinstance(declared, int) and isinstance(text, dict):
            declared = text.get("vocab_size")
        return max(declared, self.vocab_size) if isinstance(declared, int) and not isinstance(declared, bool) else self.vocab_size


def _chat_template(folder: Path, tok_config: dict, override: str | None) -> str | None:
    if override:
        p = Path(override)
        if p.is_file():
            return p.read_text(encoding="utf-8")
        return override
    t = tok_config.get("chat_template")
    if isinstance(t, list):
        named = {d.get("name"): d.get("template") for d in t if isinstance(d, dict)}
        t = named.get("default") or next(iter(named.values()), None)
    if t:
        return t
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    cj = _read_json(folder / "chat_template.json").get("chat_template")
    return cj or None


def _eos_ids(*sources: Any) -> frozenset[int]:
    out: set[int] = set()
    for v in sources:
        if isinstance(v, int):
            out.add(v)
        elif isinstance(v, list):
            out.update(i for i in v if isinstance(i, int))
    return frozenset(out)


def load_model(
    model: str,
    served_names: list[str] | None = None,
    tokenizer: str | None = None,
    tokenizer_mode: str = "auto",
    chat_template: str | None = None,
    max_model_len: int | None = None,
    generation_config: str = "auto",
) -> ModelContext:
    folder = resolve_model_folder(model)
    tok_folder = resolve_model_folder(tokenizer) if tokenizer else folder
    config = _read_json(folder / "config.json")
    tok_config = _read_json(tok_folder / "tokenizer_config.json")
    if tokenizer_mode == "mistral":
        from tokenbridge.model.mistral import MistralTokenizer

        tok = MistralTokenizer(tok_folder)
    else:
        tok = HFTokenizer(tok_folder, tok_config)

    if max_model_len is None:
        for key in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length"):
            if isinstance(config.get(key), int):
                max_model_len = config[key]
                break
        else:
            max_model_len = 2048

    gen: dict[str, Any] = {}
    gen_cfg: dict = {}
    if generation_config == "auto":
        gen_cfg = _read_json(folder / "generation_config.json")
    elif generation_config != "vllm":
        gen_cfg = _read_json(Path(generation_config) / "generation_config.json")
    for k in _GEN_KEYS:
        if k in gen_cfg and gen_cfg[k] is not None:
            gen[k] = gen_cfg[k]

    eos = _eos_ids(gen_cfg.get("eos_token_id"), config.get("eos_token_id"))
    return ModelContext(
        folder=folder,
        root=model,
        served_names=served_names or [model],
        tokenizer=tok,
        max_model_len=max_model_len,
        chat_template=_chat_template(tok_folder, tok_config, chat_template),
        generation_defaults=gen,
        eos_token_ids=eos,
        config=config,
        tokenizer_config=tok_config,
    )


class ModelLoader:
    """Loads the model on a thread, so imports can proceed while the tokenizer builds."""

    def __init__(self, args) -> None:
        import threading

        self.args = args
        self.model = None
        self.error: Exception | None = None
        self._thread = threading.Thread(target=self._load, name="tokenbridge-load", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        a = self.args
        try:
            self.model = load_model(
                a.model,
                served_names=a.served_model_name,
                tokenizer=a.tokenizer,
                tokenizer_mode=a.tokenizer_mode,
                chat_template=a.chat_template,
                max_model_len=a.max_model_len,
                generation_config=a.generation_config,
            )
        except Exception as e:  # reported by result(), on the main thread
            self.error = e

    def result(self):
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.model
