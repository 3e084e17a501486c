"""models.files: the alias-expansion guard counts the values aliases add, not the values written out."""
from __future__ import annotations

import pytest

from models.files import MAX_NODES, DocumentError, parse_yaml


def test_a_long_document_written_out_is_not_an_alias_bomb():
    """150,000 values written out (a sweep's long `points` list) parse: only MAX_DOCUMENT_BYTES bounds them.
    The guard used to count every value and blamed anchors and aliases the file did not have."""
    text = "points:\n" + "".join(f"  - {i}\n" for i in range(150_000))
    assert len(parse_yaml(text)["points"]) == 150_000 > MAX_NODES


def test_aliases_that_add_more_than_the_limit_are_refused():
    rows = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for level, name in enumerate("bcdef"):
        prev = "abcdef"[level]
        rows.append(f"{name}: &{name} [{', '.join(['*' + prev] * 10)}]")
    with pytest.raises(DocumentError, match="anchors and aliases expand to more than 100,000 values"):
        parse_yaml("\n".join(rows) + "\n")


def test_a_few_aliases_are_fine_and_a_recursive_one_is_refused():
    assert parse_yaml("base: &b {x: 1}\none: *b\ntwo: *b\n") == {"base": {"x": 1}, "one": {"x": 1}, "two": {"x": 1}}
    with pytest.raises(DocumentError, match="refers to its own anchor"):
        parse_yaml("a: &a [1, *a]\n")
