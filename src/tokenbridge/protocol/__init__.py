"""Wire types (msgspec Structs) and the OpenAI error envelope. Imports nothing of ours."""
