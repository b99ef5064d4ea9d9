"""PROACTIVE.md (FORMATS.md section 3): read as CraftBot reads it, written without losing a byte.

CraftBot (``app/proactive``) owns this file; hb reads exactly the tasks its
parser reads and judges them as its manager does:

- the task section is the text between the first ``<!-- PROACTIVE_TASKS_START -->``
  and the first ``<!-- PROACTIVE_TASKS_END -->`` of the file, wherever they stand
  (without both, in that order, the file has no tasks);
- a task heading is ``###``, ``[FREQUENCY]`` and a name at the start of a line,
  spaces optional (``###[DAILY]Name``); its yaml is the first ```` ```yaml ````
  block before the next heading, and ends at the first three backticks;
- a missing ``frequency`` is ``daily`` (the heading's frequency counts only for an
  empty one), a missing ``permission_tier`` is 0, ``enabled`` is true unless its
  value is false-like, conditions are the list items that are mappings (``- type:
  market_hours_only``).

A block CraftBot does not read, or reads but never runs, or fails on, is not a
task for hb either: it stays in place as text with a :class:`LineWarning` naming
the rule it breaks. hb reads a little more than CraftBot where that changes
nothing CraftBot sees: condition names written as plain strings
(``conditions: [weekdays_only]``) are conditions for hb (with a warning: CraftBot
ignores them). The document is kept as the text it was read from, cut into
verbatim text and task blocks; writing re-renders only the yaml of tasks that
changed, so prose, markers, comments and the blocks hb does not read come back
byte-identical.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, tzinfo
from typing import Any, TypeGuard

import yaml

from heartbeat.errors import NUL, FileFormatError, InvalidInput, nul_reason
from heartbeat.formats.timestamps import OUT_OF_RANGE, format_timestamp, in_range

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
MAX_ID_LENGTH = 255  # the ledger's recurrence ids
_INT_RANGE = range(-(2**31), 2**31)  # what the ledger's integer columns hold

DEFAULT_PRIORITY = 50
DEFAULT_TIER = 0  # CraftBot reads a task without permission_tier as tier 0 (silent)
CAUTIOUS_TIER = 3  # an unreadable tier is treated as high-risk, never as silent
DEFAULT_FREQUENCY = "daily"  # CraftBot's reading of a block without a frequency key

# CraftBot's parser, as patterns: a task heading, and the yaml block that belongs to it.
_TASK_HEADING = re.compile(r"^###\s*\[(\w+)\]\s*(.+)$", re.MULTILINE)
_YAML_BLOCK = re.compile(r"```yaml\s*\n(.*?)```", re.DOTALL)
_RUNTIME_FRONT_MATTER = re.compile(r"---\s*\n(.*?)\n---", re.DOTALL)

_ANY_HEADING = re.compile(r"^#{1,6}[ \t].*$", re.MULTILINE)
_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})", re.MULTILINE)
_FENCE_AFTER = re.compile(r"\s*(`{3,}|~{3,})")  # blank lines, then a fence
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_SNAKE_ID = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
_CLOCK_LIKE = re.compile(r"[0-9]+(?::[0-9]+)+")
_ID_LINE = re.compile(r"^[ \t]*id[ \t]*:[ \t]*[\"']?([^\"'#\r\n]*?)[\"']?[ \t]*(?:#.*)?$", re.MULTILINE)
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
    task_id: str | None = None  # the id of a block that is not a task, when it names one


@dataclass(frozen=True)
class ProactiveTask:
    """One task of the task section: typed attributes plus every yaml key as written.

    ``fields`` holds all keys of the yaml block in their order (unknown ones
    too); the typed attributes are read from it as CraftBot reads them. To
    change a task, change the typed attribute (``dataclasses.replace``) or a key
    of ``fields``; a typed attribute that differs from the one read wins when
    the block is written. A task built in code has ``line`` 0 and ``raw`` "".
    """

    id: str
    name: str
    frequency: str  # one of FREQUENCIES
    time: str | None = None  # "HH:MM", 24h
    day: str | None = None  # weekly: monday..sunday; monthly: "1".."31"
    enabled: bool = True
    priority: int = DEFAULT_PRIORITY  # lower runs first
    permission_tier: int = DEFAULT_TIER  # 0 silent, 1 notify, 2 approval, 3 high-risk
    conditions: tuple[str, ...] = ()  # names: a mapping's ``type``, or a plain string
    instruction: str = ""
    run_count: int = 0
    outcome_history: tuple[dict[str, Any], ...] = ()
    last_run: datetime | None = None  # as written: naive (CraftBot's local time) or with an offset
    fields: dict[str, Any] = field(default_factory=dict)
    line: int = 0  # the heading's line, 1-based
    raw: str = ""  # heading through closing fence, exactly as in the file
    heading_end: int = 0  # in ``raw``: where the heading (what CraftBot's pattern matched) ends
    yaml_span: tuple[int, int] = (0, 0)  # in ``raw``: the yaml text CraftBot reads


Part = str | ProactiveTask


@dataclass(frozen=True)
class ProactiveDocument:
    """A PROACTIVE.md file as parts whose concatenation is the file, byte for byte."""

    front_matter: str  # from the opening --- through the closing ---, or "" (also when unreadable)
    meta: dict[str, Any]  # the front matter as read
    parts: tuple[Part, ...]  # verbatim text and task blocks, in file order
    line_warnings: tuple[LineWarning, ...] = ()
    has_section: bool = False  # a start marker CraftBot finds
    end_part: int | None = None  # index of the part the end marker starts: new tasks go before it

    @property
    def tasks(self) -> list[ProactiveTask]:
        """The readable tasks of the task section, in file order."""
        return [part for part in self.parts if isinstance(part, ProactiveTask)]

    @property
    def warnings(self) -> list[LineWarning]:
        """Lines kept verbatim that hb could not use, in file order."""
        return list(self.line_warnings)


# --- reading ---


def refuse_nul(doc: ProactiveDocument) -> None:
    """FileFormatError at the line of the first task whose name, id or instruction (texts the
    ledger stores) holds a NUL character: CraftBot reads and runs such a task, but the ledger
    does not store the character (see :func:`heartbeat.errors.nul_reason`). A NUL written as
    such in a yaml block makes it no YAML (a block kept as written); a YAML escape (``\\0``)
    reads as one."""
    for task in doc.tasks:
        if NUL in task.name:
            raise FileFormatError(nul_reason("the task's name", task.name), line=task.line)
        for key in ("id", "instruction"):
            value = task.fields.get(key)
            if isinstance(value, str) and NUL in value:
                start, end = task.yaml_span
                yaml_text = task.raw[start:end]
                line = task.line + task.raw.count("\n", 0, start)  # the yaml block's first line
                found = re.search(rf"^{key}[ \t]*:", yaml_text, re.MULTILINE)
                if found is not None:
                    line += yaml_text.count("\n", 0, found.start())
                raise FileFormatError(nul_reason(f"the task's {key}", value), line=line)


def parse(text: str) -> ProactiveDocument:
    """Read PROACTIVE.md as CraftBot does; ``render`` of the result gives ``text`` back unchanged.

    Never raises for the file's content: every problem is a warning, and the
    lines it concerns stay in place as text.
    """
    return _Reader(text).document()


class _RuntimeText:
    """The text as CraftBot's parser sees it (``read_text`` turns CRLF and CR into LF), with the
    way back to offsets and line numbers in the original."""

    def __init__(self, text: str) -> None:
        self.original = text
        self.text = text.replace("\r\n", "\n").replace("\r", "\n")
        self._collapsed: list[int] = []  # offsets in ``text`` where a CRLF became one LF
        for shift, match in enumerate(re.finditer("\r\n", text)):
            self._collapsed.append(match.start() - shift)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(self, offset: int) -> int:
        """The original offset of ``offset`` in the runtime's text."""
        return offset + bisect.bisect_left(self._collapsed, offset)

    def line_of(self, offset: int) -> int:
        """The 1-based line (split at LF, as hb numbers them) of a runtime offset."""
        return bisect.bisect_right(self._line_starts, self.at(offset))

    def line_text(self, offset: int) -> str:
        start = self._line_starts[self.line_of(offset) - 1]
        end = self.original.find("\n", start)
        return self.original[start : len(self.original) if end < 0 else end].rstrip("\r")


