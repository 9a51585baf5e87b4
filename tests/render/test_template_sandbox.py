"""Chat templates run sandboxed: no mutation of the request, no private or internal attributes,
however often the same attribute is asked for (the sandbox remembers its verdicts)."""

from __future__ import annotations

import pytest

from tokenbridge.model import template


def test_a_template_cannot_mutate_the_request():
    messages = [{"role": "user", "content": "hi"}]
    for _ in range(2):  # the second time the verdict comes from the sandbox's memory
        with pytest.raises(template.TemplateError):
            template.render("{{ messages.append(1) }}", messages=messages)
    assert messages == [{"role": "user", "content": "hi"}]


def test_a_template_cannot_reach_private_or_internal_attributes():
    for _ in range(2):
        with pytest.raises(template.TemplateError):
            template.render("{{ ''.__class__.__mro__ }}")
        assert template.render("{{ f.__globals__ }}", f=template.render) == ""


def test_safe_attributes_render_as_before():
    out = template.render(
        "{% for m in messages %}{{ m.role }}:{{ m['content'].strip() }}{% if not loop.last %},{% endif %}{% endfor %}",
        messages=[{"role": "user", "content": " a "}, {"role": "assistant", "content": "b"}],
    )
    assert out == "user:a,assistant:b"


@pytest.mark.parametrize(
    "source",
    [
        "{{ m.content }}|{{ m.missing is defined }}|{{ m.get('role') }}",
        "{{ m.items is defined }}|{{ m.keys()|list|length }}|{{ m['items'] }}",
        "{{ m.__class__ is defined }}|{{ m.copy is defined }}|{{ m.content.upper() }}",
        "{% set ns = namespace(n=0) %}{% for k, v in m.items() %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}",
    ],
)
def test_dict_attribute_lookup_equals_jinjas_own_sandbox(source):
    """The direct path for ``dict.key`` answers what Jinja's sandbox answers, including keys
    that share a name with a dict method (the method wins) and missing keys (undefined)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    m = {"role": "user", "content": "hi", "items": "shadowed"}
    reference = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(source)
    assert template.render(source, m=m) == reference.render(m=m)


@pytest.mark.parametrize(
    "source",
    [
        "{% for m in ms %}{{ loop.index }}{{ loop.last }}{{ m.content.startswith('a') }}{{ m.content.split()|length }}{% endfor %}",
        "{{ '{0}-{1}'.format('a', 'b') }}|{{ s.format_map({'x': 1}) }}|{{ s.upper() }}",
        "{% set ns = namespace(f=s.format, g=s.upper) %}{{ ns.g() }}{{ ns.f(x=2) }}{{ ns.f(x=3) }}",
        "{{ ms.append is defined }}|{{ ms.count(1) }}|{{ s.__class__ is defined }}|{{ ms.pop is defined }}",
    ],
)
def test_remembered_attribute_verdicts_answer_as_jinjas_own_sandbox(source):
    """Attributes read directly once found safe, and builtin methods called without the
    callable check, give Jinja's sandbox answers, every time (``str.format`` stays wrapped)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    ctx = {"ms": [{"content": "a b"}, {"content": "c"}], "s": "{x}"}
    reference = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(source)
    for _ in range(3):
        assert template.render(source, **ctx) == reference.render(**ctx)


def test_str_format_stays_sandboxed_when_its_verdict_is_remembered():
    for _ in range(3):
        with pytest.raises(template.TemplateError):
            template.render("{{ '{0.__class__.__mro__}'.format(s) }}", s="x")
        with pytest.raises(template.TemplateError):
            template.render("{% set ns = namespace(f='{0.__class__.__mro__}'.format) %}{{ ns.f(1) }}")
