"""PROACTIVE.md (FORMATS.md section 3), read and written without losing a byte.

The file is YAML front matter, prose that people and the agent edit, and a task
section between ``<!-- PROACTIVE_TASKS_START -->`` and
``<!-- PROACTIVE_TASKS_END -->`` holding one ``### [FREQUENCY] Name`` heading and
one fenced yaml block per task.

The document is kept as the text it was read from, cut into parts: verbatim
text and task blocks. Writing changes only the blocks of tasks that changed, so
prose, markers, comments and malformed blocks come back byte-identical. A block
that cannot be read (bad YAML, not a mapping, no id, bad frequency, a second
block with the same id) is not a task: it stays in place as text with a
:class:`LineWarning`, where the original runtime made it vanish on the next save.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import yaml

from heartbeat.errors import FileFormatError, InvalidInput
from heartbeat.formats.timestamps import format_timestamp

__all__ = [
    "END_MARKER",
    "FREQUENCIES",
    "MAX_OUTCOMES",
    "START_MARKER",
    "LineWarning",
    "ProactiveDocument",
    "ProactiveTask",
    "parse",
    "record_outcome",
    "render",
    "with_tasks",
]

START_MARKER = "<!-- PROACTIVE_TASKS_START -->"
END_MARKER = "<!-- PROACTIVE_TASKS_END -->"
FREQUENCIES = ("hourly", "daily", "weekly", "monthly")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MAX_OUTCOMES = 5  # outcome_history keeps the last five, newest last

DEFAULT_PRIORITY = 50
DEFAULT_TIER = 1  # notify, then execute: the user sees what a task without a tier does
CAUTIOUS_TIER = 3  # an unreadable tier is treated as high-risk, never as silent

_HEADING = re.compile(r"###[ \t]+\[([^\]]*)\][ \t]*(.*?)[ \t]*")
_ANY_HEADING = re.compile(r"#{1,6}[ \t].*")
_FENCE_OPEN = re.compile(r"(`{3,}|~{3,})[ \t]*(?:ya?ml)?[ \t]*", re.IGNORECASE)
_SNAKE_ID = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
_CLOCK_LIKE = re.compile(r"[0-9]+(?::[0-9]+)+")
_H_MM = re.compile(r"([01]?[0-9]|2[0-3]):([0-5][0-9])")
_LAST_UPDATED = re.compile(
    r"(?P<head>last_updated[ \t]*:[ \t]*)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^#\r\n]*?)"
    r"(?P<tail>[ \t]+#[^\r\n]*)?(?P<nl>\r?\n)?"
)

# The typed attributes written back into the yaml block, in the order a new task lists them.
_KNOWN_KEYS = (
    "id",
    "frequency",
    "time",
    "day",
    "enabled",
    "priority",
    "permission_tier",
    "conditions",
    "instruction",
    "run_count",
    "outcome_history",
)
_OMITTED_WHEN_EMPTY = ("conditions", "instruction")


@dataclass(frozen=True)
class LineWarning:
    """Something in the file hb kept verbatim but could not use as written."""

    line: int  # 1-based
    text: str  # the line as written, without its line break
    reason: str


@dataclass(frozen=True)
class ProactiveTask:
    """One task of the task section: typed attributes plus every yaml key as written.

    ``fields`` holds all keys of the yaml block in their order (unknown ones
    too); the typed attributes are read from it. To change a task, change the
    typed attribute (``dataclasses.replace``) or a key of ``fields``; a typed
    attribute that differs from the one read wins when the block is written.
    A task built in code has ``line`` 0 and ``raw`` "".
    """

    id: str
    name: str
    frequency: str  # one of FREQUENCIES
    time: str | None = None  # "HH:MM", 24h
    day: str | None = None  # weekly: monday..sunday; monthly: "1".."31"
    enabled: bool = True
    priority: int = DEFAULT_PRIORITY  # 1-100, lower runs first
    permission_tier: int = DEFAULT_TIER  # 0 silent, 1 notify, 2 approval, 3 high-risk
    conditions: tuple[str, ...] = ()
    instruction: str = ""
    run_count: int = 0
    outcome_history: tuple[dict[str, Any], ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)
    line: int = 0  # the heading's line, 1-based
    raw: str = ""  # heading through closing fence, exactly as in the file


Part = str | ProactiveTask


@dataclass(frozen=True)
class ProactiveDocument:
    """A PROACTIVE.md file as parts whose concatenation is the file, byte for byte."""

    front_matter: str  # from the opening --- through the closing ---, or ""
    meta: dict[str, Any]  # the front matter as read
    parts: tuple[Part, ...]  # verbatim text and task blocks, in file order
    line_warnings: tuple[LineWarning, ...] = ()
    has_section: bool = False  # a START marker exists
    end_part: int | None = None  # index of the END marker's part: new tasks go before it

    @property
    def tasks(self) -> list[ProactiveTask]:
        """The readable tasks of the task section, in file order."""
        return [part for part in self.parts if isinstance(part, ProactiveTask)]

    @property
    def warnings(self) -> list[LineWarning]:
        """Lines kept verbatim that hb could not use, in file order."""
        return list(self.line_warnings)


# --- reading ---


def parse(text: str) -> ProactiveDocument:
    """Read PROACTIVE.md; ``render`` of the result gives ``text`` back unchanged.

    Raises FileFormatError (with the line) only when the front matter cannot be
    read; every other problem is a warning and its lines stay in place as text.
    """
    lines = _split_lines(text)
    front_end, meta = _read_front_matter(lines)
    reader = _SectionReader(lines, front_end)
    reader.read()
    return ProactiveDocument(
        front_matter="".join(lines[:front_end]),
        meta=meta,
        parts=tuple(reader.parts),
        line_warnings=tuple(sorted(reader.warnings, key=lambda w: w.line)),
        has_section=reader.start is not None,
        end_part=reader.end_part,
    )


def _split_lines(text: str) -> list[str]:
    """Split after each newline, keeping it (str.splitlines also breaks on U+2028 and kin)."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def _body(line: str) -> str:
    return line.rstrip("\n").rstrip("\r")


