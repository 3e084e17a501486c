"""models.files: the alias-expansion guard counts the values aliases add, not the values written out."""
from __future__ import annotations

import re

import pytest

from models.files import MAX_DOCUMENT_NODES, MAX_NODES, DocumentError, parse_yaml


def test_a_long_document_written_out_is_not_an_alias_bomb():
    """150,000 values written out (a sweep's long `points` list) parse: only MAX_DOCUMENT_NODES bounds them.
    The guard used to count every value and blamed anchors and aliases the file did not have."""
    text = "points:\n" + "".join(f"  - {i}\n" for i in range(150_000))
    assert len(parse_yaml(text)["points"]) == 150_000 > MAX_NODES


def test_more_values_written_out_than_the_limit_are_refused_before_composing():
    """An 8 MiB flow list of 4.19 M values took 222 s and 3.2 GB to compose; the count stops at the bound."""
    text = "name: x\nx: [" + "1," * MAX_DOCUMENT_NODES + "1]\n"
    with pytest.raises(DocumentError, match="holds more than 1,000,000 values"):
        parse_yaml(text)


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


def test_an_integer_beyond_pythons_digit_limit_is_one_line_not_a_traceback():
    """int() of more than 4,300 decimal digits raises a ValueError (CVE-2020-10735's limit): a scenario, a
    `--set` value or a config.json holding one crashed with a traceback."""
    from models.files import parse_json
    with pytest.raises(DocumentError, match="^holds an integer of 5,000 digits at line 2; at most 4,300 are read$"):
        parse_yaml("name: x\nseed: " + "9" * 5000 + "\n")
    with pytest.raises(DocumentError, match="^holds an integer of 5,000 digits; at most 4,300 are read$"):
        parse_json('{"vocab_size": ' + "9" * 5000 + "}")
    assert parse_yaml("a: 4_300\nb: -12\nc: 0x10\n") == {"a": "4_300", "b": -12, "c": "0x10"}   # (plain decimals)
    assert parse_json('{"a": -12, "b": ' + "9" * 4300 + "}")["a"] == -12


@pytest.mark.parametrize("text, says", [("!!int 3.5", "!!int '3.5' at line 2 is not an integer"),
                                        ("!!int", "!!int '' at line 2 is not an integer"),
                                        ("!!float abc", "!!float 'abc' at line 2 is not a number"),
                                        ("!!bool maybe", "!!bool 'maybe' at line 2 is not true or false"),
                                        ("!!timestamp 2024-13-45", "!!timestamp '2024-13-45' at line 2 is not a date")])
def test_a_value_its_explicit_tag_cannot_read_is_a_document_error(text, says):
    """PyYAML's constructors of an explicitly tagged scalar raise ValueError, KeyError or IndexError, which are
    no YAML errors: a scenario (or a `--set`) of `seed: !!int 3.5` crashed with a traceback."""
    with pytest.raises(DocumentError, match="^" + re.escape(says)):
        parse_yaml(f"name: x\nseed: {text}\n")
    assert parse_yaml("a: !!int 7\nb: !!float 3\nc: !!bool yes\n") == {"a": 7, "b": 3.0, "c": True}


def test_a_home_folder_of_an_unknown_user_is_a_document_error():
    from pathlib import Path

    from models.files import expand_home
    with pytest.raises(DocumentError, match=r"^~no-such-user/x.csv: cannot expand '~no-such-user': no such user"):
        expand_home("~no-such-user/x.csv")
    assert expand_home("a/b.csv") == Path("a/b.csv") and expand_home("~") == Path.home()


@pytest.mark.parametrize("text, value", [("017", 17), ("0o17", "0o17"), ("0x10", "0x10"), ("0b11", "0b11"),
                                         ("1:30", "1:30"), ("1:30.5", "1:30.5"), ("1_000", "1_000"),
                                         ("+5", 5), ("-0", 0), ("1.5", 1.5), ("1.0e+3", 1000.0), (".5", 0.5),
                                         ("1e9", 1e9), ("2E-3", 0.002), ("1.0e9", 1e9), ("-1e+3", -1000.0),
                                         ("1e", "1e"), ("e5", "e5"), ("1e5.5", "1e5.5"),
                                         ("-.inf", float("-inf")), ("2024-01-01", __import__("datetime").date(2024, 1, 1))])
def test_numbers_are_plain_decimals(text, value):
    """YAML 1.1's octal, sexagesimal, hexadecimal, binary and underscored numbers are text (017 was 15, 1:30
    was 90, 0x10 was 16), as YAML 1.2's core schema reads them; a leading zero is a decimal; an exponent needs
    no dot or sign (YAML 1.1 read 1e9 as text, which a strict float field refuses)."""
    assert parse_yaml(f"v: {text}") == {"v": value}
    assert type(parse_yaml(f"v: {text}")["v"]) is type(value)


def test_shipped_yaml_reads_alike_with_the_users_loader():
    """load_shipped_yaml keeps libyaml's C loader (YAML 1.1 numbers): no shipped file holds a number form the
    two read differently."""
    import subprocess
    from pathlib import Path

    import yaml
    repo = Path(__file__).resolve().parents[2]
    files = subprocess.run(["git", "ls-files", "*.yaml", "*.yml"], cwd=repo, capture_output=True, text=True,
                           check=True).stdout.split()
    assert files
    for name in files:
        text = (repo / name).read_text(encoding="utf-8")
        if text.count("\n---") or "{{" in text:
            continue
        assert repr(parse_yaml(text)) == repr(yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))), name


def test_ready_to_write_makes_the_folder_that_receives_the_file(tmp_path):
    """`--csv new/t.csv` (a scenario script) and `draftsim profile --check-out new/c.json` were accepted up front
    and failed after the whole run (a pandas traceback; 'No such file or directory'); a link to nothing is
    written as its target, whose folder is made instead."""
    from models.files import ready_to_write
    assert ready_to_write(tmp_path / "a" / "b" / "t.csv") == tmp_path / "a" / "b" / "t.csv"
    assert (tmp_path / "a" / "b").is_dir()
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "elsewhere" / "x.json")
    ready_to_write(link).write_text("{}")
    assert (tmp_path / "elsewhere" / "x.json").read_text() == "{}" and link.is_symlink()
