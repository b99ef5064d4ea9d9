"""HEARTBEAT.md and the HEARTBEAT_OK reply (FORMATS.md section 4: OpenClaw, mistermorph).

A checklist is **effectively empty** when, once its HTML comments are taken out as OpenClaw
takes them out, every line is blank, a Markdown heading (``#`` then a space or the end of the
line), a list item with nothing in it (``-``, ``*``, ``+``, optionally with an empty ``[ ]``
or ``[x]`` box, whose one blank may be a tab or a no-break space), or a code fence marker: three
backticks, alone or followed by one info word of ASCII letters, digits, ``_`` or ``-`` (as in a
line ```markdown). OpenClaw skips fence lines so that its own template, a fenced block of
headings, counts as empty; the lines between two fences are read like any other line, and a
tilde fence or an info string with a space in it is content. ``#tag`` is content: a heading
needs the space. Lines and blanks are OpenClaw's: split at LF only, trimmed of JavaScript's
whitespace.

Comments are OpenClaw's ``stripLeadingHtmlCommentScaffolding`` (2026.6 and later; 2026.4 read
them as content): a comment is taken out where it opens a line (after blanks), again and again,
and one left open there hides the lines after it up to its ``-->`` (or the end). A ``<!--``
after other text on its line is text: ``- [ ] <!-- later -->`` is an instruction, and so is
every line after ``# Checks <!-- tidy``, which opens no comment. mistermorph, which takes out
closed comments wherever they stand and no open one, reads both as content too.

One choice is FORMATS.md's, not OpenClaw's code: a missing file is empty (OpenClaw then still
runs the heartbeat; mistermorph reads it as an empty checklist).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

HEARTBEAT_OK = "HEARTBEAT_OK"

# JavaScript's whitespace (\s, String.prototype.trim), which OpenClaw's reader uses: a tab or a
# no-break space inside "[ ]" leaves the item empty, and a byte order mark is trimmed too
JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_BLANK = f"[{JS_SPACE}]"
_TRIMMED = JS_SPACE + "\x1c\x1d\x1e\x1f\x85"  # and what else Python's str.strip() takes


def trimmed(text: str) -> str:
    """``text`` without the blanks at its ends: JavaScript's (a byte order mark among them, which
    Python's ``str.strip()`` keeps) and Python's. A poke of a BOM and a space holds no text."""
    return text.strip(_TRIMMED)


_HEADING = re.compile(rf"^#+(?:{_BLANK}|$)")
_EMPTY_ITEM = re.compile(rf"^[-*+]{_BLANK}*(?:\[(?:{_BLANK}|[xX])?\]{_BLANK}*)?$")
_FENCE = re.compile(r"```[A-Za-z0-9_-]*")  # ASCII only: a fence's info word, whole line
HEARTBEAT_ACK_MAX_CHARS = 300  # OpenClaw's default heartbeat.ackMaxChars
_TAG = re.compile(r"<[^>]*>")  # HTML tags count as a space when looking for the token
_NBSP_ENTITY = re.compile("&nbsp;", re.IGNORECASE)
_EDGE_MARKS = re.compile(r"\A[*`~_]+|[*`~_]+\Z")  # light Markdown at the reply's two ends
_ASCII_WORD = re.compile(r"[A-Za-z0-9_]")  # JavaScript's \w
_SPACE_RUN = re.compile(f"{_BLANK}+")
_TAIL_MAX = 4  # non-word characters the token may carry after it at the end
_MARKS = f"[*_`~{JS_SPACE}]*"
_BARE_TOKEN = re.compile(f"{_MARKS}{HEARTBEAT_OK}{_MARKS}(?:\\.{_MARKS})?")


def is_effectively_empty(text: str | None) -> bool:
    """Whether a HEARTBEAT.md (None: missing) holds no instruction at all."""
    if text is None:
        return True
    for line in _without_comments(text):
        stripped = line.strip(JS_SPACE)
        if not stripped or _HEADING.match(stripped) or _EMPTY_ITEM.match(stripped):
            continue
        if _FENCE.fullmatch(stripped) is None:
            return False
    return True


def _without_comments(text: str) -> Iterator[str]:
    """The file's lines (split at LF) with the HTML comments that open a line taken out, as
    OpenClaw's reader takes them out (see the module's docstring): a comment that opens the line,
    after blanks, and the ones that follow it so; the blanks before each stay. One pass over each
    line (a line of 100,000 comments back to back is read as fast as any other)."""
    open_comment = False
    for line in text.split("\n"):
        kept: list[str] = []  # the blanks before each comment taken out
        at = 0
        while True:
            if open_comment:  # a comment a line before left open
                end = line.find("-->", at)
                if end == -1:
                    kept, at = [], len(line)
                    break
                open_comment, at = False, end + 3
                continue
            start = at
            while start < len(line) and line[start] in JS_SPACE:
                start += 1
            if not line.startswith("<!--", start):
                break
            end = line.find("-->", start)  # from the comment's first character: "<!-->" closes
            if end == -1:
                open_comment, kept, at = True, [], len(line)
                break
            kept.append(line[at:start])
            at = end + 3
        yield "".join(kept) + line[at:]


@dataclass(frozen=True)
class PeriodicTask:
    """A task of HEARTBEAT.md's ``tasks:`` block (OpenClaw 2026.6's periodic tasks)."""

    name: str
    interval: str
    prompt: str

    @property
    def every(self) -> timedelta | None:
        """The interval as OpenClaw reads it (:func:`openclaw_duration`); None: never due."""
        return openclaw_duration(self.interval, default_unit="m")

    def due(self, last_run: datetime | None, now: datetime) -> bool:
        """OpenClaw's ``isTaskDue``: never run is due; an interval it cannot read never is."""
        if last_run is None:
            return True
        every = self.every
        return every is not None and now - last_run >= every