@dataclass(frozen=True)
class _Block:
    """A task block CraftBot's pattern found (offsets in the runtime's text)."""

    start: int  # the heading
    heading_end: int
    yaml_start: int
    yaml_end: int
    end: int  # after the closing backticks (and the rest of their line, when blank)


class _Reader:
    def __init__(self, text: str) -> None:
        self.view = _RuntimeText(text)
        self.warnings: list[LineWarning] = []
        comments = [(m.start(), m.end()) for m in _COMMENT.finditer(self.view.text)]
        self._comment_starts = [start for start, _ in comments]
        self._comment_ends = [end for _, end in comments]

    def document(self) -> ProactiveDocument:
        view = self.view
        runtime = view.text
        front_end, meta = self._front_matter()
        start, end = runtime.find(START_MARKER), runtime.find(END_MARKER)
        if (start != -1 and view.at(start) < front_end) or (end != -1 and view.at(end) < front_end):
            front_end, meta = 0, {}  # a marker inside it: hb does not treat it as front matter
        blocks: list[tuple[_Block, ProactiveTask]] = []
        has_section = start != -1
        if start == -1:
            if end != -1:
                self._warn(end, "end marker without a start marker: CraftBot reads no task from this file")
            self._stray_tasks(0, len(runtime) if end == -1 else end)
        elif end == -1:
            self._warn(start, "task section has no end marker: CraftBot reads no task from this file")
            self._stray_tasks(0, start)
        elif end < start:
            self._warn(end, "end marker before the start marker: CraftBot reads no task from this file")
            self._stray_tasks(0, end)
        else:
            self._stray_tasks(0, start)
            blocks = self._section(start + len(START_MARKER), end)
            self._stray_tasks(end + len(END_MARKER), len(runtime))
        parts: list[Part] = []
        cursor = front_end
        end_at = self._end_split(end) if has_section and end > start else None
        end_part: int | None = None
        for block, task in blocks:
            self._verbatim(parts, cursor, view.at(block.start))
            parts.append(task)
            cursor = view.at(block.end)
        if end_at is not None:
            self._verbatim(parts, cursor, end_at)
            cursor = end_at
            end_part = len(parts)
        self._verbatim(parts, cursor, len(view.original))
        return ProactiveDocument(
            front_matter=view.original[:front_end],
            meta=meta,
            parts=tuple(parts),
            line_warnings=tuple(sorted(self.warnings, key=lambda w: w.line)),
            has_section=has_section,
            end_part=end_part,
        )

    def _verbatim(self, parts: list[Part], lo: int, hi: int) -> None:
        if hi > lo:
            parts.append(self.view.original[lo:hi])

    def _end_split(self, end: int) -> int:
        """Where new tasks go: the start of the end marker's line when only blanks precede it there."""
        runtime = self.view.text
        line_start = runtime.rfind("\n", 0, end) + 1
        at = line_start if not runtime[line_start:end].strip() else end
        return self.view.at(at)

    # -- the front matter: hb's (last_updated) and what CraftBot's parser makes of it

    def _front_matter(self) -> tuple[int, dict[str, Any]]:
        """How far hb's front matter runs (0: none, or unreadable) and its mapping."""
        runtime_failed = self._runtime_front_matter()
        original = self.view.original
        lines = original.split("\n")
        if not lines or lines[0].rstrip("\r").removeprefix("\ufeff").rstrip() != "---":
            return 0, {}
        close = next(
            (i for i in range(1, len(lines)) if lines[i].rstrip("\r").rstrip() in ("---", "...")), None
        )
        if close is None:
            self._warn_line(1, lines[0], "front matter opened with --- is never closed: kept as written")
            return 0, {}
        try:
            meta = _load_yaml("\n".join(lines[1:close]))
        except (_YamlTooBig, _YamlProblem) as problem:  # too big: an alias bomb, self-reference, deep
            what = "past what hb reads" if isinstance(problem, _YamlTooBig) else "is not valid YAML"
            line = 2 + problem.line
            self._warn_line(
                line,
                lines[min(line, len(lines)) - 1],
                f"front matter {what} ({problem.reason}): kept as written, the tasks are read",
            )
            return 0, {}
        except _LoaderFailure as failure:
            if not runtime_failed:
                self._warn_line(
                    2, lines[1], f"front matter is not readable ({failure.reason_at(2)}): kept as written"
                )
            return 0, {}
        end = sum(len(line) + 1 for line in lines[: close + 1])
        if close == len(lines) - 1:
            end = len(original)  # no line break after the closing ---
        if meta is None:
            return end, {}
        if not isinstance(meta, dict):
            if not runtime_failed:
                self._warn_line(
                    2, lines[min(2, len(lines)) - 1], "front matter is not a mapping: kept as written"
                )
            return 0, {}
        return end, meta

    def _runtime_front_matter(self) -> bool:
        """Warn when CraftBot's parser fails on the front matter it finds; True then."""
        match = _RUNTIME_FRONT_MATTER.match(self.view.text)
        if match is None:
            return False
        try:
            meta = _load_yaml(match.group(1))
        except _YamlTooBig:
            return False  # said where hb reads its front matter (CraftBot's PyYAML may build it)
        except _YamlProblem:
            return False  # CraftBot reads such a front matter as empty
        except _LoaderFailure as failure:  # an impossible date: outside PyYAML's own errors
            problem = f"front matter holds a value YAML cannot build ({failure.reason_at(2)})"
        else:
            if not meta or isinstance(meta, dict):
                return False
            problem = "front matter is not a mapping"
        self._warn(0, f"{problem}: CraftBot's parser fails on this file (no task runs)")
        return True

    # -- the task section

    def _section(self, lo: int, hi: int) -> list[tuple[_Block, ProactiveTask]]:
        runtime = self.view.text
        section = runtime[lo:hi]
        headings = list(_TASK_HEADING.finditer(section))
        found: list[tuple[_Block, ProactiveTask]] = []
        seen: dict[str, tuple[int, bool]] = {}  # an id -> the line of its first block, and if hb read it
        read_blocks: set[int] = set()
        unread: list[tuple[int, int]] = []  # spans of headings whose block CraftBot does not find
        for i, heading in enumerate(headings):
            stop = headings[i + 1].start() if i + 1 < len(headings) else len(section)
            body = section[heading.end() : stop]
            block_match = _YAML_BLOCK.search(body)
            at = lo + heading.start()
            if block_match is None:
                following = lo + stop if i + 1 < len(headings) else None
                self._warn(at, f"not a task: {self._why_no_block(heading, body, following)}")
                unread.append((at, lo + stop))
                continue
            if "\n" in section[heading.start() : heading.start(2)]:
                self._warn(at, "the heading has no name on its line: CraftBot takes the next line for it")
            base = lo + heading.end()
            read_blocks.add(base + block_match.start())
            end = base + block_match.end()
            rest = re.match(r"[ \t]*(?:\n|\Z)", runtime[end:hi])
            block = _Block(
                start=at,
                heading_end=base,
                yaml_start=base + block_match.start(1),
                yaml_end=base + block_match.end(1),
                end=end + (rest.end() if rest is not None else 0),
            )
            task = self._task(block, block_match.group(1), heading, seen)
            if task is not None:
                seen[task.id] = (task.line, True)
                found.append((block, task))
        self._unread_blocks(lo, section, read_blocks, headings, unread)
        return found

    def _task(
        self, block: _Block, yaml_text: str, heading: re.Match[str], seen: dict[str, tuple[int, bool]]
    ) -> ProactiveTask | None:
        at = block.start
        try:
            data = _load_yaml(yaml_text)
        except _YamlTooBig as big:  # this block only: the file's other tasks are read
            line = self.view.line_of(block.yaml_start) + big.line
            self._reject(at, yaml_text, f"yaml block past what hb reads (line {line}): {big.reason}")
            return None
        except _YamlProblem as problem:
            line = self.view.line_of(block.yaml_start) + problem.line
            self._reject(
                at,
                yaml_text,
                f"yaml block is not valid YAML (line {line}): {problem.reason}; "
                "CraftBot skips it and drops it on its next save",
            )
            return None
        except _LoaderFailure as failure:
            reason = failure.reason_at(self.view.line_of(block.yaml_start))
            self._reject(at, yaml_text, f"{reason}: CraftBot's parser fails on it (no task runs)")
            return None
        if not data:
            self._reject(at, yaml_text, "yaml block is empty: CraftBot skips it")
            return None
        if not isinstance(data, dict):
            self._reject(
                at, yaml_text, "yaml block is not a mapping: CraftBot's parser fails on it (no task runs)"
            )
            return None
        stops = _parser_failure(data)
        if stops is not None:
            self._reject(at, yaml_text, f"{stops}: CraftBot's parser fails on it (no task runs)")
            return None
        issues: list[str] = []
        task_id = data.get("id")
        if task_id is None or task_id == "":
            self._reject(at, yaml_text, "no id: hb cannot track it (CraftBot runs it with an empty id)")
            return None
        if not isinstance(task_id, str):
            self._reject(at, yaml_text, f"id {task_id!r} is not text: hb cannot track it")
            return None
        if len(task_id) > MAX_ID_LENGTH:
            self._reject(at, yaml_text, f"id is longer than {MAX_ID_LENGTH} characters: hb cannot track it")
            return None
        if task_id in seen:
            first, read = seen[task_id]
            hb_runs = "hb only the first" if read else "hb neither (the first is not read: see its warning)"
            self._reject(
                at,
                yaml_text,
                f"duplicate id {task_id!r} (first on line {first}): CraftBot runs both, {hb_runs}",
                task_id=task_id,
            )
            return None
        # the first block of an id is its task for CraftBot (get_task_by_id), read by hb or not
        seen[task_id] = (self.view.line_of(block.start), False)
        frequency, why_not = _read_frequency(data, heading.group(1), issues)
        if frequency is None:
            self._reject(at, yaml_text, why_not, task_id=task_id)
            return None
        time, why_not = _read_time(data.get("time"), frequency)
        if why_not:
            self._reject(at, yaml_text, why_not, task_id=task_id)
            return None
        day, why_not = _read_day(data.get("day"), frequency, issues)
        if why_not:
            self._reject(at, yaml_text, why_not, task_id=task_id)
            return None
        last_run, why_not = _read_last_run(data.get("last_run"), frequency, issues)
        if why_not:
            self._reject(at, yaml_text, why_not, task_id=task_id)
            return None
        far = _far_time(data)
        if far is not None:
            self._reject(at, yaml_text, f"{far}: hb cannot track it (CraftBot runs it)", task_id=task_id)
            return None
        if not _SNAKE_ID.fullmatch(task_id):
            issues.append(f"id {task_id!r} is not snake_case")
        if self._in_comment(at):
            issues.append("this task is inside an HTML comment: CraftBot reads and runs it all the same")
        view = self.view
        raw_start = view.at(block.start)
        task = ProactiveTask(
            id=task_id,
            name=heading.group(2).strip(),
            frequency=frequency,
            time=time,
            day=day,
            enabled=_read_enabled(data.get("enabled", True), issues),
            priority=_read_priority(data.get("priority"), issues),
            permission_tier=_read_tier(data.get("permission_tier"), issues),
            conditions=_read_conditions(data.get("conditions"), issues),
            instruction=_read_instruction(data.get("instruction"), issues),
            run_count=_read_run_count(data.get("run_count"), "run_count" in data, issues),
            outcome_history=_read_history(data.get("outcome_history"), issues),
            last_run=last_run,
            fields=dict(data),
            line=view.line_of(block.start),
            raw=view.original[raw_start : view.at(block.end)],
            heading_end=view.at(block.heading_end) - raw_start,
            yaml_span=(view.at(block.yaml_start) - raw_start, view.at(block.yaml_end) - raw_start),
        )
        for reason in issues:
            self._warn(at, reason)
        return task

    def _unread_blocks(
        self,
        lo: int,
        section: str,
        read: set[int],
        headings: Sequence[re.Match[str]],
        warned_spans: Sequence[tuple[int, int]],
    ) -> None:
        """Blocks in the section no task heading reads (and no warning named yet): CraftBot does
        not see them."""
        starts = {lo + h.start() for h in headings}
        warned: set[int] = set()
        for heading in _ANY_HEADING.finditer(section):
            at = lo + heading.start()
            if at in starts or self._in_comment(at):
                continue
            fence = _FENCE_AFTER.match(section, heading.end())
            if fence is not None:
                self._warn(
                    at,
                    "heading is not '### [FREQUENCY] Name' as CraftBot reads it: the block under "
                    "it is no task of its own",
                )
                warned.add(lo + fence.start(1))
        for match in _YAML_BLOCK.finditer(section):
            at = lo + match.start()
            line_start = self.view.text.rfind("\n", 0, at) + 1
            if at in read or line_start in warned or at in warned or self._in_comment(at):
                continue
            if any(start <= at < stop for start, stop in warned_spans):
                continue
            self._warn(at, "this ```yaml block follows no task heading CraftBot reads: not a task")

    def _stray_tasks(self, lo: int, hi: int) -> None:
        """Task headings with a block outside the task section: neither CraftBot nor hb reads them."""
        region = self.view.text[lo:hi]
        for heading in _TASK_HEADING.finditer(region):
            at = lo + heading.start()
            if self._in_comment(at):
                continue
            following = _TASK_HEADING.search(region, heading.end())
            stop = following.start() if following is not None else len(region)
            if _YAML_BLOCK.search(region[heading.end() : stop]) is not None:
                self._warn(
                    at,
                    "task outside the PROACTIVE_TASKS markers is not read (CraftBot reads only between them)",
                )

    def _why_no_block(self, heading: re.Match[str], body: str, following: int | None) -> str:
        if "\n" in heading.string[heading.start() : heading.start(2)]:
            return (
                f"the heading has no name on its line: CraftBot takes the next line "
                f"({heading.group(2).strip()!r}) for it and looks for the ```yaml block after that"
            )
        if "```yaml" in body:
            if following is not None:
                return (
                    "its ```yaml block is not closed before the next task heading (line "
                    f"{self.view.line_of(following)}; a '### [...]' line inside a block starts a heading "
                    "for CraftBot)"
                )
            return "its ```yaml block is never closed with ```"
        if _FENCE_LINE.search(body) is not None:
            return "CraftBot reads only a block opened with ```yaml after a task heading"
        return "no ```yaml block follows this task heading"

    def _in_comment(self, offset: int) -> bool:
        i = bisect.bisect_right(self._comment_starts, offset) - 1  # comments do not overlap
        return i >= 0 and offset < self._comment_ends[i]

    def _reject(self, at: int, yaml_text: str, reason: str, *, task_id: str | None = None) -> None:
        if task_id is None:
            match = _ID_LINE.search(yaml_text)
            task_id = match.group(1) if match is not None and match.group(1) else None
        self._warn(at, f"not a task, kept as written: {reason}", task_id=task_id)

    def _warn(self, offset: int, reason: str, *, task_id: str | None = None) -> None:
        view = self.view
        self.warnings.append(LineWarning(view.line_of(offset), view.line_text(offset), reason, task_id))

    def _warn_line(self, line: int, text: str, reason: str) -> None:
        self.warnings.append(LineWarning(line, text.rstrip("\r"), reason))


