"""OpenAI requests -> the engine's ``GenerateRequest`` (template, tokens, sampling params)."""
