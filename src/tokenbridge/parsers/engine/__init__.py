"""The mechanisms the families share; a family is a table over these plus, where its format truly
needs one, a small reader of its own.

- ``lexer``: markers in streamed text (partial markers held back, special tokens by id).
- ``tags``: vLLM's declarative tag engine (terminals, transitions, argument converters).
- ``json``: argument serialization, call-object reading, truncated-JSON completion.
- ``json_stream``: raw JSON re-serialized as it arrives (incremental tool-call streaming).
- ``held``: hold-then-decide, for parsers whose answer depends on the whole text.
- ``schema``: argument values coerced to the tool's JSON schema.
- ``thinking``: the chat template's thinking switch.
- ``reasoning``: marker-delimited reasoning (``<think>…</think>`` and relatives).
"""