class _YamlProblem(Exception):
    def __init__(self, reason: str, line: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line  # 0-based within the yaml text


class _LoaderFailure(Exception):
    """PyYAML failed outside its own error type (an impossible date, an integer too long for
    Python to read): CraftBot's parser stops. ``line`` is 0-based within the yaml text, where
    the failure has a place."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line

    def reason_at(self, first: int) -> str:
        """The reason with the file line of its place, the yaml text starting at line ``first``."""
        return self.reason if self.line is None else f"{self.reason} (line {first + self.line})"


class _YamlTooBig(Exception):
    """A yaml text past the loading bounds (an alias bomb, nesting too deep): a task's block or
    the front matter is kept as written and not read, with a warning."""

    def __init__(self, reason: str, line: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line  # 0-based within the yaml text


def _load_yaml(text: str) -> Any:
    from heartbeat.formats import yaml_safe

    try:
        yaml_safe.check(text, surrogates=True)
    except yaml_safe.YamlLimitError as exc:
        raise _YamlTooBig(exc.reason, exc.line) from None
    except yaml.YAMLError:
        pass  # safe_load says what is wrong, as before
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        from heartbeat.formats.yaml_errors import describe

        reason, line, _ = describe(exc)
        raise _YamlProblem(reason, line) from None
    except yaml.YAMLError as exc:
        raise _YamlProblem(" ".join(str(exc).split()), 0) from None
    except (ValueError, OverflowError) as exc:
        from heartbeat.formats.yaml_errors import constructor_failure

        raise _LoaderFailure(*constructor_failure(text, exc)) from None


def _iso_time(value: str) -> datetime | None:
    """``value`` as CraftBot reads a time stamp, or None: ``datetime.fromisoformat`` after
    ``Z`` -> ``+00:00``, on the Python CraftBot runs (3.10: its environment.yml and Dockerfile),
    whose reader takes far fewer forms than 3.11's (:func:`_py310_iso`)."""
    text = value.replace("Z", "+00:00")
    if not _py310_iso(text):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _py310_iso(text: str) -> bool:
    """Whether Python 3.10's ``datetime.fromisoformat`` gets past the form of ``text`` (the
    calendar is checked after): ``YYYY-MM-DD``, then after any one separator ``HH[:MM[:SS
    [.fff|.ffffff]]]``, then ``+HH:MM``, ``+HH:MM:SS`` or ``+HH:MM:SS.ffffff`` (or ``-``).
    Python 3.11 also reads a fraction of other lengths (``.5``), a compact time or offset
    (``0900``, ``+0800``, ``+08``), a comma for the point and week dates; 3.10 refuses them
    all, and CraftBot's parser with them. One stray character before the offset (or at the
    end) is let through, as 3.10 lets it. Held to Python 3.10's answers on 600,000 generated
    stamps; tests/formats/test_proactive.py states the forms."""
    if not _ISO_DATE.match(text):
        return False
    if len(text) == 10:
        return True
    sign = next((i for i in range(11, len(text)) if text[i] in "+-"), len(text))
    if _py310_clock(text, 11, sign) < 0:
        return False
    if sign == len(text):
        return True
    return len(text) - sign in (6, 9, 16) and _py310_clock(text, sign + 1, len(text)) == 0


_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _py310_clock(text: str, start: int, end: int) -> int:
    """Python 3.10's reading of ``HH[:MM[:SS[.fff[fff]]]]`` in ``text[start:end]``: negative when
    it refuses, 0 when the part ends where it should, 1 when one character is left over."""
    at = start
    for _field in range(3):
        if not text[at : at + 2].isascii() or not text[at : at + 2].isdigit() or at + 2 > min(end, len(text)):
            return -1
        at += 2
        mark = text[at] if at < len(text) else ""
        at += 1
        if at >= end:
            return 1 if mark else 0
        if mark == ":":
            continue
        if mark != ".":
            return -1
        break
    rest = end - at
    digits = text[at:end]
    if rest not in (3, 6) or not digits.isascii() or not digits.isdigit():
        return -1
    return 1 if end < len(text) else 0


def _iterable(value: Any) -> bool:
    return isinstance(value, str | bytes | list | dict | set)


def _parser_failure(data: Mapping[str, Any]) -> str | None:
    """What in a yaml mapping stops CraftBot's parser (for the whole file), or None."""
    for key in ("last_run", "next_run"):
        value = data.get(key)
        if isinstance(value, str) and _iso_time(value) is None:
            return f"{key} {value!r} is not an ISO 8601 time"
    for key in ("conditions", "outcome_history"):
        if key in data and not _iterable(data[key]):
            return f"{key} {data[key]!r} is not a list"
    history = data.get("outcome_history", [])
    for entry in history if isinstance(history, list) else ():
        stamp = entry.get("timestamp") if isinstance(entry, dict) else None
        if isinstance(stamp, str) and _iso_time(stamp) is None:
            return f"outcome_history timestamp {stamp!r} is not an ISO 8601 time"
    return None


def _read_frequency(data: Mapping[str, Any], heading: str, issues: list[str]) -> tuple[str | None, str]:
    """The frequency CraftBot reads, or None and why the task never runs there."""
    from_heading = heading.lower()
    if "frequency" not in data:
        if from_heading != DEFAULT_FREQUENCY:
            issues.append(f"no frequency: CraftBot reads it as daily, whatever the heading [{heading}] says")
        return DEFAULT_FREQUENCY, ""
    value = data["frequency"]
    frequency = value if value else from_heading
    if frequency not in FREQUENCIES:
        return None, (
            f"frequency {frequency!r} is not hourly, daily, weekly or monthly as CraftBot writes them: "
            "it never runs the task and drops it on its next save"
        )
    if value and from_heading != frequency:
        issues.append(f"heading says [{heading}] but frequency is {frequency}: CraftBot uses {frequency}")
    return frequency, ""


def _read_time(value: Any, frequency: str) -> tuple[str | None, str]:
    """``HH:MM`` as CraftBot's heartbeat reads it, or why the task cannot run there.

    CraftBot splits the text at ``:`` into an hour and a minute; anything else
    (an unquoted ``9:30``, which YAML reads as a number; ``08:00:00``; ``25:00``)
    stops its heartbeat. An hourly task's time is never read.
    """
    if not value:
        return None, ""
    parts = value.split(":") if isinstance(value, str) else []
    clock: tuple[int, int] | None = None
    if len(parts) == 2:
        try:
            clock = int(parts[0]), int(parts[1])
        except ValueError:
            clock = None
    if clock is not None and 0 <= clock[0] <= 23 and 0 <= clock[1] <= 59:
        return f"{clock[0]:02d}:{clock[1]:02d}", ""
    if frequency == "hourly":
        return None, ""
    hint = (
        ' (YAML reads an unquoted H:MM as a number: write "9:30" in quotes)' if isinstance(value, int) else ""
    )
    return None, f"time {value!r} is not HH:MM: CraftBot's heartbeat fails on it{hint}"


def _read_day(value: Any, frequency: str, issues: list[str]) -> tuple[str | None, str]:
    """The day CraftBot's heartbeat checks, or why the task cannot run there.

    weekly: a weekday name in any case; anything else never matches (not text:
    the heartbeat fails). monthly: a whole number; text that is not one is not
    checked at all (any day), a number outside 1..31 never matches. Daily and
    hourly tasks have no day.
    """
    if frequency not in ("weekly", "monthly") or not value:
        return None, ""
    if frequency == "weekly":
        if not isinstance(value, str):
            return None, f"day {value!r} is not a weekday name: CraftBot's heartbeat fails on it"
        if value.lower() not in WEEKDAYS:
            return None, f"day {value!r} is not a weekday (monday..sunday): CraftBot never runs this task"
        return value.lower(), ""
    try:
        number = int(value)
    except ValueError:
        issues.append(
            f"day {value!r} is not a number: CraftBot ignores it, any day of the month runs the task"
        )
        return None, ""
    except (TypeError, OverflowError):
        return None, f"day {value!r} is not a day of the month: CraftBot's heartbeat fails on it"
    if not 1 <= number <= 31:
        return None, f"day {value!r} is not a day of the month (1..31): CraftBot never runs this task"
    return str(number), ""


def _read_last_run(value: Any, frequency: str, issues: list[str]) -> tuple[datetime | None, str]:
    """When the task last ran, as CraftBot's manager reads it for due-ness."""
    if not value:
        return None, ""
    if isinstance(value, str):
        return _iso_time(value), ""  # unreadable text stopped the parser already
    if isinstance(value, datetime):
        return value, ""
    if frequency == "hourly":  # CraftBot never looks at an hourly task's last run, but its save does
        if not isinstance(value, date):
            issues.append(
                f"last_run {value!r} is not a date and time: CraftBot runs the task, but its save "
                "fails on it (no outcome of any task is written until this one runs)"
            )
        return None, ""
    if isinstance(value, date) and frequency != "daily":
        return datetime.combine(value, datetime.min.time()), ""
    return None, f"last_run {value!r} is not a date and time: CraftBot's heartbeat fails on it"


def _far_time(data: Mapping[str, Any]) -> str | None:
    """A time of the block outside the dates hb reads (a date near year 1 or 9999), as what is
    wrong with it; None when there is none. Such a time is no timestamp to hb: converting it
    between zones or writing it would overflow. The block stays as written, not read, like a
    block hb cannot track. Looked at: ``last_run`` (text, a date-time or a date) and every
    date-time YAML reads in the block (``next_run``, ``outcome_history`` times, any key)."""
    last_run = data.get("last_run")
    if isinstance(last_run, str):
        stamp = _iso_time(last_run)
        if stamp is not None and not in_range(stamp):
            return f"last_run {last_run!r} {OUT_OF_RANGE}"
    elif isinstance(last_run, date) and not isinstance(last_run, datetime):
        midnight = datetime.combine(last_run, datetime.min.time())  # as _read_last_run reads it
        if not in_range(midnight):
            return f"last_run {last_run.isoformat()} {OUT_OF_RANGE}"
    for where, value in _date_times(data, ""):
        if not in_range(value):
            return f"{where} {value.isoformat()} {OUT_OF_RANGE}"
    return None


def _date_times(value: Any, where: str) -> Iterator[tuple[str, datetime]]:
    """Every date-time in a YAML value, with where it stands (``outcome_history[0].timestamp``)."""
    if isinstance(value, datetime):
        yield where, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _date_times(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _date_times(item, f"{where}[{index}]")


def _read_enabled(value: Any, issues: list[str]) -> bool:
    if not isinstance(value, bool):
        verdict = "runs" if value else "does not run"
        issues.append(
            f"enabled {value!r} is not true/false: CraftBot {verdict} the task (it takes any value but "
            "an empty or false one as true), and so does hb"
        )
    return bool(value)


def _read_priority(value: Any, issues: list[str]) -> int:
    if value is None:
        return DEFAULT_PRIORITY
    if isinstance(value, int) and not isinstance(value, bool):
        if value in _INT_RANGE:
            return value
        issues.append(f"priority {value} is too large for hb: using {DEFAULT_PRIORITY}")
        return DEFAULT_PRIORITY
    if isinstance(value, int | float):  # a bool, a fraction: CraftBot sorts it as the number it is
        issues.append(f"priority {value!r} is not a whole number: using {DEFAULT_PRIORITY}")
    else:
        issues.append(
            f"priority {value!r} is not a whole number: using {DEFAULT_PRIORITY} (CraftBot's heartbeat "
            "fails when it sorts it against another due task)"
        )
    return DEFAULT_PRIORITY


def _read_run_count(value: Any, present: bool, issues: list[str]) -> int:
    """A block's ``run_count`` as hb counts it. CraftBot's manager adds one to whatever YAML gave
    (its record of a run fails on anything but a number, and it writes the sum back as it is)."""
    if _is_held(value) or (value is None and not present):
        return value or 0
    if isinstance(value, bool):  # CraftBot counts on from it as the number Python makes it: 1 or 0
        word = "true" if value else "false"
        issues.append(f"run_count {word} is not a number: counted as {int(value)}, as CraftBot does")
        return int(value)
    if _counts_on(value):
        issues.append(
            f"run_count {value!r} is not a whole number >= 0 hb can hold: counted as 0 in the ledger "
            "(a run adds one to the file's own, as CraftBot's does)"
        )
    else:
        shown = "null" if value is None else repr(value)
        issues.append(
            f"run_count {shown} is not a number: CraftBot's record of a run fails on it (it adds one); "
            "hb counts from 0 and writes its count at the next run"
        )
    return 0


def _counts_on(value: Any) -> TypeGuard[int | float]:
    """Whether a run adds one to ``value`` in the file, as CraftBot's ``run_count += 1`` does: a
    number (a whole one of any size, a negative one, a fraction), not a bool or a text."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# run counts the ledger holds: its integer column, with room left to count on (2**30 more runs)
_HELD_RUNS = range(2**30)


def _is_held(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value in _HELD_RUNS


def held_run_count(value: Any) -> int:
    """A block's ``run_count`` as the ledger holds it: a whole number in :data:`_HELD_RUNS`, a bool
    as the 1 or 0 CraftBot counts on from, else 0 (the count in the file is kept, and a run adds
    one to it there)."""
    if isinstance(value, bool):
        return int(value)
    return value if _is_held(value) else 0


def counted_in_file(task: ProactiveTask) -> int | float:
    """The run count a run adds one to in the file: the block's own number, however large,
    negative or fractional (CraftBot's manager counts on from it: -1 becomes 0, 2.5 becomes 3.5),
    else the count hb read (a bool as its 1 or 0)."""
    value = task.fields.get("run_count")
    if _counts_on(value):
        return value
    if isinstance(value, bool):
        return int(value)
    return task.run_count


def _read_tier(value: Any, issues: list[str]) -> int:
    if value is None:
        return DEFAULT_TIER
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3:
        return value
    issues.append(f"permission_tier {value!r} is not 0-3: treated as {CAUTIOUS_TIER} (high-risk)")
    return CAUTIOUS_TIER


def _read_conditions(value: Any, issues: list[str]) -> tuple[str, ...]:
    """Condition names: a mapping's ``type`` (CraftBot's form; ``unknown`` without one), and
    plain strings, which CraftBot ignores (its next save drops them)."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else None
    if items is None:
        issues.append(f"conditions {value!r} is not a list: ignored")
        return ()
    names: list[str] = []
    plain: list[str] = []
    for item in items:
        if isinstance(item, dict):
            names.append(str(item.get("type", "unknown")))
        elif isinstance(item, str):
            names.append(item)
            plain.append(item)
        else:
            issues.append(f"condition {item!r} is neither a name nor a mapping: ignored")
    if plain:
        issues.append(
            f"condition {', '.join(plain)} written as a plain name: hb judges it, CraftBot ignores it and "
            f"drops it on its next save (write '- type: {plain[0]}')"
        )
    return tuple(names)


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
        issues.append("outcome_history entries that are not mappings are ignored (by CraftBot too)")
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
    written: dict[str, dict[str, Any]] = {}  # the fields each task's block now holds
    changed = False
    drop_blank = False
    for index, part in enumerate(doc.parts):
        if index == doc.end_part:
            parts.extend(_new_blocks(wanted, current, "".join(parts), written))
        if isinstance(part, str):
            parts.append(_drop_blank_line(part) if drop_blank else part)
            drop_blank = False
            continue
        task = wanted.get(part.id)
        drop_blank = task is None
        if task is None:
            changed = True
            continue
        text, written[task.id] = _block_text(task, part)
        changed = changed or text != part.raw
        parts.append(text)
    if doc.end_part is None:
        parts.extend(_closing_section(wanted, current, doc.has_section, "".join(parts), written))
    changed = changed or any(task_id not in current for task_id in wanted)
    if not changed:
        return doc
    return _read_back(_stamp_last_updated(doc.front_matter, now) + "".join(parts), written)


def _read_back(text: str, written: Mapping[str, Mapping[str, Any]]) -> ProactiveDocument:
    """``text`` parsed, once it is sure CraftBot's parser reads exactly the tasks written, each
    with the fields hb wrote (never a block it skips or a section it cuts short)."""
    doc = parse(text)
    got = {task.id: task for task in doc.tasks}
    for task_id, fields in written.items():
        task = got.get(task_id)
        if task is None or (task.fields != fields and _dump(task.fields, "\n") != _dump(fields, "\n")):
            raise InvalidInput(
                f"task {task_id!r} cannot be written so that CraftBot reads it back as written "
                "(check the PROACTIVE_TASKS markers): the file is left as it was"
            )
    for task_id in got.keys() - written.keys():
        raise InvalidInput(
            f"writing PROACTIVE.md would make CraftBot read {task_id!r} as a task: left as it was"
        )
    return doc


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
    wanted: Mapping[str, ProactiveTask],
    current: Mapping[str, ProactiveTask],
    before: str,
    written: dict[str, dict[str, Any]],
) -> Iterator[str]:
    newline = _newline_of(before)
    first = True
    for task_id, task in wanted.items():
        if task_id not in current:
            if first and before and not before.endswith("\n"):
                yield newline  # a task heading starts a line
            first = False
            text, written[task_id] = _fresh_block(task, newline)
            yield text + newline


def _closing_section(
    wanted: Mapping[str, ProactiveTask],
    current: Mapping[str, ProactiveTask],
    has_section: bool,
    before: str,
    written: dict[str, dict[str, Any]],
) -> Iterator[str]:
    """New tasks at the end of the file, with the markers the file lacks."""
    blocks = list(_new_blocks(wanted, current, "\n", written))
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
    """The line ending ``text`` uses: CRLF, a lone CR (old Mac files; CraftBot reads them with
    universal newlines) or LF."""
    if "\r\n" in text:
        return "\r\n"
    return "\r" if "\r" in text and "\n" not in text else "\n"


def _drop_blank_line(text: str) -> str:
    """A removed block takes one following blank line with it, so gaps do not pile up."""
    for blank in ("\r\n", "\n"):
        if text.startswith(blank):
            return text[len(blank) :]
    return text


def _block_text(task: ProactiveTask, original: ProactiveTask) -> tuple[str, dict[str, Any]]:
    """The block's text and the fields it holds: the original when nothing changed, else the
    yaml CraftBot reads re-rendered in place (the heading only when the name changed)."""
    fields = _yaml_fields(task, original)
    if fields == original.fields and task.name == original.name:
        return original.raw, original.fields
    raw = original.raw
    lo, hi = original.yaml_span
    newline = _newline_of(raw)
    head = raw[:lo]
    if task.name != original.name:
        head = _heading(task) + raw[original.heading_end : lo]
    body = _split_lines(raw[lo:hi], "\r" if newline == "\r" else "\n")
    yaml_text = _edited_yaml(body, original.fields, fields, newline)
    if yaml_text is None:
        yaml_text = _edited_flow(body, original.fields, fields) or _dump(fields, newline)
    return head + yaml_text + raw[hi:], fields


_TOP_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]|$)")
_DOCUMENT_MARKERS = ("---", "...")  # a block's yaml may open and close its document explicitly


