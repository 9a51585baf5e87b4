"""The model a server renders for: tokenizer, chat template, limits and defaults, built once."""