def periodic_tasks(text: str | None) -> list[PeriodicTask]:
    """The tasks of HEARTBEAT.md's ``tasks:`` block, as OpenClaw's ``parseHeartbeatTasks`` reads
    them (comments taken out first, as for emptiness)::

        tasks:
          - name: inbox
            interval: 30m
            prompt: "Check the inbox"

    After a line ``tasks:``, each ``- name:`` line starts a task; its indented ``interval:`` and
    ``prompt:`` lines follow (the last of each counts; one quote is taken off each end of a
    value), up to the next ``- name:``. Any other line that is not blank ends the block (within a
    task's lines, so does a line that is not indented); a task lacking a name, an interval or a
    prompt is no task."""
    if text is None:
        return []
    lines = list(_without_comments(text))
    tasks: list[PeriodicTask] = []
    in_block = False
    for i, line in enumerate(lines):
        trimmed = line.strip(JS_SPACE)
        if trimmed == "tasks:":
            in_block = True
            continue
        if not in_block:
            continue
        if trimmed and not trimmed.startswith(("interval:", "prompt:", "- name:", "-")):
            in_block = False
            continue
        if not trimmed.startswith("- name:"):
            continue
        name, interval, prompt = _task_value(trimmed, "- name:"), "", ""
        for j in range(i + 1, len(lines)):  # (a slice of the rest would copy it for each task)
            following = lines[j]
            value = following.strip(JS_SPACE)
            if value.startswith("- name:"):
                break
            indented = following.startswith((" ", "\t"))
            if value.startswith("interval:") and indented:
                interval = _task_value(value, "interval:")
            elif value.startswith("prompt:") and indented:
                prompt = _task_value(value, "prompt:")
            elif value:
                in_block = False
                break
        if name and interval and prompt:
            tasks.append(PeriodicTask(name, interval, prompt))
    return tasks


def _task_value(line: str, key: str) -> str:
    value = line.replace(key, "", 1).strip(JS_SPACE)
    return _QUOTE_ENDS.sub("", value)


_QUOTE_ENDS = re.compile(r"\A[\"']|[\"']\Z")