def _edited_yaml(
    body: list[str], before: Mapping[str, Any], after: Mapping[str, Any], newline: str
) -> str | None:
    """The block's yaml with only the keys that changed rewritten; every other line (comments,
    quoting, flow lists) kept as written. None when the layout is not one this can splice
    safely (the caller then writes the whole block)."""
    spans: dict[str, list[str]] = {}
    order: list[str | list[str]] = []  # a key, or lines that belong to no key (comments)
    current: list[str] | None = None
    blanks: list[str] = []  # blank lines after a value: its own if the value goes on after them
    for line in body:
        text = _body(line)
        match = _TOP_KEY.match(text)
        if current is not None and not text.strip():
            blanks.append(line)
            continue
        if current is not None and text[:1] in (" ", "\t", "-"):
            current.extend([*blanks, line])  # the key's value continues: indented or a list item
            blanks = []
            continue
        order.extend([blank] for blank in blanks)  # between keys or before the fence: no key's
        blanks = []
        if match is not None:
            key = match.group(1)
            if key in spans:
                return None  # a key written twice: let YAML's own reading decide
            current = spans[key] = [line]
            order.append(key)
        elif text.lstrip().startswith("#") or not text.strip() or text.rstrip() in _DOCUMENT_MARKERS:
            current = None  # a comment, a blank line, the document's "---" or "..." (YAML checks where)
            order.append([line])
        else:
            return None
    order.extend([blank] for blank in blanks)
    if set(spans) != set(before):
        return None  # keys yaml reads that are not at the start of a line (a flow mapping, ...)
    tail = len(order)  # new keys go before the blank lines and the "..." that end the block
    while tail > 0 and _ends_block(order[tail - 1]):
        tail -= 1
    out: list[str] = []
    for at, item in enumerate(order):
        if at == tail:
            out.extend(_dump({key: value}, newline) for key, value in after.items() if key not in spans)
        if isinstance(item, list):
            out.extend(item)
        elif item in after:
            if after[item] == before[item]:
                out.append("".join(spans[item]))
            else:
                out.append(_edited_value(item, spans[item], before[item], after[item], newline))
    if tail == len(order):
        out.extend(_dump({key: value}, newline) for key, value in after.items() if key not in spans)
    text = "".join(out)
    expected = yaml.safe_load(_dump(dict(after), "\n")) or {}
    try:
        got = yaml.safe_load(text.replace("\r\n", "\n")) or {}
    except yaml.YAMLError:
        return None
    return text if got == expected and list(got) == list(expected) else None


