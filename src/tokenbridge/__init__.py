"""tokenbridge: the CPU render/derender tier around a token-in/token-out LLM engine."""

__version__ = "0.1.0"
VLLM_COMPAT_VERSION = "0.33.0"