def without_periodic_tasks(text: str) -> str:
    """HEARTBEAT.md without its ``tasks:`` block, trimmed: the directives OpenClaw's runner sends
    along with the tasks due (``stripHeartbeatTasksBlock``: after ``tasks:``, blank and indented
    lines and ``- name:`` lines belong to the block; lines split at LF or CRLF)."""
    kept: list[str] = []
    in_block = False
    for line in re.split(r"\r?\n", text):
        trimmed = line.strip(JS_SPACE)
        if not in_block and trimmed == "tasks:":
            in_block = True
            continue
        if in_block:
            if not trimmed or (line[:1] and line[0] in JS_SPACE) or trimmed.startswith("- name:"):
                continue
            in_block = False
        kept.append(line)
    return "\n".join(kept).strip(JS_SPACE)


_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION_ONE = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)?")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)")


def openclaw_duration(text: str, *, default_unit: str = "ms") -> timedelta | None:
    """A duration as OpenClaw's ``parseDurationMs`` reads it (trimmed, lower-cased): a number
    with an optional unit (ms, s, m, h, d; none: ``default_unit``) or units run together
    (``1h30m``), in milliseconds rounded as JavaScript's Math.round; None where OpenClaw
    refuses it."""
    raw = text.strip(JS_SPACE).lower()
    one = _DURATION_ONE.fullmatch(raw)
    if one:
        total = float(one.group(1)) * _DURATION_MS[one.group(2) or default_unit]
    else:
        parts = list(_DURATION_PART.finditer(raw))
        if not parts or "".join(p.group(0) for p in parts) != raw:
            return None
        total = 0.0
        for part in parts:  # summed in order, in doubles, as JavaScript sums them
            total += float(part.group(1)) * _DURATION_MS[part.group(2)]
    if not math.isfinite(total):
        return None
    milliseconds = math.floor(total + 0.5)
    if milliseconds > _SAFE_INTEGER:
        return None
    return timedelta(milliseconds=milliseconds)


_SAFE_INTEGER = 2**53 - 1  # JavaScript's Number.MAX_SAFE_INTEGER: past it, OpenClaw refuses


def heartbeat_reply_to_deliver(reply: str, *, ack_max_chars: int = HEARTBEAT_ACK_MAX_CHARS) -> str | None:
    """What OpenClaw delivers of a heartbeat reply: None when nothing, else the text.

    Nothing is delivered for a blank reply, nor when ``HEARTBEAT_OK`` stands at
    the reply's start or end and what remains without it is at most
    ``ack_max_chars`` long (OpenClaw's default 300, counted in UTF-16 code units,
    whitespace runs counted as one space): a short acknowledgement beside the token
    is not worth a message. The token is taken off both ends again and again (``HEARTBEAT_OK
    HEARTBEAT_OK``); at the end it may carry up to four characters that are not an
    ASCII letter, digit or ``_`` (``HEARTBEAT_OK.``, ``!!!``, ``---``). When the plain
    reply does not start or end with the token, it is looked for once more with HTML tags and
    ``&nbsp;`` read as spaces and the marks ``*``, ``~``, ``_`` and the backtick dropped at
    the two ends
    (``**HEARTBEAT_OK**``, ``<b>HEARTBEAT_OK</b>``). The token is case-sensitive, and
    one in the middle of the text does not count.

    A reply that is delivered loses the token, and its whitespace runs become one
    space; a reply without the token at an edge is delivered as it is, trimmed.

    The token alone, with whitespace, light Markdown and one period around it, is
    never delivered, whatever ``ack_max_chars`` (FORMATS.md section 4). OpenClaw would
    deliver the marks left over (``****`` of ``**HEARTBEAT_OK**``) when its
    ackMaxChars is below their length.
    """
    text = reply.strip(JS_SPACE)
    if not text or _BARE_TOKEN.fullmatch(text) or is_silent_reply(reply):
        return None
    unwrapped = _EDGE_MARKS.sub("", _NBSP_ENTITY.sub(" ", _TAG.sub(" ", text)))
    rest, peeled = _peel_token(text)
    if not (peeled and rest):
        rest, peeled = _peel_token(unwrapped)
    if not peeled:
        return text
    if _utf16_len(rest) <= max(0, ack_max_chars):
        return None
    return rest


SILENT_TOKEN = "NO_REPLY"  # OpenClaw 2026.9's canonical silent reply
_SILENT_EXACT = re.compile(f"{_BLANK}*{SILENT_TOKEN}(?:{_BLANK}+{SILENT_TOKEN})*{_BLANK}*", re.IGNORECASE)


