"""derender/per_tokenizer.py: one table per tokenizer, never another tokenizer's."""

from __future__ import annotations

from tokenbridge.derender.per_tokenizer import MAX_TOKENIZERS, PerTokenizer


class _Table:
    def __init__(self, tok) -> None:
        self.tok = tok


class _Tok:
    pass


def test_one_table_per_tokenizer_made_once():
    tables = PerTokenizer(_Table)
    a, b = _Tok(), _Tok()
    assert tables(a) is tables(a)
    assert tables(a).tok is a and tables(b).tok is b


def test_a_recycled_id_gets_a_table_of_its_own():
    tables = PerTokenizer(_Table)
    first = _Tok()
    tables(first)
    stale = tables._tables[id(first)]
    fresh = _Tok()
    tables._tables[id(fresh)] = stale  # as if ``fresh`` had been given the id of a dead tokenizer
    assert tables(fresh).tok is fresh


def test_tables_are_bounded():
    tables = PerTokenizer(_Table)
    toks = [_Tok() for _ in range(3 * MAX_TOKENIZERS)]
    for t in toks:
        assert tables(t).tok is t
    assert len(tables._tables) <= MAX_TOKENIZERS
