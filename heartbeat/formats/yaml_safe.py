"""YAML with bounds: PROACTIVE.md blocks and TODO front matter are text anyone may edit.

``yaml.safe_load`` builds no objects it should not, but it has no budget: a "billion laughs"
block (aliases of aliases, each a list of the last) describes billions of nodes in a few
lines, which anything walking the result then visits one by one; a block nested ten
thousand deep overflows the composer's recursion. :func:`load` first reads the text's events
(PyYAML's parser is iterative, so this cannot overflow), adds up how many nodes the
document stands for once every alias is expanded and how deep it nests, and refuses a
document past :data:`MAX_NODES` or :data:`MAX_DEPTH` with the line and column where it went
past. Only then does it load the document.
"""

from __future__ import annotations

import re
from typing import Any

MAX_NODES = 100_000  # nodes of the document with every alias expanded
MAX_DEPTH = 100  # collections inside collections


class YamlLimitError(ValueError):
    """A YAML document past a bound; ``line`` and ``column`` are 0-based, as PyYAML's marks."""

    def __init__(self, reason: str, line: int, column: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.column = column


def check(text: str, *, surrogates: bool = False) -> None:
    """Raise YamlLimitError when ``text`` expands past MAX_NODES nodes or nests past MAX_DEPTH
    (yaml.YAMLError when it is not YAML at all).

    ``surrogates``: also at the first scalar holding a UTF-16 surrogate, once the text is found
    within bounds. Only a double-quoted escape (``"\\ud800"``) writes one, a pair of them too
    (YAML, unlike JSON, reads each escape as a character): PyYAML reads it into a text no UTF-8
    file or database holds (the ledger refused it as "not valid UTF-8 text", naming no file;
    CraftBot's save fails on it). A text without such an escape is not searched."""
    import yaml

    sizes: dict[str, int] = {}  # anchor -> the size of the node it names, expanded
    stack: list[list[Any]] = []  # open collections: [anchor, size so far]
    total = 0
    aliased = False  # the size came from aliases (a bomb?), or is the text's own
    escaped = surrogates and ("\\u" in text or "\\U" in text)
    surrogate: Any = None  # the first scalar holding one
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        size = 0
        if isinstance(event, yaml.AliasEvent):
            aliased = True
            if any(entry[0] == event.anchor for entry in stack):
                raise _limit(f"alias *{event.anchor} refers to a node that holds it", event)
            size = sizes.get(event.anchor or "", 1)
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor:
                sizes[event.anchor] = 1
            if escaped and surrogate is None and _SURROGATE.search(event.value):
                surrogate = event
        elif isinstance(event, yaml.CollectionStartEvent):
            stack.append([event.anchor, 1])
            if len(stack) > MAX_DEPTH:
                raise _limit(f"nested more than {MAX_DEPTH} deep", event)
            continue
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size = stack.pop()
            if anchor:
                sizes[anchor] = size
        else:
            continue
        if stack:
            stack[-1][1] += size
        else:
            total += size
        expanded = total + sum(entry[1] for entry in stack)
        if expanded > MAX_NODES:
            if not aliased:
                raise _limit(f"more than {MAX_NODES:,} nodes", event)
            raise _limit(f"aliases expand to more than {MAX_NODES:,} nodes (a YAML alias bomb?)", event)
    if surrogate is not None:
        raise _limit(
            "an escape \\ud800 to \\udfff is half of a UTF-16 pair, not text (YAML reads a pair of "
            "them as two halves: write a character past U+FFFF as \\U0001F600)",
            surrogate,
        )


_SURROGATE = re.compile("[\ud800-\udfff]")


def _limit(reason: str, event: Any) -> YamlLimitError:
    mark = event.start_mark
    return YamlLimitError(reason, mark.line if mark else 0, mark.column if mark else 0)


def load(text: str) -> Any:
    """``yaml.safe_load(text)`` once :func:`check` found it within bounds."""
    import yaml

    check(text)
    return yaml.safe_load(text)
