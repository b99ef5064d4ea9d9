"""YAML with bounds: alias bombs, deep nesting and self-reference are refused with their place."""

from __future__ import annotations

import pytest
import yaml

from heartbeat.formats import yaml_safe
from heartbeat.formats.yaml_safe import MAX_DEPTH, YamlLimitError

LAUGHS = "\n".join(
    ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"{x}: &{x} [{', '.join([f'*{p}'] * 9)}]" for p, x in zip("abcdefgh", "bcdefghi", strict=True)]
)


def test_a_billion_laughs_is_refused_where_it_passes_the_bound() -> None:
    with pytest.raises(YamlLimitError) as info:
        yaml_safe.load(LAUGHS)
    assert "aliases expand to more than 100,000 nodes" in info.value.reason
    assert info.value.line == 5  # "f: &f [*e, ...]": 9 * 9**5 nodes would pass the bound there


def test_a_large_document_without_aliases_is_not_called_an_alias_bomb() -> None:
    big = "".join(f"k{i}: [a, b, {{c: d}}]\n" for i in range(30_000))
    with pytest.raises(YamlLimitError) as info:
        yaml_safe.load(big)
    assert info.value.reason == "more than 100,000 nodes"


def test_deep_nesting_is_refused_before_the_composer_recurses() -> None:
    deep = "x: " + "[" * 10_000 + "]" * 10_000
    with pytest.raises(YamlLimitError) as info:
        yaml_safe.load(deep)
    assert info.value.reason == f"nested more than {MAX_DEPTH} deep"
    assert (info.value.line, info.value.column) == (0, 3 + MAX_DEPTH - 1)
    block = "".join("  " * i + f"k{i}:\n" for i in range(150)) + "  " * 150 + "v: 1\n"
    with pytest.raises(YamlLimitError):
        yaml_safe.load(block)


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    with pytest.raises(YamlLimitError) as info:
        yaml_safe.load("a: &x [1, *x]\n")
    assert "refers to a node that holds it" in info.value.reason


def test_ordinary_documents_load_as_safe_load_loads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [
        "id: morning_briefing\nfrequency: daily\ntime: '08:00'\nconditions: [market_hours_only]\n",
        "base: &b {retries: 3}\nfirst: *b\nsecond: *b\n",
        'created_at: "2026-05-01T03:41:00Z"\nopen_count: 1\n',
        "",
        "- 1\n- [2, [3, [4]]]\n",
    ]
    for text in texts:
        assert yaml_safe.load(text) == yaml.safe_load(text)
    monkeypatch.setattr(yaml_safe, "MAX_NODES", 1_000)
    wide = "items: [" + ", ".join(["1"] * 990) + "]"  # near the bound: still loads
    assert len(yaml_safe.load(wide)["items"]) == 990
    with pytest.raises(YamlLimitError):
        yaml_safe.load("items: [" + ", ".join(["1"] * 1_000) + "]")


def test_text_that_is_not_yaml_raises_yamls_own_error() -> None:
    with pytest.raises(yaml.YAMLError):
        yaml_safe.load("a: [1, 2\nb: 3\n")