def _ends_block(item: str | list[str]) -> bool:
    """A blank line or the document's end marker ``...``: new keys are written before them."""
    return isinstance(item, list) and _body(item[0]).rstrip() in ("", "...")


def _edited_flow(body: list[str], before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    """A block written as one flow mapping on one line (``{id: tick, frequency: daily}  # by
    hand``) with ``after``'s fields: that line written again in flow style, its indent and
    trailing comment kept, and the comments and blank lines around it as they are. None for any
    other layout, or when the result would not read as ``after``."""
    mapping = [
        i for i, line in enumerate(body) if _body(line).strip() and not _body(line).lstrip().startswith("#")
    ]
    if len(mapping) != 1 or not _body(body[mapping[0]]).lstrip().startswith("{"):
        return None
    at = mapping[0]
    line = _body(body[at])
    comment = _TRAILING_COMMENT.search(line)
    tail = comment.group(0) if comment is not None and _loads(line[: comment.start()]) == before else ""
    try:
        flow = _yaml_dump(_trimmed(after), default_flow_style=True).rstrip("\n")
    except yaml.YAMLError:
        return None  # the whole block's writer says what cannot be written
    edited = line[: len(line) - len(line.lstrip())] + flow + tail + body[at][len(line) :]
    text = "".join([*body[:at], edited, *body[at + 1 :]])
    expected = yaml.safe_load(_dump(dict(after), "\n")) or {}
    return text if _loads(text.replace("\r\n", "\n")) == expected else None


_TRAILING_COMMENT = re.compile(r"[ \t]+#.*$")
_ITEM = re.compile(r"([ \t]*)- ")


def overlap(old: Sequence[Any], new: Sequence[Any]) -> int:
    """The length of the longest end of ``old`` that ``new`` starts with (a list that lost
    items at its start and grew at its end keeps that many), compared with ``==`` only: the
    prefix function of Knuth, Morris and Pratt, in time linear in both lengths (trying each
    start of ``old`` in turn compared a list of thousands of equal outcomes in quadratic time)."""
    if not new:
        return 0
    fallback = [0] * len(new)  # fallback[i]: the longest proper prefix of new[: i + 1] that ends it
    length = 0
    for i in range(1, len(new)):
        while length and new[i] != new[length]:
            length = fallback[length - 1]
        if new[i] == new[length]:
            length += 1
        fallback[i] = length
    matched = 0
    for item in old:
        while matched and (matched == len(new) or item != new[matched]):
            matched = fallback[matched - 1]
        if item == new[matched]:
            matched += 1
    return matched


def _edited_value(key: str, lines: list[str], old: Any, new: Any, newline: str) -> str:
    """One changed key's yaml, keeping what can be kept: the trailing comment of its first line
    (the runtime's ``run_count: 3  # maintained by the runtime``), and of a list that only grew
    at the end and lost items at the start (``outcome_history``), the kept items' lines as
    written, the comments among them, and the style of its items for the new ones. The
    caller checks that the result reads as ``new``."""
    if len(lines) == 1 or not (isinstance(old, list) and isinstance(new, list)):
        return _rewritten(key, lines, old, new, newline)
    dropped = len(old) - overlap(old, new)
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
        return _rewritten(key, lines, old, new, newline)
    gone = {id(chunk) for chunk in items[:dropped]}
    out = [lines[0]]
    out.extend(line for chunk in chunks if id(chunk) not in gone for line in chunk[1])
    flow = all(_body(chunk[1][0])[len(indent) + 2 :].lstrip().startswith("{") for chunk in items)
    for value in new[len(old) - dropped :]:
        text = _yaml_dump([value], default_flow_style=None if flow else False)
        out.extend(indent + part + newline for part in text.splitlines())
    return "".join(out)


def _rewritten(key: str, lines: list[str], old: Any, new: Any, newline: str) -> str:
    """The key's yaml as hb writes it, with the trailing comment of the key's first line (its
    ``lines``) kept at the end of its own first line: ``run_count: 4  # maintained by the
    runtime``, and of a list or text written on one line that now takes several,
    ``outcome_history:  # newest last`` with the items below. Without the comment when the line
    has none (a ``#`` inside a value is none: the line must read the same without it), or when
    the comment there would change what it reads as."""
    fresh = _dump({key: new}, newline)
    first = _body(lines[0])
    comment = _TRAILING_COMMENT.search(first)
    if comment is None:
        return fresh
    uncommented = first[: comment.start()] + lines[0][len(first) :] + "".join(lines[1:])
    if _loads(uncommented.replace("\r\n", "\n")) != {key: old}:
        return fresh
    head, sep, rest = fresh.partition(newline)
    text = head + comment.group(0) + sep + rest
    return text if _loads(text.replace("\r\n", "\n")) == {key: new} else fresh


def _loads(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def _fresh_block(task: ProactiveTask, newline: str) -> tuple[str, dict[str, Any]]:
    fields = _yaml_fields(task, None)
    text = _heading(task) + newline + "```yaml" + newline + _dump(fields, newline) + "```" + newline
    return text, fields


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
        if original is not None and key in fields and fields[key] != original.fields.get(key):
            continue  # the caller wrote the yaml value itself (a run count hb does not hold)
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


def _trimmed(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` with at most :data:`MAX_OUTCOMES` entries of ``outcome_history``, the newest."""
    trimmed = dict(fields)
    history = trimmed.get("outcome_history")
    if isinstance(history, list) and len(history) > MAX_OUTCOMES:
        trimmed["outcome_history"] = history[-MAX_OUTCOMES:]
    return trimmed


def _dump(fields: Mapping[str, Any], newline: str) -> str:
    try:
        text = _yaml_dump(_trimmed(fields), default_flow_style=False)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"task {fields.get('id')!r} holds a value YAML cannot write: {exc}") from None
    return text.replace("\n", newline) if newline != "\n" else text


# Text CraftBot's parser would take for the end of a block or of the task section.
_BLOCK_ENDERS = ("```", START_MARKER, END_MARKER)


def _yaml_dump(data: Any, *, default_flow_style: bool | None) -> str:
    """yaml.dump as hb writes blocks: long text on one line, and what would end CraftBot's block or
    section inside a value escaped (such text is always double-quoted, where ``\\x60`` is a
    backtick and ``\\x3c`` a ``<``)."""
    text = yaml.dump(
        data,
        Dumper=_BlockDumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=default_flow_style,
        width=1_000_000,  # long instructions stay on one line instead of being folded
    )
    assert isinstance(text, str)
    text = text.replace("```", "\\x60\\x60\\x60")
    for marker in (START_MARKER, END_MARKER):
        text = text.replace(marker, "\\x3c" + marker[1:])
    return text


class _BlockDumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line text as a ``|`` block, as people write instructions."""


def _represent_text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    if _CLOCK_LIKE.fullmatch(text):
        style = '"'  # "08:00" as FORMATS.md writes it; unquoted 9:30 reads as a number
    if any(ender in text for ender in _BLOCK_ENDERS):
        style = '"'  # escaped by _yaml_dump
    if "\x85" in text:
        style = '"'  # NEL: PyYAML writes it bare in any other style and reads that back as a space
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


def record_outcome(
    task: ProactiveTask,
    *,
    result: str,
    success: bool,
    now: datetime,
    last_run: datetime | None = None,
    next_run: datetime | None = None,
    zone: tzinfo | None = None,
) -> ProactiveTask:
    """The task after one run, as CraftBot's manager records it: run_count + 1, the outcome
    added (the newest five kept), ``last_run`` and ``next_run``.

    The outcome is ``{timestamp, result, success}`` with a UTC ``...Z`` timestamp,
    placed in ``outcome_history`` by its time, which is newest last: after the
    entries no later than it (a naive timestamp, CraftBot's local time, read in
    ``zone``, default ``last_run``'s), so a run hb merges into a history CraftBot
    saved since does not push out newer ones.
    ``last_run`` (default ``now``) and ``next_run`` (left as it is when None) are
    written as ISO 8601 text with their UTC offset; CraftBot's manager decides
    due-ness from the local date, week and month of ``last_run``, so give them in
    the zone CraftBot runs in.
    """
    _require_aware(now)
    ran = now if last_run is None else last_run
    _require_aware(ran)
    entry: dict[str, Any] = {
        "timestamp": format_timestamp(now),
        "result": result,
        "success": success,
    }
    history = _placed(task.outcome_history, entry, now, zone or ran.tzinfo)[-MAX_OUTCOMES:]
    fields = dict(task.fields)
    fields["run_count"] = counted_in_file(task) + 1
    fields["outcome_history"] = [dict(item) for item in history]
    fields["last_run"] = ran.isoformat()
    if next_run is not None:
        _require_aware(next_run)
        fields["next_run"] = next_run.isoformat()
    count = held_run_count(fields["run_count"])  # the file's own count goes on in fields
    return replace(task, run_count=count, outcome_history=history, last_run=ran, fields=fields)


def _entry_time(entry: Mapping[str, Any], zone: tzinfo | None) -> datetime | None:
    """An outcome's ``timestamp`` as an instant, read as CraftBot's types.py reads it (None: it
    reads as no time)."""
    stamp = entry.get("timestamp")
    if isinstance(stamp, str):
        try:
            stamp = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(stamp, datetime):
        return None
    return stamp if stamp.tzinfo is not None and stamp.utcoffset() is not None else stamp.replace(tzinfo=zone)


def _placed(
    history: Sequence[dict[str, Any]], entry: dict[str, Any], when: datetime, zone: tzinfo | None
) -> tuple[dict[str, Any], ...]:
    """``history`` with ``entry`` (at ``when``) after every entry no later than it: moved back only
    past entries of a later time (one whose time does not read stays ahead of it)."""
    at = len(history)
    while at > 0:
        before = _entry_time(history[at - 1], zone)
        if before is None or before.tzinfo is None or before <= when:
            break
        at -= 1
    return (*history[:at], entry, *history[at:])


def _require_aware(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise InvalidInput(f"now must carry a timezone, got {now.isoformat()}")


def _split_lines(text: str, end: str = "\n") -> list[str]:
    """Split after each newline (``end``: a lone CR in a CR-only file), keeping it
    (str.splitlines also breaks on U+2028 and kin)."""
    pieces = text.split(end)
    lines = [piece + end for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def _body(line: str) -> str:
    return line.rstrip("\n").rstrip("\r")
