"""Write a JSON document over the text it was read from, changing only what changed.

tasks.json, errors.json, last-run.json and memory/heartbeat-state.json are
edited by people and by other programs as well as by hb. FORMATS.md's rule,
"hb never loses a byte it did not mean to change", holds for them through
:func:`edit`: every value equal to the one at the same place in the old text
keeps its old text (its layout, escapes like ``\\u00e9``, numbers like
``1e3``); a changed value inside an object or array is replaced in place; a
member or item that came or went is added or dropped using the container's
own separators and indentation. Only new values are written fresh, as
``json.dumps`` writes them, indented like their neighbours. An object that
repeats a key cannot be edited member by member (which of the two would a
change replace?): it keeps its text while its value (the last one, as JSON
readers take it) is unchanged, and is written out whole, alone, when it changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from heartbeat.errors import FileFormatError

_BOM = "\ufeff"
_DECODER = json.JSONDecoder()
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_LONG_NUMBER = re.compile(r"-?[0-9]{4301,}")  # past Python's integer conversion limit
_DEEP = 500  # nesting reported as "too deep" when the reader gives up


def load(text: str, *, object_pairs_hook: Any = None) -> Any:
    """The JSON value of ``text``; FileFormatError (line, column) for text json.loads refuses,
    a number too long to convert, or nesting too deep for the reader (never a bare ValueError
    or RecursionError)."""
    try:
        value = json.loads(text, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError as exc:
        raise FileFormatError(f"invalid JSON: {exc.msg}", line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        line, column = _position(text, _deep_at(text))
        raise FileFormatError("invalid JSON: nested too deeply", line=line, column=column) from None
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion"
        long = _LONG_NUMBER.search(text)
        line, column = _position(text, long.start() if long else 0)
        digits = len(long.group(0).lstrip("-")) if long else 0
        reason = f"a number with {digits} digits (at most 4300)" if long else str(exc).split(";")[0]
        raise FileFormatError(f"invalid JSON: {reason}", line=line, column=column) from None
    if "\\ud" in text or "\\uD" in text:  # an escaped surrogate: half of a pair, alone?
        _refuse_lone_surrogates(text)
    return value


# a \u escape of a surrogate whose backslash is not itself escaped, and the low half after a high
# one (escapes occur in strings only: elsewhere a backslash is not JSON)
_SURROGATE_ESCAPE = re.compile(
    r"(?<!\\)(?:\\\\)*\\u([dD][89a-fA-F][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
)


def _refuse_lone_surrogates(text: str) -> None:
    """JSON may escape half of a UTF-16 pair alone (``"\\ud800"``); Python reads it as a lone
    surrogate, which is not text: no UTF-8 database or file can hold it. FileFormatError at the
    first such escape, instead of a failure when the value is stored."""
    for found in _SURROGATE_ESCAPE.finditer(text):
        if found.group(1)[1] in "89abAB" and found.group(2):
            continue  # a high half and a low half: one character
        line, column = _position(text, found.start(1) - 2)
        raise FileFormatError(
            "a lone UTF-16 surrogate (half of an escaped pair) is not text", line=line, column=column
        )


def _deep_at(text: str) -> int:
    """Where the nesting first passes :data:`_DEEP` levels (strings skipped)."""
    return next((at for at, depth in brackets(text) if depth > _DEEP), 0)


def brackets(text: str, start: int = 0) -> Iterator[tuple[int, int]]:
    """(offset, depth after it) of each bracket of the JSON text from ``start`` on, those inside
    strings skipped: the nesting read without reading the values (a text too deep for
    ``json.loads`` included). The depth counts from 0 at ``start``."""
    depth = 0
    in_string = escaped = False
    for at in range(start, len(text)):
        ch = text[at]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            yield at, depth
        elif ch in "]}":
            depth -= 1
            yield at, depth


def _position(text: str, at: int) -> tuple[int, int]:
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


@dataclass(frozen=True)
class Layout:
    """How ``json.dumps`` laid a whole text out: ``json.dumps(value, indent=unit,
    ensure_ascii=ascii_only) + tail``. Such a text can be edited in place by its lines
    (see :mod:`heartbeat.formats.tasks_splice`) without scanning it."""

    unit: str
    ascii_only: bool
    tail: str


def edit(source: str | None, doc: Any, *, indent: int | str | None = 2) -> str:
    """``doc`` as JSON text, laid over ``source`` (the text it was read from).

    Without a source (or with one that is not JSON) the text is
    ``json.dumps(doc, indent=indent)`` plus a newline. With a source holding
    the same document, the source itself.
    """
    return edit_layout(source, doc, indent=indent)[0]


def edit_layout(source: str | None, doc: Any, *, indent: int | str | None = 2) -> tuple[str, Layout | None]:
    """:func:`edit`'s text, and its :class:`Layout` when it is ``json.dumps``'s own (None when
    that is not known without dumping the document again, and for a text after a BOM)."""
    if source is None:
        return json.dumps(doc, indent=indent, ensure_ascii=False) + "\n", _dumps_layout(indent)
    bom = _BOM if source.startswith(_BOM) else ""
    body = source[len(bom) :]
    try:
        original = json.loads(body)
    except (ValueError, RecursionError):
        text = json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"
        return bom + text, None if bom else _dumps_layout(indent)
    if same(original, doc):
        return source, None
    laid_out = _in_dumps_layout(body, original)
    if laid_out is not None:  # json.dumps's own layout (hb's, a Python script's): no scan needed
        unit, ascii_only, tail = laid_out
        text = json.dumps(doc, indent=unit, ensure_ascii=ascii_only) + tail
        return bom + text, None if bom or not unit else Layout(unit, ascii_only, tail)
    return _spliced(bom, body, original, doc), None


def _dumps_layout(indent: int | str | None) -> Layout | None:
    """The layout of ``json.dumps(doc, indent=indent, ensure_ascii=False) + "\\n"``."""
    if indent is None:
        return None
    unit = " " * indent if isinstance(indent, int) else indent
    return Layout(unit, False, "\n") if unit else None


def _spliced(bom: str, body: str, original: Any, doc: Any) -> str:
    start = _skip_ws(body, 0)
    try:
        root: _Node | None = _Scanner(body).value(start)
    except RecursionError:
        root = None
    if root is not None:
        edited = body[:start] + _Writer(body, root, original).emit(root, original, doc) + body[root.end :]
        try:
            if same(json.loads(edited), doc):
                return bom + edited
        except (ValueError, RecursionError):
            pass
    # a layout this cannot splice: the whole document, with the file's own indent, between the
    # file's own leading and trailing space
    end = len(body.rstrip(" \t\r\n"))
    whole = json.dumps(doc, indent=indent_of(body), ensure_ascii=False)
    return bom + body[:start] + _newlines(whole, body) + body[end:]


def _in_dumps_layout(body: str, value: Any) -> tuple[str | None, bool, str] | None:
    """(indent, ensure_ascii, trailing newline) when ``body`` is exactly what ``json.dumps``
    writes for ``value`` in that layout: every value then keeps its text when the document is
    dumped again the same way, and the scan that splices edits is not needed (it is the cost
    of a large file)."""
    text = body[:-1] if body.endswith("\n") else body
    if "\r" in text:
        return None
    unit = indent_of(text)
    for ascii_only in (False, True):
        if json.dumps(value, indent=unit, ensure_ascii=ascii_only) == text:
            return unit, ascii_only, body[len(text) :]
    return None


def same(a: Any, b: Any) -> bool:
    """Equal as JSON text would be: same types (1 is not 1.0 nor True), same key order. Walked
    with a stack of its own: a value as deep as the JSON reader takes is compared, not a
    RecursionError (Python's limit came at a third of that depth)."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y):
                return False
            pending.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif not (x == y or (isinstance(x, float) and x != x and y != y)):  # NaN, read from "NaN" twice
            return False
    return True


def _in_place(old: Any, new: Any) -> bool:
    """Whether ``new`` at an array position is ``old`` (edited, or a scalar replaced), not another item."""
    if same(old, new) or _same_identity(old, new):
        return True
    return not isinstance(old, dict | list) and not isinstance(new, dict | list)


def _same_identity(old: Any, new: Any) -> bool:
    """Whether two objects are one item edited: same first member (an id, as a rule), same value."""
    key = _identity(old)
    return key is not None and key == _identity(new)


def _identity(value: Any) -> str | None:
    """An array item's identity: an object's first member (an id, as a rule), as JSON."""
    if not isinstance(value, dict) or not value:
        return None
    key = next(iter(value))
    return json.dumps([key, value[key]])


def indent_of(body: str) -> str | None:
    """The text's indent unit (its first indented line's), None for one-line JSON."""
    match = re.search(r"\n([ \t]+)\S", body)
    if match:
        return match.group(1)
    return None if body.strip() not in ("", "{}", "[]") and "\n" not in body.strip() else "  "


def _newlines(text: str, body: str) -> str:
    return text.replace("\n", "\r\n") if "\r\n" in body else text


def _skip_ws(text: str, i: int) -> int:
    match = _WHITESPACE.match(text, i)
    assert match is not None
    return match.end()


# --- where every value sits ---------------------------------------------------------------------


def repeated_keys(text: str) -> list[tuple[int, str]]:
    """(line, key) of every key an object of ``text`` (valid JSON) repeats, at its repetition."""
    scanner = _Scanner(text.removeprefix(_BOM))
    try:
        scanner.value(_skip_ws(scanner.text, 0))
    except RecursionError:
        return []
    text = scanner.text
    lines: dict[int, int] = {}  # offset -> line, counted in one pass (once per repeat: the square)
    line, counted = 1, 0
    for at in sorted({at for at, _ in scanner.repeated}):
        line += text.count("\n", counted, at)
        lines[at] = line
        counted = at
    return [(lines[at], key) for at, key in scanner.repeated]


def line_of(text: str, path: tuple[str | int, ...]) -> int | None:
    """The line of ``text`` (valid JSON) where the member at ``path`` begins: its key in an
    object (a repeated key's last, the one JSON readers take), its value in an array. None when
    ``path`` is not in the text."""
    body = text.removeprefix(_BOM)
    scanner = _Scanner(body)
    try:
        node = scanner.value(_skip_ws(body, 0))
    except RecursionError:
        return None
    at = node.start
    for key in path:
        member = next((m for m in reversed(node.every) if m.key == key), None)
        if member is None:
            return None
        at, node = member.start, member.value
    return body.count("\n", 0, at) + 1


@dataclass(frozen=True)
class _Member:
    key: str | int  # the object key, or the array index
    start: int  # where the member begins: the key's quote (objects) or the value (arrays)
    value: _Node


@dataclass(frozen=True)
class _Node:
    start: int
    end: int
    # None for a scalar, and for an object that repeats a key (its text is kept or replaced whole)
    members: tuple[_Member, ...] | None = None
    every: tuple[_Member, ...] = ()  # every member of a container, repeated keys too (for line_of)


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.repeated: list[tuple[int, str]] = []  # (offset, key) of each repeated key

    def value(self, i: int) -> _Node:
        opener = self.text[i]
        if opener in "{[":
            return self._container(i, "}" if opener == "{" else "]")
        _, end = _DECODER.raw_decode(self.text, i)
        return _Node(i, end)

    def _container(self, i: int, closer: str) -> _Node:
        text = self.text
        members: list[_Member] = []
        seen: set[str | int] = set()
        repeats = False
        j = _skip_ws(text, i + 1)
        while text[j] != closer:
            start = j
            key: str | int = len(members)
            if closer == "}":
                key, j = _DECODER.raw_decode(text, j)
                j = _skip_ws(text, _skip_ws(text, j) + 1)  # past the colon
                if key in seen:
                    repeats = True
                    self.repeated.append((start, str(key)))
                seen.add(key)
            node = self.value(j)
            members.append(_Member(key, start, node))
            j = _skip_ws(text, node.end)
            if text[j] == ",":
                j = _skip_ws(text, j + 1)
        every = tuple(members)
        return _Node(i, j + 1, None if repeats else every, every)


# --- writing ------------------------------------------------------------------------------------


class _Writer:
    def __init__(self, text: str, root: _Node, original: Any) -> None:
        self.text = text
        self.unit = indent_of(text) or "  "
        self.root = root
        self.original = original
        self._moved: dict[str, list[tuple[_Node, Any]]] | None = None

    def _moved_from(self, value: Any, lead: str | None) -> tuple[_Node, Any] | None:
        """An object of some other array of the old text that ``value`` is an edit of (an entry
        that moved, as a task does from ``pending`` to ``in_progress``), when its text fits the
        new place (one line, or indented as the new place is); each is taken once."""
        key = _identity(value)
        if key is None:
            return None
        if self._moved is None:
            self._moved = {}
            self._collect(self.root, self.original)
        found = self._moved.get(key, [])
        for i, (node, _) in enumerate(found):
            if "\n" not in self._span(node) or (lead is not None and self._line_lead(node.start) == lead):
                return found.pop(i)
        return None

    def _collect(self, node: _Node, value: Any) -> None:
        if node.members is None:
            return
        for member in node.members:
            child = value[member.key]
            if isinstance(value, list) and (key := _identity(child)) is not None:
                self._moved.setdefault(key, []).append((member.value, child))  # type: ignore[union-attr]
            self._collect(member.value, child)

    def emit(self, node: _Node, old: Any, new: Any) -> str:
        """The text for ``new`` where ``node`` (holding ``old``) was."""
        text = self.text
        if same(old, new):
            return text[node.start : node.end]
        members = node.members
        if members is not None and isinstance(old, dict) and isinstance(new, dict):
            if list(new)[: len(old)] == list(old) and members:
                return self._splice(node, [new[m.key] for m in members], old, list(new)[len(old) :], new)
            return self._rebuild(node, old, new)
        if members is not None and isinstance(old, list) and isinstance(new, list):
            if len(old) == len(new) and members and all(map(_in_place, old, new)):
                return self._splice(node, new, old, [], None)
            return self._rebuild(node, old, new)  # items came, went or moved: matched by value
        multiline = "\n" in text[node.start : node.end]
        return self._fresh(new, self._line_lead(node.start) if multiline else None)

    def _splice(self, node: _Node, values: list[Any], old: Any, added: list[str], new: Any) -> str:
        """The container's own text with changed member values replaced and ``added`` appended."""
        text = self.text
        assert node.members is not None
        out: list[str] = []
        at = node.start
        for member, value in zip(node.members, values, strict=True):
            out.append(text[at : member.value.start])
            out.append(self.emit(member.value, old[member.key], value))
            at = member.value.end
        if added:
            lead, _, _ = self._layout(node)
            sep = "," + (lead if "\n" in lead else " ")
            for key in added:
                out.append(sep + self._member_text(key, new[key], lead))
        out.append(text[at : node.end])
        return "".join(out)

    def _rebuild(self, node: _Node, old: Any, new: Any) -> str:
        """The container written member by member in its own layout: kept members keep their text."""
        text = self.text
        members = node.members or ()
        opener, closer = text[node.start], text[node.end - 1]
        if not new:
            return opener + closer
        lead, close, inline = self._layout(node)
        pieces: list[str] = []
        if isinstance(new, dict):
            by_key = {m.key: m for m in members}
            for key, value in new.items():
                member = by_key.get(key)
                if member is None:
                    pieces.append(self._member_text(key, value, lead))
                else:
                    prefix = text[member.start : member.value.start]
                    pieces.append(prefix + self.emit(member.value, old[key], value))
        else:
            unused = list(members)
            for value in new:
                match = next((m for m in unused if same(old[m.key], value)), None)
                match = match or next((m for m in unused if _same_identity(old[m.key], value)), None)
                item_lead = None if inline else lead.rsplit("\n", 1)[-1]
                if match is not None:
                    unused.remove(match)
                    pieces.append(self.emit(match.value, old[match.key], value))
                elif (moved := self._moved_from(value, item_lead)) is not None:
                    pieces.append(self.emit(moved[0], moved[1], value))
                else:
                    pieces.append(self._fresh(value, item_lead))
        sep = "," + (lead if "\n" in lead else " ")
        return opener + lead + sep.join(pieces) + close + closer

    def _span(self, node: _Node) -> str:
        return self.text[node.start : node.end]

    def _layout(self, node: _Node) -> tuple[str, str, bool]:
        """(space before the first member, space before the closer, all on one line?)."""
        text = self.text
        members = node.members or ()
        if members:
            lead = text[node.start + 1 : members[0].start]
            close = text[members[-1].value.end : node.end - 1]
            return lead, close, "\n" not in lead
        if "\n" not in text:
            return "", "", True
        base = self._line_lead(node.start)
        newline = "\r\n" if "\r\n" in text else "\n"
        return newline + base + self.unit, newline + base, False

    def _member_text(self, key: str, value: Any, lead: str) -> str:
        inline = "\n" not in lead
        return (
            json.dumps(key, ensure_ascii=False)
            + ": "
            + self._fresh(value, None if inline else lead.rsplit("\n", 1)[-1])
        )

    def _fresh(self, value: Any, lead: str | None) -> str:
        """``value`` as JSON: on one line, or indented from ``lead`` when its place is multi-line.
        An array's items that moved from another array of the old text keep their text (a task
        moving into a list the file did not have, as ``failed`` may be missing)."""
        if isinstance(value, list) and value and self.original is not None:
            item_lead = None if lead is None else lead + self.unit
            pieces = []
            for item in value:
                moved = self._moved_from(item, item_lead)
                pieces.append(self.emit(*moved, item) if moved is not None else self._dumped(item, item_lead))
            if lead is None or item_lead is None:
                return "[" + ", ".join(pieces) + "]"
            newline = "\r\n" if "\r\n" in self.text else "\n"
            return "[" + newline + item_lead + ("," + newline + item_lead).join(pieces) + newline + lead + "]"
        return self._dumped(value, lead)

    def _dumped(self, value: Any, lead: str | None) -> str:
        """``value`` as ``json.dumps`` writes it, indented from ``lead`` (None: on one line)."""
        if lead is None or not isinstance(value, dict | list) or not value:
            return json.dumps(value, ensure_ascii=False)
        dumped = json.dumps(value, indent=self.unit, ensure_ascii=False)
        return _newlines(dumped.replace("\n", "\n" + lead), self.text)

    def _line_lead(self, pos: int) -> str:
        line_start = self.text.rfind("\n", 0, pos) + 1
        line = self.text[line_start:pos]
        return line[: len(line) - len(line.lstrip(" \t"))]