def _read_front_matter(lines: list[str]) -> tuple[int, dict[str, Any]]:
    """Return how many lines the front matter spans and its mapping."""
    if not lines or _body(lines[0]).removeprefix("\ufeff").rstrip() != "---":
        return 0, {}
    close = next((i for i in range(1, len(lines)) if _body(lines[i]).rstrip() in ("---", "...")), None)
    if close is None:
        raise FileFormatError("front matter opened with --- is never closed", line=1)
    try:
        meta = _load_yaml("".join(lines[1:close]))
    except _YamlProblem as problem:
        raise FileFormatError(
            f"front matter is not valid YAML: {problem.reason}", line=2 + problem.line
        ) from None
    if meta is None:
        return close + 1, {}
    if not isinstance(meta, dict):
        raise FileFormatError("front matter must be a YAML mapping", line=2)
    return close + 1, meta


class _YamlProblem(Exception):
    def __init__(self, reason: str, line: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line  # 0-based within the yaml text


def _load_yaml(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        from heartbeat.formats.yaml_errors import describe

        reason, line, _ = describe(exc)
        raise _YamlProblem(reason, line) from None
    except (yaml.YAMLError, ValueError, OverflowError) as exc:
        # e.g. an impossible date like 2026-13-45 fails in the constructor
        raise _YamlProblem(" ".join(str(exc).split()), 0) from None


class _SectionReader:
    """Cuts the lines after the front matter into verbatim text and task blocks."""

    def __init__(self, lines: list[str], first: int) -> None:
        self.lines = lines
        self.first = first
        self.parts: list[Part] = []
        self.warnings: list[LineWarning] = []
        self.start: int | None = None
        self.end_part: int | None = None
        self._buffer: list[str] = []
        self._seen_ids: dict[str, int] = {}

    def read(self) -> None:
        lines = self.lines
        self.start = _find_marker(lines, START_MARKER, self.first)
        if self.start is None:
            self._verbatim(self.first, len(lines))
            stray_end = _find_marker(lines, END_MARKER, self.first)
            if stray_end is not None:
                self._warn(stray_end, "end marker without a start marker: no task section")
            self._flush()
            return
        end = _find_marker(lines, END_MARKER, self.start + 1)
        self._verbatim(self.first, self.start + 1)
        if end is None:
            self._warn(self.start, "task section has no end marker: it runs to the end of file")
        self._tasks(self.start + 1, len(lines) if end is None else end)
        self._flush()
        if end is not None:
            self.end_part = len(self.parts)
            self.parts.append(lines[end])
            self._verbatim(end + 1, len(lines))
            self._flush()

    def _verbatim(self, lo: int, hi: int) -> None:
        """Text outside the task section; a task written there is reported, not read."""
        for i in range(lo, hi):
            if _HEADING.fullmatch(_body(self.lines[i])) and self._fence_after(i, hi) is not None:
                self._warn(i, "task outside the PROACTIVE_TASKS markers is not read")
        self._buffer.extend(self.lines[lo:hi])

    def _tasks(self, lo: int, hi: int) -> None:
        i = lo
        while i < hi:
            heading = _HEADING.fullmatch(_body(self.lines[i]))
            if heading is None:
                if _ANY_HEADING.fullmatch(_body(self.lines[i])) and self._fence_after(i, hi) is not None:
                    self._warn(i, "heading has no ### [FREQUENCY]: its yaml block is not read as a task")
                self._buffer.append(self.lines[i])
                i += 1
                continue
            fence = self._fence_after(i, hi)
            if fence is None:
                self._warn(i, "task heading is not followed by a ```yaml block")
                self._buffer.append(self.lines[i])
                i += 1
                continue
            close = self._closing_fence(fence, hi)
            if close is None:
                stop = next(
                    (j for j in range(fence + 1, hi) if _HEADING.fullmatch(_body(self.lines[j]))),
                    hi,
                )
                self._warn(i, "yaml block is never closed")
                self._buffer.extend(self.lines[i:stop])
                i = stop
                continue
            self._block(i, fence, close, heading)
            i = close + 1

    def _fence_after(self, heading: int, hi: int) -> int | None:
        j = heading + 1
        while j < hi and not _body(self.lines[j]).strip():
            j += 1
        if j < hi and _FENCE_OPEN.fullmatch(_body(self.lines[j])):
            return j
        return None

    def _closing_fence(self, fence: int, hi: int) -> int | None:
        opening = _body(self.lines[fence]).strip()
        char = opening[0]
        width = len(opening) - len(opening.lstrip(char))
        for j in range(fence + 1, hi):
            body = _body(self.lines[j]).strip()
            if len(body) >= width and body == char * len(body):
                return j
        return None

    def _block(self, i: int, fence: int, close: int, heading: re.Match[str]) -> None:
        raw_lines = self.lines[i : close + 1]
        try:
            data = _load_yaml("".join(self.lines[fence + 1 : close]))
        except _YamlProblem as problem:
            self._reject(
                i,
                raw_lines,
                f"yaml block is not valid YAML (line {fence + 2 + problem.line}): {problem.reason}",
            )
            return
        if not isinstance(data, dict):
            self._reject(i, raw_lines, "yaml block is not a mapping")
            return
        task, issues = _read_task(
            data,
            name=heading.group(2),
            heading_frequency=heading.group(1),
            line=i + 1,
            raw="".join(raw_lines),
        )
        if task is not None and task.id in self._seen_ids:
            issues = [f"duplicate id {task.id!r} (first on line {self._seen_ids[task.id]})"]
            task = None
        if task is None:
            self._reject(i, raw_lines, "; ".join(issues))
            return
        for reason in issues:
            self._warn(i, reason)
        self._seen_ids[task.id] = i + 1
        self._flush()
        self.parts.append(task)

    def _reject(self, i: int, raw_lines: list[str], reason: str) -> None:
        self._warn(i, f"not a task, kept as written: {reason}")
        self._buffer.extend(raw_lines)

    def _warn(self, i: int, reason: str) -> None:
        self.warnings.append(LineWarning(i + 1, _body(self.lines[i]), reason))

    def _flush(self) -> None:
        if self._buffer:
            self.parts.append("".join(self._buffer))
            self._buffer = []


def _find_marker(lines: list[str], marker: str, lo: int) -> int | None:
    return next((i for i in range(lo, len(lines)) if lines[i].strip() == marker), None)


def _read_task(
    data: Mapping[str, Any], *, name: str, heading_frequency: str, line: int, raw: str
) -> tuple[ProactiveTask | None, list[str]]:
    """Type a yaml block; None (with the reasons) when it cannot be a task."""
    issues: list[str] = []
    task_id = data.get("id")
    if task_id is None or task_id == "":
        return None, ["no id"]
    if not isinstance(task_id, str):
        return None, [f"id {task_id!r} is not a string"]
    if not _SNAKE_ID.fullmatch(task_id):
        issues.append(f"id {task_id!r} is not snake_case")
    frequency = _read_frequency(data.get("frequency"), heading_frequency, issues)
    if frequency is None:
        return None, issues
    task = ProactiveTask(
        id=task_id,
        name=name,
        frequency=frequency,
        time=_read_time(data.get("time"), issues),
        day=_read_day(data.get("day"), frequency, issues),
        enabled=_read_enabled(data.get("enabled", True), issues),
        priority=_read_int(data.get("priority"), "priority", 1, 100, DEFAULT_PRIORITY, issues),
        permission_tier=_read_tier(data.get("permission_tier"), issues),
        conditions=_read_conditions(data.get("conditions"), issues),
        instruction=_read_instruction(data.get("instruction"), issues),
        run_count=_read_int(data.get("run_count"), "run_count", 0, None, 0, issues),
        outcome_history=_read_history(data.get("outcome_history"), issues),
        fields=dict(data),
        line=line,
        raw=raw,
    )
    return task, issues


def _read_frequency(value: Any, heading: str, issues: list[str]) -> str | None:
    from_heading = heading.strip().lower()
    if value is None:
        if from_heading in FREQUENCIES:
            return from_heading
        issues.append(f"bad frequency {heading!r}: expected one of {', '.join(FREQUENCIES)}")
        return None
    if not isinstance(value, str) or value.strip().lower() not in FREQUENCIES:
        issues.append(f"bad frequency {value!r}: expected one of {', '.join(FREQUENCIES)}")
        return None
    frequency = value.strip().lower()
    if from_heading != frequency:
        issues.append(f"heading says [{heading}] but frequency is {value!r}: using {frequency}")
    return frequency


def _read_time(value: Any, issues: list[str]) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 24 * 60:
        # YAML 1.1 reads an unquoted 9:30 as the base-60 number 570
        text = f"{value // 60:02d}:{value % 60:02d}"
        issues.append(f"time read as {text} (YAML turns unquoted H:MM into a number): quote it")
        return text
    match = _H_MM.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is not None:
        return f"{int(match[1]):02d}:{match[2]}"
    issues.append(f"time {value!r} is not HH:MM (24h): ignored")
    return None


def _read_day(value: Any, frequency: str, issues: list[str]) -> str | None:
    if value is None:
        return None
    text = str(value).strip().lower()
    if frequency == "weekly" and text not in WEEKDAYS:
        issues.append(f"day {value!r} is not a weekday (monday..sunday): ignored")
        return None
    if frequency == "monthly" and not (text.isdigit() and 1 <= int(text) <= 31):
        issues.append(f"day {value!r} is not a day of the month (1..31): ignored")
        return None
    return str(int(text)) if frequency == "monthly" else text


def _read_enabled(value: Any, issues: list[str]) -> bool:
    if isinstance(value, bool):
        return value
    issues.append(f"enabled {value!r} is not true/false: the task is treated as disabled")
    return False


def _read_int(value: Any, key: str, low: int, high: int | None, default: int, issues: list[str]) -> int:
    if value is None:
        return default
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= low
        and (high is None or value <= high)
    ):
        return value
    bounds = f"{low}-{high}" if high is not None else f">= {low}"
    issues.append(f"{key} {value!r} is not a whole number {bounds}: using {default}")
    return default


def _read_tier(value: Any, issues: list[str]) -> int:
    if value is None:
        return DEFAULT_TIER
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3:
        return value
    issues.append(f"permission_tier {value!r} is not 0-3: treated as {CAUTIOUS_TIER} (high-risk)")
    return CAUTIOUS_TIER


def _read_conditions(value: Any, issues: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        issues.append(f"conditions {value!r} is not a list: ignored")
        return ()
    kept = tuple(item for item in value if isinstance(item, str))
    if len(kept) != len(value):
        issues.append("conditions that are not text are ignored")
    return kept


def _read_instruction(value: Any, issues: list[str]) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    issues.append("instruction is not text: read as its text form")
    return str(value)


def _read_history(value: Any, issues: list[str]) -> tuple[dict[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        issues.append("outcome_history is not a list: ignored")
        return ()
    kept = tuple(item for item in value if isinstance(item, dict))
    if len(kept) != len(value):
        issues.append("outcome_history entries that are not mappings are ignored")
    return kept


# --- writing ---


def render(doc: ProactiveDocument) -> str:
    """The file text: the parts joined; ``render(parse(t)) == t``."""
    return doc.front_matter + "".join(
        part.raw if isinstance(part, ProactiveTask) else part for part in doc.parts
    )


def with_tasks(doc: ProactiveDocument, tasks: Sequence[ProactiveTask], *, now: datetime) -> ProactiveDocument:
    """The document holding exactly ``tasks``, rewriting only what changed.

    A task whose id is in ``doc`` keeps its place; only a task that changed gets
    its block re-rendered. New tasks go before the END marker (markers are
    created at the end of the file when missing); tasks left out lose their
    block. Prose, markers and malformed blocks stay byte-identical. When
    anything changed, an existing front matter ``last_updated`` becomes ``now``.
    Raises InvalidInput for a task that cannot be written or a repeated id.
    """
    _require_aware(now)
    wanted = _index_tasks(tasks)
    current = {task.id: task for task in doc.tasks}
    parts: list[str] = []
    changed = False
    drop_blank = False
    for index, part in enumerate(doc.parts):
        if index == doc.end_part:
            parts.extend(_new_blocks(wanted, current, "".join(parts)))
        if isinstance(part, str):
            parts.append(_drop_blank_line(part) if drop_blank else part)
            drop_blank = False
            continue
        task = wanted.get(part.id)
        drop_blank = task is None
        text = part.raw if task is None else _block_text(task, part)
        changed = changed or text != part.raw or task is None
        if task is not None:
            parts.append(text)
    if doc.end_part is None:
        parts.extend(_closing_section(wanted, current, doc.has_section, "".join(parts)))
    changed = changed or any(task_id not in current for task_id in wanted)
    if not changed:
        return doc
    return parse(_stamp_last_updated(doc.front_matter, now) + "".join(parts))


def _index_tasks(tasks: Sequence[ProactiveTask]) -> dict[str, ProactiveTask]:
    wanted: dict[str, ProactiveTask] = {}
    for task in tasks:
        _check_writable(task)
        if task.id in wanted:
            raise InvalidInput(f"task id {task.id!r} is given twice")
        wanted[task.id] = task
    return wanted


def _check_writable(task: ProactiveTask) -> None:
    if not isinstance(task.id, str) or not task.id.strip():
        raise InvalidInput(f"task id {task.id!r} must be a non-empty string")
    if task.frequency not in FREQUENCIES:
        raise InvalidInput(
            f"task {task.id!r}: frequency {task.frequency!r} is not one of {', '.join(FREQUENCIES)}"
        )
    if "\n" in task.name or "\r" in task.name:
        raise InvalidInput(f"task {task.id!r}: a name must fit on one heading line")


def _new_blocks(
    wanted: Mapping[str, ProactiveTask], current: Mapping[str, ProactiveTask], before: str
) -> Iterator[str]:
    newline = _newline_of(before)
    for task_id, task in wanted.items():
        if task_id not in current:
            yield _fresh_block(task, newline) + newline


def _closing_section(
    wanted: Mapping[str, ProactiveTask],
    current: Mapping[str, ProactiveTask],
    has_section: bool,
    before: str,
) -> Iterator[str]:
    """New tasks at the end of the file, with the markers the file lacks."""
    blocks = list(_new_blocks(wanted, current, before))
    if not blocks:
        return
    newline = _newline_of(before)
    if before and not before.endswith("\n"):
        yield newline
    if not has_section:
        yield (newline if before else "") + START_MARKER + newline + newline
    yield from blocks
    yield END_MARKER + newline


def _newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _drop_blank_line(text: str) -> str:
    """A removed block takes one following blank line with it, so gaps do not pile up."""
    for blank in ("\r\n", "\n"):
        if text.startswith(blank):
            return text[len(blank) :]
    return text


def _block_text(task: ProactiveTask, original: ProactiveTask) -> str:
    """The original block when nothing changed, else the re-rendered one."""
    fields = _yaml_fields(task, original)
    if fields == original.fields and task.name == original.name:
        return original.raw
    raw_lines = _split_lines(original.raw)
    newline = "\r\n" if raw_lines[0].endswith("\r\n") else "\n"
    heading = _HEADING.fullmatch(_body(raw_lines[0]))
    keep_heading = (
        heading is not None
        and heading.group(2) == task.name
        and heading.group(1).strip().lower() == task.frequency
    )
    head = raw_lines[0] if keep_heading else _heading(task) + newline
    fence = next(i for i in range(1, len(raw_lines)) if _body(raw_lines[i]).strip())
    body = raw_lines[fence + 1 : -1]
    yaml_text = _edited_yaml(body, original.fields, fields, newline)
    if yaml_text is None:
        yaml_text = _dump(fields, newline)
    return head + "".join(raw_lines[1 : fence + 1]) + yaml_text + raw_lines[-1]


_TOP_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]|$)")


def _edited_yaml(
    body: list[str], before: Mapping[str, Any], after: Mapping[str, Any], newline: str
) -> str | None:
    """The block's yaml with only the keys that changed rewritten; every other line (comments,
    quoting, flow lists) kept as written. None when the layout is not one this can splice
    safely (the caller then writes the whole block)."""
    spans: dict[str, list[str]] = {}
    order: list[str | list[str]] = []  # a key, or lines that belong to no key (comments)
    current: list[str] | None = None
    for line in body:
        text = _body(line)
        match = _TOP_KEY.match(text)
        if match is not None:
            key = match.group(1)
            if key in spans:
                return None  # a key written twice: let YAML's own reading decide
            current = spans[key] = [line]
            order.append(key)
        elif current is not None and (not text.strip() or text[:1] in (" ", "\t", "-")):
            current.append(line)  # the key's value continues: indented, a list item or blank
        elif text.lstrip().startswith("#") or not text.strip():
            current = None
            order.append([line])
        else:
            return None
    if set(spans) != set(before):
        return None  # keys yaml reads that are not at the start of a line (a flow mapping, ...)
    out: list[str] = []
    for item in order:
        if isinstance(item, list):
            out.extend(item)
        elif item in after:
            if after[item] == before[item]:
                out.append("".join(spans[item]))
            else:
                out.append(_edited_value(item, spans[item], before[item], after[item], newline))
    out.extend(_dump({key: value}, newline) for key, value in after.items() if key not in spans)
    text = "".join(out)
    expected = yaml.safe_load(_dump(dict(after), "\n")) or {}
    try:
        got = yaml.safe_load(text.replace("\r\n", "\n")) or {}
    except yaml.YAMLError:
        return None
    return text if got == expected and list(got) == list(expected) else None


_COMMENT = re.compile(r"[ \t]+#.*$")
_ITEM = re.compile(r"([ \t]*)- ")


def _edited_value(key: str, lines: list[str], old: Any, new: Any, newline: str) -> str:
    """One changed key's yaml, keeping what can be kept: a scalar's trailing comment (the
    runtime's ``run_count: 3  # maintained by the runtime``), and of a list that only grew
    at the end and lost items at the start (``outcome_history``), the kept items' lines as
    written, the comments among them, and the style of its items for the new ones. The
    caller checks that the result reads as ``new``."""
    fresh = _dump({key: new}, newline)
    first = _body(lines[0])
    comment = _COMMENT.search(first)
    if len(lines) == 1 and not isinstance(new, dict | list):
        if comment is None or _loads(first[: comment.start()]) != {key: old}:
            return fresh
        return _body(fresh) + comment.group(0) + newline
    if not (isinstance(old, list) and isinstance(new, list)):
        return fresh
    dropped = next((k for k in range(len(old) + 1) if new[: len(old) - k] == old[k:]), None)
    if dropped is None:
        return fresh
    chunks: list[tuple[bool, list[str]]] = []  # (is an item, its lines)
    indent: str | None = None
    for line in lines[1:]:
        match = _ITEM.match(_body(line))
        if match is not None and (indent is None or match.group(1) == indent):
            indent = match.group(1)
            chunks.append((True, [line]))
        elif (
            chunks
            and chunks[-1][0]
            and _body(line)[: len(indent or "") + 1].strip() == ""
            and _body(line).strip()
        ):
            chunks[-1][1].append(line)  # the item continues, indented deeper
        else:
            chunks.append((False, [line]))  # a comment or a blank line among the items
    items = [chunk for chunk in chunks if chunk[0]]
    if indent is None or len(items) != len(old):
        return fresh
    gone = {id(chunk) for chunk in items[:dropped]}
    out = [lines[0]]
    out.extend(line for chunk in chunks if id(chunk) not in gone for line in chunk[1])
    flow = all(_body(chunk[1][0])[len(indent) + 2 :].lstrip().startswith("{") for chunk in items)
    for value in new[len(old) - dropped :]:
        text = yaml.dump(
            [value],
            Dumper=_BlockDumper,
            default_flow_style=None if flow else False,
            sort_keys=False,
            allow_unicode=True,
            width=1_000_000,
        )
        out.extend(indent + part + newline for part in text.splitlines())
    return "".join(out)


def _loads(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def _fresh_block(task: ProactiveTask, newline: str) -> str:
    fields = _yaml_fields(task, None)
    return _heading(task) + newline + "```yaml" + newline + _dump(fields, newline) + "```" + newline


def _heading(task: ProactiveTask) -> str:
    return f"### [{task.frequency.upper()}] {task.name}".rstrip()


def _yaml_fields(task: ProactiveTask, original: ProactiveTask | None) -> dict[str, Any]:
    """``task.fields`` with every typed attribute the caller changed written in.

    For a task already in the file, an attribute equal to the one read keeps
    its yaml text and type; a new task writes all of them (empty ones omitted).
    """
    fields = dict(task.fields)
    for key in _KNOWN_KEYS:
        value = getattr(task, key)
        if original is not None and value == getattr(original, key):
            continue
        if value is None or (
            original is None and key in _OMITTED_WHEN_EMPTY and not value and key not in fields
        ):
            fields.pop(key, None)
            continue
        fields[key] = _yaml_value(value)
    return fields


def _yaml_value(value: Any) -> Any:
    if isinstance(value, tuple):
        return [dict(item) if isinstance(item, dict) else item for item in value]
    return value


def _dump(fields: Mapping[str, Any], newline: str) -> str:
    trimmed = dict(fields)
    history = trimmed.get("outcome_history")
    if isinstance(history, list) and len(history) > MAX_OUTCOMES:
        trimmed["outcome_history"] = history[-MAX_OUTCOMES:]
    try:
        text = yaml.dump(
            trimmed,
            Dumper=_BlockDumper,
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=1_000_000,  # long instructions stay on one line instead of being folded
        )
    except yaml.YAMLError as exc:
        raise InvalidInput(f"task {fields.get('id')!r} holds a value YAML cannot write: {exc}") from None
    assert isinstance(text, str)
    return text.replace("\n", newline) if newline != "\n" else text


class _BlockDumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line text as a ``|`` block, as people write instructions."""


def _represent_text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    if _CLOCK_LIKE.fullmatch(text):
        style = '"'  # "08:00" as FORMATS.md writes it; unquoted 9:30 reads as a number
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_BlockDumper.add_representer(str, _represent_text)


def _stamp_last_updated(front_matter: str, now: datetime) -> str:
    """Set an existing top-level ``last_updated`` to ``now``, keeping its quotes and comment."""
    lines = _split_lines(front_matter)
    for i, line in enumerate(lines[1:-1], start=1):
        match = _LAST_UPDATED.fullmatch(line)
        if match is None:
            continue
        value = match["value"]
        quote = value[0] if value[:1] in ('"', "'") else ""
        stamp = quote + format_timestamp(now) + quote
        lines[i] = match["head"] + stamp + (match["tail"] or "") + (match["nl"] or "")
        break
    return "".join(lines)


def record_outcome(task: ProactiveTask, *, result: str, success: bool, now: datetime) -> ProactiveTask:
    """The task after one run: run_count + 1 and the outcome appended, last five kept.

    The outcome is ``{timestamp, result, success}`` with a UTC ``...Z`` timestamp.
    """
    _require_aware(now)
    entry: dict[str, Any] = {
        "timestamp": format_timestamp(now),
        "result": result,
        "success": success,
    }
    history = (*task.outcome_history, entry)[-MAX_OUTCOMES:]
    fields = dict(task.fields)
    fields["run_count"] = task.run_count + 1
    fields["outcome_history"] = [dict(item) for item in history]
    return replace(task, run_count=task.run_count + 1, outcome_history=history, fields=fields)


def _require_aware(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise InvalidInput(f"now must carry a timezone, got {now.isoformat()}")
