"""Reasoning and tool-call parsers: the shared mechanisms in ``engine/``, one module per family in
``families/``, and the registry that names them and hands their render-side rules to render.

Layout
------
- ``base.py``: the streaming interface (``feed``/``finish``/``snapshot``/``restore``), ``Delta``,
  ``Final`` (the end of a parse: last delta and null-vs-empty values), ``ParseContext``, and
  ``ParserState``: a parser's hold-back as a typed msgspec Struct the base class validates.
- ``quirks.py``: vLLM's compatibility quirks, one table, each citing the vLLM code it mirrors.
- ``declare.py``: what a family declares for render (``RenderRules``: special tokens kept, forced
  schema, structural-tag model and ``ToolCallGrammar``).
- ``registry.py``: names, aliases, families, and ``FAMILY_MODULES`` (one line per family module).
- ``engine/``: ``lexer`` (markers across chunks), ``tags`` (vLLM's declarative tag engine),
  ``calls`` (marker-by-marker call states), ``json``, ``held`` (hold-then-decide), ``schema``
  (argument coercion), ``thinking`` (the thinking switch), ``reasoning`` (``<think>``-style
  formats, and the switch between a thinking parser and the identity), ``template`` (checkpoint
  response templates), ``json_stream``/``tag_stream``/``json_calls``/``call_list``/``python_calls``
  (with ``python_literals``)/``arguments`` (incremental tool calls; ``json_calls.OpenCall`` holds
  the one call object a stream reads at a time, ``arguments.StreamedArguments`` writes a call's
  arguments member by member for a family reader that finds its keys and values),
  ``melody_actions`` (Cohere melody's action blocks, one-shot and streamed).
- ``choice.py``: named/``required`` tool choices; ``output.py``: reasoning then tools, per choice.

Parsers import only ``protocol`` types: what they need from the model arrives in
``ParseContext`` (``vocab``; ``harmony``, the encoding ``model.harmony`` loads).

Family -> file
--------------
Every family is one module under ``families/`` (``registry.FAMILY_MODULES`` lists them), with
its ``--tool-call-streaming incremental`` reader where it has one; ``tokenbridge parsers --json``
gives each name's aliases, family and module. ``tests/parsers/test_registry.py`` checks this
table against the registry.

=========================  ===========================================================
families/apertus.py        apertus tools
families/cohere.py         cohere_command3, cohere_command4 tools and reasoning
families/deepseek.py       deepseek_v3, deepseek_v31 tools; deepseek_r1, deepseek_v3, holo2
                           reasoning
families/deepseek_dsml.py  deepseek_v32, deepseek_v4, deepseek_v41 tools; deepseek_v4,
                           deepseek_v41 reasoning
families/dots.py           dots tools
families/ernie45.py        ernie45 tools and reasoning
families/functiongemma.py  functiongemma tools
families/gemma4.py         gemma4 tools and reasoning (its call syntax, read whole and
                           streamed: gemma4_calls.py)
families/gigachat3.py      gigachat3 tools
families/glm.py            glm45 (glm47, …), ling3 tools and reasoning
families/granite.py        granite, granite4, granite-20b-fc tools; granite reasoning
families/harmony.py        openai (gpt-oss) tools, openai_gptoss reasoning
families/hermes.py         hermes (qwen25, qwen3_json, …), longcat tools
families/hunyuan.py        hy_v3, hy_v4, hunyuan_a13b tools and reasoning
families/inkling.py        inkling tools and reasoning
families/internlm.py       internlm (interns1) tools
families/jamba.py          jamba tools
families/k2_horizon.py     k2_horizon tools and reasoning
families/kimi.py           kimi_k2 tools and reasoning
families/kimi_k3.py        kimi_k3 tools and reasoning
families/lfm2.py           lfm2 tools
families/llama.py          llama3_json (llama4_json) tools
families/mimo.py           mimo tools and reasoning
families/minicpm5.py       minicpm5 tools
families/minicpmv.py       minicpmv reasoning
families/minimax.py        minimax_m2, minimax_m3 tools and reasoning; minimax_m2_append_think
                           reasoning (M3's parameter elements, read whole and streamed:
                           minimax_m3.py)
families/mistral.py        mistral tools and reasoning
families/muse.py           muse, muse_glimmer tools
families/muse_reasoning.py  musespark1x (muse), muse_glimmer reasoning
families/olmo3.py          olmo3 reasoning; the olmo3 tools' incremental reader (their one-shot
                           parser is pythonic.py's)
families/phi4_mini.py      phi4_mini_json tools
families/plamo.py          plamo3 tools and reasoning
families/poolside.py       poolside_v1 tools and reasoning
families/pythonic.py       pythonic, llama4_pythonic, olmo3 tools
families/qwen.py           qwen3_coder (+ qwen3_xml, nemotron, …) tools; qwen3, nemotron_v3,
                           granite_thinking_parser reasoning (vLLM's qwen3 family)
families/response_template.py  hf, beam tools and reasoning
families/seed_oss.py       seed_oss tools and reasoning
families/step.py           step3, step3p5, step5 tools; step3, step3p5 reasoning
families/xlam.py           xlam tools
=========================  ===========================================================

Adding a parser
---------------
1. Write ``families/<family>.py``. For a tag-style format, declare a ``Family`` (terminals and
   ``(state, terminal) -> to(next, *events)`` transitions, ``engine.tags``) and register
   ``family_parser(...)`` with ``@tool_parser(name, *aliases, family=..., render=RenderRules(...))``;
   for reasoning markers, a ``MarkerFormat`` registered with ``register_format`` (``keeps_special``
   when vLLM's adapter clears ``skip_special_tokens``). Reuse an engine (``tags``, ``calls``,
   ``held``, ``reasoning``; for an incremental stream ``tag_stream``, ``json_calls``,
   ``arguments``) and write a reader only where the format needs one.
2. Add its module name to ``registry.FAMILY_MODULES``.
3. Give its render rules and, if vLLM has a structural-tag model for it, its ``ToolCallGrammar``
   in ``RenderRules``; render reads them from the registry.
4. Keep any state in a ``ParserState`` Struct named ``State`` on the parser; never keep the
   output so far. Fields are named after the attributes they save; a field typed as another
   ``ParserState`` saves the object in that attribute (a filter, an inner stream), one named
   ``base`` the parser's state as its base class; rules tying fields together go in the
   state's ``check``. ``Stateful`` saves, validates and loads it: write no
   ``snapshot``/``restore`` (override ``load`` only to rebuild an object the state describes,
   as ``OpenCall`` does). Changing a state's layout means a new stream-state version
   (``derender.state.VERSION``) that still reads the previous one, with a recording of the
   previous version's states (``tests/parsers/test_stream_state_versions.py``). A rule that
   mirrors a vLLM quirk beyond the family's own parser goes in ``quirks.py``.
5. Test it in ``tests/parsers/test_<family>.py`` (its module docstring lists the family's known
   gaps) with the shared feeding helper (``tests/parsers/feeding.py``: one feed, every
   chunking, through snapshot/restore), and add its vLLM-recorded cases: reasoning rows through
   ``reasoning_cases.reasoning_tests``, an incremental stream against its one-shot answer with
   ``incremental.py``. The chunking-invariance test picks it up from the registry; add its row
   to the table above (``test_registry.py`` checks it).
"""
