"""Reasoning and tool-call parsers: the shared mechanisms in ``engine/``, one module per family in
``families/``, and the registry that names them and hands their render-side rules to render.

Layout
------
- ``base.py``: the streaming interface (``feed``/``finish``/``snapshot``/``restore``), ``Delta``,
  ``ParseContext``, and ``ParserState``: a parser's hold-back as a typed msgspec Struct.
- ``declare.py``: what a family declares for render (``RenderRules``: special tokens kept, forced
  schema, structural-tag model and ``ToolCallGrammar``).
- ``registry.py``: names, aliases, families, and ``FAMILY_MODULES`` (one line per family module).
- ``engine/``: ``lexer`` (markers across chunks), ``tags`` (vLLM's declarative tag engine),
  ``calls`` (marker-by-marker call states), ``json``, ``held`` (hold-then-decide), ``schema``
  (argument coercion), ``thinking`` (the thinking switch), ``reasoning`` (``<think>``-style
  formats), ``template`` (checkpoint response templates).
- ``choice.py``: named/``required`` tool choices; ``output.py``: reasoning then tools, per choice.

Family -> file
--------------
======================  ==============================================================
families/qwen.py        qwen3_coder (+ qwen3_xml, nemotron, …) tools; qwen3 reasoning
families/seed_oss.py    seed_oss tools and reasoning
families/step.py        step3, step3p5, step5 tools; step3, step3p5 reasoning
families/mimo.py        mimo tools and reasoning
families/glm.py         glm45 (glm47, …), ling3 tools and reasoning
families/minimax.py     minimax_m2, minimax_m3 tools; their reasoning and append-think
families/plamo.py       plamo3 tools and reasoning
families/inkling.py     inkling tools and reasoning
families/granite.py     granite, granite4, granite-20b-fc tools; granite reasoning
families/kimi.py        kimi_k2 tools and reasoning
families/kimi_k3.py     kimi_k3 tools and reasoning
families/cohere.py      cohere_command3/4 tools and reasoning
families/harmony.py     openai (gpt-oss) tools, openai_gptoss reasoning
families/response_template.py  hf, beam tools and reasoning
tool/json_tags.py       hermes, longcat, llama3_json, phi4_mini_json, jamba, internlm,
                        hunyuan_a13b, ernie45, xlam, gigachat3, apertus tools
tool/<name>.py          deepseek (v3, v31), deepseek_dsml (v32, v4, v41), dots, functiongemma,
                        gemma4, hunyuan (hy_v3, hy_v4), k2_horizon, lfm2, minicpm5, mistral,
                        muse, poolside, pythonic tools
reasoning/think.py      deepseek_r1, deepseek_v3, deepseek_v4(1), holo2, hy_v3, hy_v4,
                        nemotron_v3, poolside_v1 reasoning
reasoning/<name>.py     engine_variants (gemma4, granite_thinking_parser, mistral), minicpmv,
                        whole_text (ernie45, hunyuan_a13b, k2_horizon, muse, olmo3) reasoning
======================  ==============================================================

``tokenbridge parsers --json`` lists every name with its aliases, family and module. The
families still under ``tool/`` and ``reasoning/`` move to ``families/`` the same way.

Adding a parser
---------------
1. Write ``families/<family>.py``. For a tag-style format, declare a ``Family`` (terminals and
   ``(state, terminal) -> to(next, *events)`` transitions, ``engine.tags``) and register
   ``family_parser(...)`` with ``@tool_parser(name, *aliases, family=..., render=RenderRules(...))``;
   for reasoning markers, a ``MarkerFormat`` registered with ``register_format`` (``keeps_special``
   when vLLM's adapter clears ``skip_special_tokens``). Reuse an engine (``tags``, ``calls``,
   ``held``, ``reasoning``) and write a reader only where the format needs one.
2. Add its module name to ``registry.FAMILY_MODULES``.
3. Give its render rules and, if vLLM has a structural-tag model for it, its ``ToolCallGrammar``
   in ``RenderRules``; render reads them from the registry.
4. Keep any state in a ``ParserState`` Struct named ``State`` on the parser; never keep the
   output so far.
5. Test it in ``tests/parsers/`` with the shared feeding helper (one feed, every chunking), and
   add its vLLM-recorded cases; the chunking-invariance test picks it up from the registry.
"""
