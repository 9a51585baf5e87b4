"""``ModelContext``: everything about the served model, loaded once per process."""

from __future__ import annotations

import codecs
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


class ModelError(Exception):
    """The model cannot be served as asked: one line for the operator, no traceback."""


def _looks_local(model: str) -> bool:
    """A path, not a hub id (``org/name`` or ``name``): hub ids never start with . / ~."""
    return model.startswith((".", "/", "~")) or model.count("/") > 1 or os.sep != "/" and os.sep in model


def resolve_model_folder(model: str, revision: str | None = None, token=None, cache_dir: str | None = None) -> Path:
    """A local folder as is; otherwise a hub id, fetching only config/tokenizer/template files."""
    p = Path(model).expanduser()
    if p.is_dir():
        return p
    if _looks_local(model) or p.exists():
        raise ModelError(f"model folder {model} does not exist" if not p.exists() else f"{model} is not a folder")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")
    try:
        return Path(
            snapshot_download(
                model, revision=revision, token=token, cache_dir=cache_dir, allow_patterns=_HUB_PATTERNS,
                local_files_only=offline,
            )
        )
    except HFValidationError:
        raise ModelError(f"{model} is neither a model folder nor a Hugging Face hub id") from None
    except RevisionNotFoundError:
        raise ModelError(f"hub repository {model} has no revision {revision}") from None
    except RepositoryNotFoundError:
        raise ModelError(f"no hub repository {model} (or it is gated/private: pass --hf-token or set HF_TOKEN)") from None
    except LocalEntryNotFoundError:
        if offline:
            raise ModelError(
                f"{model} is not in the Hugging Face cache and HF_HUB_OFFLINE=1 forbids downloading it: "
                "download it once online, or pass a model folder"
            ) from None
        raise ModelError(f"cannot download {model} from the Hugging Face hub (no network?); pass a model folder") from None
    except OSError as e:
        raise ModelError(f"cannot download {model} from the Hugging Face hub: {e}") from None


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
        # vLLM's load_chat_template: a file, else inline text; a path that cannot be read is
        # an error (text with none of "{}\n" is taken for a path).
        try:
            return Path(override).read_text(encoding="utf-8")
        except (OSError, ValueError) as e:  # ValueError: a NUL in inline text
            if not any(c in override for c in "{}\n"):
                raise ValueError(
                    f"The supplied chat template ({override}) looks like a file path, but it failed "
                    f"to be opened. Reason: {e}"
                ) from e
        return codecs.decode(override, "unicode_escape")
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
    hub: dict | None = None,
    hf_overrides: dict | None = None,
    override_generation_config: dict | None = None,
    hf_config_path: str | None = None,
) -> ModelContext:
    hub = hub or {}
    folder = resolve_model_folder(model, hub.get("revision"), hub.get("token"), hub.get("cache_dir"))
    tok_folder = (
        resolve_model_folder(tokenizer, hub.get("tokenizer_revision"), hub.get("token"), hub.get("cache_dir"))
        if tokenizer else folder
    )
    config_folder = resolve_model_folder(hf_config_path, None, hub.get("token"), hub.get("cache_dir")) if hf_config_path else folder
    config = {**_read_json(config_folder / "config.json"), **(hf_overrides or {})}
    tok_config = _read_json(tok_folder / "tokenizer_config.json")
    if tokenizer_mode == "mistral":
        try:
            import mistral_common  # noqa: F401
        except ImportError:
            raise ModelError("--tokenizer-mode mistral needs mistral-common: pip install 'tokenbridge[mistral]'") from None
        from tokenbridge.model.mistral import MistralTokenizer

        tok = MistralTokenizer(tok_folder)
    else:
        if not (tok_folder / "tokenizer.json").is_file():
            mistral = (tok_folder / "tekken.json").is_file() or any(tok_folder.glob("tokenizer.model.v*"))
            if mistral:
                raise ModelError(f"{tok_folder} is a Mistral tokenizer folder (no tokenizer.json): pass --tokenizer-mode mistral")
            raise ModelError(f"{tok_folder} has no tokenizer.json (tokenbridge reads fast tokenizers only)")
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
    gen_cfg = {**gen_cfg, **(override_generation_config or {})}
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
                hub={"revision": a.revision, "tokenizer_revision": a.tokenizer_revision or a.revision,
                     "token": a.hf_token, "cache_dir": a.download_dir},
                hf_overrides=a.hf_overrides,
                override_generation_config=a.override_generation_config,
                hf_config_path=a.hf_config_path,
            )
        except Exception as e:  # reported by result(), on the main thread
            self.error = e

    def result(self):
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.model