def is_silent_reply(reply: str) -> bool:
    """Whether a reply is OpenClaw's silent token (its ``isSilentReplyPayloadText``, 2026.9): ``NO_REPLY``
    alone or repeated (any case, blanks around), also with punctuation at its two ends
    (``_NO_REPLY_.``), as a JSON string (``"NO_REPLY"``) or as ``{"action": "NO_REPLY"}``. OpenClaw
    also takes it after a reasoning block (``<think>...</think>``, ``Thinking:``), which hb does not
    read."""
    if _SILENT_EXACT.fullmatch(reply) or _SILENT_EXACT.fullmatch(_strip_punctuation(reply.strip(JS_SPACE))):
        return True
    text = reply.strip(JS_SPACE)
    if SILENT_TOKEN not in text or text[:1] + text[-1:] not in ('""', "{}"):
        return False
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    if isinstance(value, dict):
        return (
            list(value) == ["action"]
            and isinstance(value["action"], str)
            and value["action"].strip(JS_SPACE) == SILENT_TOKEN
        )
    return isinstance(value, str) and value.strip(JS_SPACE) == SILENT_TOKEN


def _strip_punctuation(text: str) -> str:
    """``text`` without the runs of Unicode punctuation (``\\p{P}``) at its two ends."""
    start, end = 0, len(text)
    while start < end and unicodedata.category(text[start]).startswith("P"):
        start += 1
    while end > start and unicodedata.category(text[end - 1]).startswith("P"):
        end -= 1
    return text[start:end]


def is_heartbeat_ok(reply: str, *, ack_max_chars: int = HEARTBEAT_ACK_MAX_CHARS) -> bool:
    """Whether a heartbeat reply means "nothing to report" and must not be delivered.

    True for ``HEARTBEAT_OK`` alone, with surrounding whitespace, light Markdown
    (``**HEARTBEAT_OK**``, ```HEARTBEAT_OK```, ``_HEARTBEAT_OK_``) or trailing
    punctuation, and for the token at the start or end of a note of at most
    ``ack_max_chars`` characters: :func:`heartbeat_reply_to_deliver` has the rules.
    """
    return heartbeat_reply_to_deliver(reply, ack_max_chars=ack_max_chars) is None


def _peel_token(text: str) -> tuple[str, bool]:
    """The text left once the token is taken off its ends (folded), and whether it was.

    First off the start, again and again; then off the end, again and again, with the marks
    that follow it there (a token at the end leaves the start as it was, so no token comes
    back to the start). The text kept is a span of ``text`` and the marks left behind it (no
    letter, at most :data:`_TAIL_MAX`): one pass, where cutting a new string for each token
    took time in the square of the reply (10 s for a megabyte of tokens)."""
    start, end = _inner(text, 0, len(text))
    peeled = False
    while start < end and text.startswith(HEARTBEAT_OK, start, end):
        start, end = _inner(text, start + len(HEARTBEAT_OK), end)
        peeled = True
    marks = ""  # what the last token taken off the end carried, kept after the text before it
    while start < end:
        at = text.rfind(HEARTBEAT_OK, start, end)
        if at < 0:
            break
        tail = text[at + len(HEARTBEAT_OK) : end] + marks
        if _ASCII_WORD.search(tail) or _utf16_len(tail) > _TAIL_MAX:
            break
        peeled = True
        head_start, head_end = _inner(text, start, at)
        if head_start == head_end:  # with nothing before it, the token's marks go too
            start = end = 0
            marks = ""
            break
        end = head_end
        marks = tail.strip(JS_SPACE)
    return _SPACE_RUN.sub(" ", text[start:end] + marks).strip(JS_SPACE), peeled


def _inner(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of ``text[start:end]`` once JavaScript's white space is trimmed off both ends."""
    while start < end and text[start] in JS_SPACE:
        start += 1
    while end > start and text[end - 1] in JS_SPACE:
        end -= 1
    return start, end


def _utf16_len(text: str) -> int:
    """The length JavaScript gives a string: an emoji counts twice."""
    return len(text.encode("utf-16-le")) // 2
