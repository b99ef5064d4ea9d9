"""``hb mcp``: one workspace's ledger as Model Context Protocol tools (the ``[mcp]`` extra).

One long-lived process serves one ledger, opened once: every tool is a thin call of the
:class:`~heartbeat.Ledger` API, one transaction, run on one thread in turn (the MCP SDK
would run plain functions on any of its worker threads, and a ledger is one connection).
Several clients on one ledger are several processes, each its own server, and the
database keeps them exactly-once as it does the CLI's processes.

Lean by design, because every byte of a tool list or a result is an agent's token:

- the tool list (names, descriptions, input schemas) stays under :data:`TOOL_LIST_BUDGET`
  characters: the schemas carry no titles, and an optional argument is just its type;
- a result is compact JSON (the fields an agent acts on; empty ones are left out); a list
  takes ``limit`` and says how many were ``left_out``, and is cut further to stay under
  :data:`MAX_RESULT` characters; a long text in a listed item is clipped at :data:`MAX_TEXT`, and
  so is a JSON object or array (a PostgreSQL json cell) as its JSON text.

A domain error (:class:`heartbeat.errors.HbError`) is a tool error (``isError``) whose text
is hb's one-line message after its meaning (``claim lost: ...``, ``choose a scope: ...``);
nothing else reaches the client either: an unforeseen failure is one line, and the server
carries on. Arguments the input schema refuses (a number for a title, a missing id) never
reach the ledger: the tool error is one line naming each argument and what it should be. An
argument a tool does not take (a misspelt ``claim``, ``scop``) is refused the same way, naming it
and the arguments the tool takes: the SDK would drop it and make the call without it.
A request the SDK's parser refuses though it is JSON (nested past 200 levels, a lone
surrogate escape) is answered with a parse error under its id instead of going unanswered; a
line with no id to answer by (not JSON, a batch, a request whose id is null, a fraction or an
object, which the SDK took for a notification) gets its error with id null, as JSON-RPC 2.0 asks.

Over HTTP (``--http``) the same tools are served as streamable HTTP at ``/mcp`` behind a
bearer token (401 without it; 400 for more than one Authorization header), on loopback by
default; the token is never logged. uvicorn serves it with hb's protocol
(:class:`heartbeat.mcp_http.HttpProtocol`, on h11, imported only for ``--http``): what uvicorn
would refuse in text or take is answered as hb serve answers, JSON with one line (400 for a
request h11 cannot parse, 431 past 64 KiB of headers, 505 for another HTTP version, 404 for
another path, 408 for half a request after 10 seconds, 413 for a body past :data:`MAX_BODY`
bytes once the token is right, 503 with ``Retry-After`` past 64 connections at once), up to 4
empty lines before a request line are skipped, and the Server header is ``hb-mcp``.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import hmac
import io
import itertools
import json
import os
import re
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    TextContent,
    ToolAnnotations,
)
from pydantic import Field, ValidationError

from heartbeat import __version__
from heartbeat.clock import isoformat, parse_duration
from heartbeat.db.sqlite import file_of
from heartbeat.errors import (
    BlockedEntry,
    Busy,
    ClaimLost,
    FileFormatError,
    HbError,
    Interrupted,
    InvalidInput,
    InvalidState,
    NotFound,
    QueueExhausted,
    SchemaError,
    ScopeNotFound,
    ScopeRequired,
    StaleClaims,
    at_ledger,
    describe,
)
from heartbeat.formats import strict_json

if TYPE_CHECKING:
    from heartbeat.ledger import Ledger

TOOL_LIST_BUDGET = 12_000  # characters of the whole tools/list answer (a test holds it)
MAX_RESULT = 20_000  # characters of one result's JSON: a fifth of the 25k-token limit clients set
MAX_TEXT = 2_000  # characters of one text in a listed item (a title, an instruction, a cell)
DEFAULT_LIMIT = 20
MAX_LIMIT = 200
HTTP_PATH = "/mcp"
# bytes of a request body over HTTP: a tool call is a few KiB (hb serve's 4 KiB is for a poke's
# one instruction); the SDK's own limit, 4 MiB, is answered in text and the rest of the body read
MAX_BODY = 1024 * 1024

INSTRUCTIONS = (
    'hb is this workspace\'s task ledger. On a heartbeat call `heartbeat`: {"ok": true} means '
    "nothing to do or say (reply HEARTBEAT_OK, message no one). Take work with `pop`, keep it with "
    "`renew`, finish it with `complete` or `fail`, always passing the task's `claim`."
)

# the meaning an agent reads first, per domain error (the most specific class first)
MEANINGS: tuple[tuple[type[HbError], str], ...] = (
    (ClaimLost, "claim lost"),
    (QueueExhausted, "scope exhausted"),
    (ScopeRequired, "choose a scope"),
    (StaleClaims, "stale claims"),
    (BlockedEntry, "not ready"),
    (ScopeNotFound, "no such scope"),
    (Busy, "busy"),
    (NotFound, "not found"),
    (FileFormatError, "unreadable file"),
    (InvalidInput, "invalid input"),
    (InvalidState, "not possible now"),
    (SchemaError, "schema mismatch"),
    (Interrupted, "interrupted"),
)

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
IDEMPOTENT = ToolAnnotations(destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(destructive_hint=False, idempotent_hint=False, open_world_hint=False)

Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description=f"At most this many (1-{MAX_LIMIT}).")]
Scope = Annotated[str | None, Field(description="Scoped queue path; '' is the legacy list.")]
Claim = Annotated[str | None, Field(description="The claim token pop returned (fences the call).")]
Lease = Annotated[str | None, Field(description="Duration, e.g. 30m (default: setting queue.lease).")]
When = Annotated[str | None, Field(description="ISO 8601 time (naive = workspace timezone).")]
Lang = Literal["en", "zh"]


def dumps(value: Any) -> str:
    """Compact strict JSON (:mod:`heartbeat.formats.strict_json`), as the client receives it."""
    return strict_json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def compact(obj: dict[str, Any], keys: Sequence[str] | None = None) -> dict[str, Any]:
    """``obj`` (only ``keys``, in that order, when given) without empty values: None, [], {}."""
    picked = obj if keys is None else {k: obj.get(k) for k in keys}
    return {k: v for k, v in picked.items() if v is not None and v != [] and v != {}}


def clip(value: Any, limit: int = MAX_TEXT) -> Any:
    """A text cut to ``limit`` characters, saying how much was left out. Another value whose JSON
    is longer (an object or array: a PostgreSQL json, jsonb or array cell) is its JSON text, cut
    the same way; other values as they are."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit] + f"… [{len(value) - limit} more characters]"
    if value is None or isinstance(value, bool | int | float):
        return value
    text = dumps(value)
    return value if len(text) <= limit else clip(text, limit)


def listing(key: str, items: Sequence[Any], limit: int, *, more: int = 0, **extra: Any) -> dict[str, Any]:
    """``items`` under ``key``: the first ``limit``, fewer if the result would pass
    :data:`MAX_RESULT` characters, and ``left_out``, how many were not listed (``more``: items
    past ``items``, counted and never held)."""
    head = list(items[:limit])
    sizes = [len(dumps(item)) + 1 for item in head]
    room = MAX_RESULT - len(dumps({**extra, key: [], "left_out": len(items) + more}))
    kept, used = 0, 0
    while kept < len(head) and used + sizes[kept] <= room:
        used += sizes[kept]
        kept += 1
    return {**extra, key: head[:kept], "left_out": len(items) + more - kept}


def error_text(exc: BaseException) -> str:
    """The tool error's text: hb's one-line message after its meaning."""
    if isinstance(exc, HbError):
        meaning = next((m for cls, m in MEANINGS if isinstance(exc, cls)), None)
        message = " ".join(exc.message.split())
        if meaning is None or message.startswith(meaning):
            return message
        return f"{meaning}: {message}"
    described = describe(exc)
    if described is not None:
        return described[0]
    text = " ".join(str(exc).split())[:300]
    return f"internal error: {type(exc).__name__}: {text}"


JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}


def arguments_error(tool: str, exc: ValidationError) -> str:
    """One line for arguments the input schema refuses, per argument what it should be (the
    branches of a union joined by "or") and, for a value of the wrong type, which JSON type
    it was: ``invalid input: add: validation error: title: Input should be a valid string
    (got null)``. Never the value itself, nor pydantic's multi-line report and links."""
    said: dict[str, list[str]] = {}
    got: dict[str, str] = {}
    for err in exc.errors(include_url=False):
        name = str(err["loc"][0]) if err["loc"] else "arguments"
        if err["msg"] not in said.setdefault(name, []):
            said[name].append(err["msg"])
        if err["type"].endswith("_type"):
            value = err["input"]
            got[name] = f" (got {'null' if value is None else JSON_TYPES.get(type(value), 'value')})"
    found = "; ".join(f"{name}: {' or '.join(msgs)}{got.get(name, '')}" for name, msgs in said.items())
    return f"invalid input: {tool}: validation error: {' '.join(found.split())}"


MAX_UNKNOWN_SHOWN = 5  # unknown argument names quoted in one error, then how many more
MAX_NAME_SHOWN = 40  # characters of one unknown argument name quoted


def unknown_arguments_error(tool: str, unknown: Sequence[str], accepted: Sequence[str]) -> str:
    """One line for arguments the tool does not take: each name (quoted as JSON, clipped), the
    closest accepted name when one is close, and the names the tool takes: ``invalid input:
    complete: unknown argument "claimm" (did you mean "claim"?); complete takes id, claim,
    scope, outcome; nothing was done``."""
    shown = []
    for name in unknown[:MAX_UNKNOWN_SHOWN]:
        quoted = json.dumps(name if len(name) <= MAX_NAME_SHOWN else name[:MAX_NAME_SHOWN] + "...")
        close = difflib.get_close_matches(name, accepted, n=1)
        if not close:  # a name spelled with other capitals: "Scope", "ACCEPT_STALE"
            close = [a for a in accepted if a.lower() == name.lower()][:1]
        shown.append(f'{quoted} (did you mean "{close[0]}"?)' if close else quoted)
    if len(unknown) > MAX_UNKNOWN_SHOWN:
        shown.append(f"and {len(unknown) - MAX_UNKNOWN_SHOWN} more")
    noun = "argument" if len(unknown) == 1 else "arguments"
    takes = ", ".join(accepted) if accepted else "no arguments"
    return f"invalid input: {tool}: unknown {noun} {', '.join(shown)}; {tool} takes {takes}; nothing was done"


class LedgerTool(Tool):
    """A tool that refuses arguments it does not take (the SDK's argument model ignores them, so
    a misspelt ``claim`` or ``scope`` would be dropped and the call made without it): the tool
    error is :func:`unknown_arguments_error`'s one line, and nothing runs. Arguments of the
    wrong type are :func:`arguments_error`'s one line (the SDK's text is pydantic's report:
    several lines, the rejected value, a link per error)."""

    @property
    def accepted(self) -> list[str]:
        """The argument names the tool takes, in its signature's order (as its input schema)."""
        fields = self.fn_metadata.arg_model.model_fields
        return [field.alias or name for name, field in fields.items()]

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        accepted = self.accepted
        unknown = [name for name in arguments if name not in accepted]
        if unknown:
            raise ToolError(unknown_arguments_error(self.name, unknown, accepted))
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(arguments_error(self.name, cause)) from cause


class LedgerCalls:
    """Runs each tool's ledger call on one thread, one at a time, and shapes what it returns.

    The notices an operation leaves on the ledger (an idempotent add that found its task, a
    queue held by stale claims, ...) are taken off it after each call and join the result.
    """

    def __init__(self, ledger: Ledger, log: Callable[[str], None]) -> None:
        self.ledger = ledger
        self.log = log
        path = file_of(ledger.url)
        self.ledger_file = None if path is None else str(path)  # what a database error names
        self.identity = _file_identity(self.ledger_file)
        self.reopened: Ledger | None = None  # a ledger of this runner's own (see current), closed with it
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hb-ledger")
        self.thread_ident: int | None = None  # the thread's, once it ran a call (see interrupt)

    async def __call__(self, operation: Callable[[Ledger], dict[str, Any]]) -> CallToolResult:
        return await asyncio.wrap_future(self.thread.submit(self.result, operation))

    def current(self) -> Ledger:
        """The ledger, opened again (checked and upgraded as on start) when its SQLite file is no
        longer the one it opened: a backup moved into its place, or the file removed. The old
        connection would go on writing to the file that is gone, and every call's work be lost.
        A file that is missing is a tool error (NotFound) until one is there again."""
        if self.ledger_file is None or _file_identity(self.ledger_file) == self.identity:
            return self.ledger
        from heartbeat.ledger import Ledger

        old = self.ledger
        # the old connection goes first, its -wal folded into the file that is gone and emptied:
        # SQLite does not checkpoint a moved file on close, and the file now in its place would
        # read the frames left in the -wal as its own
        connection = old.ctx.opened
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
        old.close()  # (its opener's close of it, later, finds nothing left to close)
        self.identity = _LET_GO  # no file's: the next call opens again whatever is there
        fresh = Ledger.open(workspace=old.workspace, db=old.url, now=old.clock.now, create=False)
        self.ledger = self.reopened = fresh
        self.identity = _file_identity(self.ledger_file)
        self.log(f"{self.ledger_file} is another file now (replaced); opened it again")
        return fresh

    def result(self, operation: Callable[[Ledger], dict[str, Any]]) -> CallToolResult:
        self.thread_ident = threading.get_ident()
        try:
            payload = operation(self.current())
        except Exception as exc:
            text = at_ledger(error_text(exc), self.ledger_file)
            if text.startswith("internal error"):
                self.log(text)
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        finally:
            notices = list(self.ledger.notices)
            self.ledger.notices.clear()
        if notices:
            payload = {**payload, "notices": notices}
        text = dumps(payload)
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=json.loads(text)
        )

    def interrupt(self) -> None:
        """Ctrl-C: cancel the ``sql`` query a call is running, as ``hb sql``'s is cancelled (the
        call then ends at once; it only read). Any other call finishes in its transaction."""
        if self.thread_ident is not None:
            from heartbeat.reporting.sql import interrupt_queries

            interrupt_queries(self.thread_ident)

    def close(self) -> None:
        self.thread.shutdown(wait=True)
        if self.reopened is not None:
            self.reopened.close()


_LET_GO = (-1, -1)  # LedgerCalls.identity once its ledger was closed for another file


def _file_identity(path: str | None) -> tuple[int, int] | None:
    """The device and inode of the file at ``path`` (None: none, or no file there)."""
    if path is None:
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


# --- results ------------------------------------------------------------------------------


def brief(ticked: dict[str, Any], recurring: list[dict[str, Any]]) -> dict[str, Any]:
    """The heartbeat's brief as data: ``{"ok": true}`` when there is nothing to do or say, else
    the checklist (None when effectively empty), the messages to send with their task ids, and
    the recurrences and proactive tasks due now."""
    round_ = ticked["round"]
    # the round's messages are its sent decisions' messages, in their order, then its own (the
    # hygiene reminder): paired by place, as two tasks of one id in two queues may send one text
    sent = [d for d in round_["decisions"] if d.get("message")]
    messages = []
    for at, text in enumerate(round_["messages"]):
        decision = sent[at] if at < len(sent) and sent[at]["message"] == text else {}
        about = {"task_id": decision.get("id"), "scope": decision.get("scope"), "risk": decision.get("risk")}
        messages.append(compact({**about, "text": text}))
    said = "\n\n".join(m.strip() for m in round_["messages"] if m.strip())
    text = ticked["brief"]
    if text == "HEARTBEAT_OK" or text == said:
        checklist = None
    else:  # the brief is the checklist, then the messages after one blank line
        checklist = text[: len(text) - len(said) - 2] if said else text
    warnings = [w for report in ticked["sync"]["reports"] for w in report["preserved"]]
    warnings += [s["reason"] for s in (ticked["materialized"] or {}).get("skipped", [])]
    extra = {"warnings": warnings} if warnings else {}
    if checklist is None and not messages and not recurring:
        return {"ok": True, **extra}
    listed = listing("recurring", recurring, DEFAULT_LIMIT)
    return compact(
        {
            "ok": False,
            "checklist": clip(checklist, 4 * MAX_TEXT),
            "messages": messages,
            "recurring": listed["recurring"],
            "recurring_left_out": listed["left_out"] or None,
            **extra,
        }
    )


RULE_FIELDS = (
    "id",
    "title",
    "source",
    "rule",
    "time",
    "day",
    "period",
    "instruction",
    "conditions_to_check",
    "missed",
    "claimed",
    "chat_id",
)


def rule_item(rule: dict[str, Any]) -> dict[str, Any]:
    """A recurrence due now: what to do and when, without the zero counts and false flags."""
    item = compact(rule, RULE_FIELDS)
    return {k: clip(v) for k, v in item.items() if not (k in ("missed", "claimed") and not v)}


# the names a popped task's result gives hb's values, and the one that holds a task's own fields
# of those names (its own ``own`` included)
HB_NAMES = ("id", "scope", "claim", "lease_expires_at")
OWN = "own"


def popped(row: dict[str, Any], expires: datetime | None, zone: Any) -> dict[str, Any]:
    """A popped task: hb's id and scope first (what complete / fail / renew take), then the
    task's own fields (as ``hb pop`` prints them, empty ones left out), its claim and when the
    lease runs out at the earliest. An own field of one of those names whose value is not hb's (a
    scoped entry's own ``id``, a legacy task's own ``scope``) is kept under ``own``, as is a
    field named ``own``: the file's value never stands in for hb's."""
    from heartbeat.db.queue import task_object

    head = {"id": str(row["id"]), "scope": row["scope"] or None}
    fields = compact(task_object(row))
    own: dict[str, Any] = {}
    for name in (*HB_NAMES, OWN):
        if name not in fields:
            continue
        value = fields.pop(name)
        if name == "id" and str(value) == head["id"]:  # a legacy task's id is hb's (5 is "5")
            continue
        own[name] = value
    tail = {OWN: own, "claim": row["claim"], "lease_expires_at": isoformat(expires, zone)}
    return compact({**head, **fields, **tail})


def outcome_of(outcome: dict[str, Any] | str | None) -> Any:
    """An outcome as ``hb complete --outcome`` stores it: an object as given; text as its JSON
    value, or ``{"result": text}`` when it is not JSON."""
    if not isinstance(outcome, str):
        return outcome
    from heartbeat.formats.tasks_json import outcome_value

    return outcome_value(outcome)


def table_of(
    names: list[str], records: list[dict[str, Any]], limit: int, *, more: int = 0, **meta: Any
) -> dict[str, Any]:
    """Rows as arrays under their column names (a name per column, not per cell)."""
    rows = [[clip(v) for v in record.values()] for record in records]
    return listing("rows", rows, limit, more=more, **meta, columns=names)


# --- the server -----------------------------------------------------------------------------


def default_worker() -> str:
    """Who this server's pops claim for when the caller names no one (as ``hb pop``)."""
    return os.environ.get("HB_WORKER") or f"{socket.gethostname()}:{os.getpid()}"


def build(ledger: Ledger, log: Callable[[str], None] | None = None) -> tuple[MCPServer[Any], LedgerCalls]:
    """The MCP server of ``ledger``'s tools, and the runner its calls go through (close it after)."""
    calls = LedgerCalls(ledger, log or _stderr)
    process_worker = default_worker()
    tools: list[Tool] = []

    def tool(annotations: ToolAnnotations) -> Callable[[Callable[..., Awaitable[CallToolResult]]], None]:
        def register(fn: Callable[..., Awaitable[CallToolResult]]) -> None:
            made = LedgerTool.from_function(fn, annotations=annotations, structured_output=False)
            made.parameters = slim_schema(made.parameters)
            made.description = " ".join(made.description.split())
            tools.append(made)

        return register

    @tool(WRITES)
    async def heartbeat(lang: Lang | None = None) -> CallToolResult:
        """One heartbeat tick, as `hb heartbeat`: sync the workspace files, run the round, return
        the brief. {"ok": true}: nothing to do or say (reply HEARTBEAT_OK). Else `checklist`
        (HEARTBEAT.md), `messages` to send (allowed by the throttle, recorded as sent) with their
        task ids, and `recurring` tasks due now (take them with recur_due claim=true)."""

        def tick(lg: Ledger) -> dict[str, Any]:
            ticked = lg.heartbeat(lang=lang)
            recurring = [rule_item(r) for r in lg.recur_due()]
            return brief(ticked, recurring)

        return await calls(tick)

    @tool(WRITES)
    async def pop(
        scope: Scope = None,
        worker: Annotated[
            str | None, Field(description="Who claims (default: HB_WORKER, else host:pid).")
        ] = None,
        lease: Lease = None,
        accept_stale: Annotated[bool, Field(description="Take over the first stale claim.")] = False,
        id: Annotated[str | None, Field(description="Pop this task instead of the next.")] = None,
    ) -> CallToolResult:
        """Claim the next ready task: {"task": {..., "claim": TOKEN}}, or {"task": null, "reason"}.
        Renew the claim while working; pass it to complete/fail."""

        def take(lg: Ledger) -> dict[str, Any]:
            started = lg.now()
            try:
                task = lg.pop_result(
                    scope=scope,
                    worker=worker or process_worker,
                    lease=lease,
                    task_id=id,
                    accept_stale=accept_stale,
                ).task
            except QueueExhausted as exhausted:
                return {"task": None, "reason": error_text(exhausted)}
            if task is None:
                return {"task": None, "reason": "no pending tasks"}
            length = parse_duration(lease) if lease else parse_duration(str(lg.config_get("queue.lease")))
            return {"task": popped(task, started + length, lg.zone)}

        return await calls(take)

    @tool(WRITES)
    async def complete(
        id: str,
        claim: Claim = None,
        scope: Scope = None,
        outcome: Annotated[
            dict[str, Any] | str | None,
            Field(description='A JSON object, or text (kept as {"result": text}).'),
        ] = None,
    ) -> CallToolResult:
        """Finish a claimed task and record its outcome. With claim, refused ("claim lost") once
        someone else holds or ended the task; nothing changes then."""
        return await calls(lambda lg: compact(lg.complete(id, scope, outcome_of(outcome), claim=claim)))

    @tool(WRITES)
    async def fail(
        id: str,
        claim: Claim = None,
        scope: Scope = None,
        reason: str | None = None,
        final: Annotated[bool, Field(description="No retry: mark it failed now.")] = False,
    ) -> CallToolResult:
        """Record a failure: the task returns to the queue for a retry until queue.max_attempts,
        then (or with final) it is failed. Fenced by claim as complete is."""
        return await calls(lambda lg: compact(lg.fail(id, scope, reason, final, claim=claim)))

    @tool(IDEMPOTENT)
    async def renew(id: str, claim: str, scope: Scope = None, lease: Lease = None) -> CallToolResult:
        """Extend a claim's lease from now while the claim still holds the task ("claim lost"
        otherwise). Renew well inside the lease, e.g. every lease/3."""
        return await calls(lambda lg: compact(lg.renew(id, claim, scope=scope, lease=lease)))

    @tool(WRITES)
    async def add(
        title: str,
        scope: Scope = None,
        id: str | None = None,
        key: Annotated[
            str | None, Field(description="Idempotent add: a task with this key is returned.")
        ] = None,
        priority: Literal["critical", "high", "medium", "low"] | None = None,
        due: When = None,
        not_before: When = None,
        after: Annotated[list[str] | None, Field(description="Ids of tasks to wait for.")] = None,
        next_action: str | None = None,
        fallback_action: str | None = None,
        note: str | None = None,
        risk: Literal["P0", "P1", "P2"] | None = None,
        check_interval: Annotated[str | None, Field(description="Duration, e.g. 6h.")] = None,
        skill: str | None = None,
    ) -> CallToolResult:
        """Add a task (status todo) to the legacy list or a scoped queue."""
        fields = compact(
            {
                "priority": priority,
                "due_at": due,
                "not_before": not_before,
                "next_action": next_action,
                "fallback_action": fallback_action,
                "last_progress_note": note,
                "risk": risk,
                "check_interval": check_interval,
                "skill": skill,
            }
        )
        keys = ("id", "title", "status", "scope", "priority", "risk", "due_at", "not_before", "after", "key")

        def create(lg: Ledger) -> dict[str, Any]:
            added = compact(lg.add(title, scope=scope, task_id=id, key=key, after=after, **fields), keys)
            return {**added, "title": clip(added["title"])}  # the caller has it: an echo stays short

        return await calls(create)

    @tool(READ_ONLY)
    async def ready(
        scope: Scope = None,
        explain: Annotated[bool, Field(description="Also the tasks not ready, with reasons.")] = False,
        limit: Limit = DEFAULT_LIMIT,
    ) -> CallToolResult:
        """What pop would hand out, in pop order. Reasons a task is not ready: claimed, stale,
        blocked_on, waiting_for, deferred, scoped."""
        keys = (
            "id",
            "scope",
            "title",
            "status",
            "priority",
            "ready",
            "reasons",
            "claimed_by",
            "lease_expires_at",
            "not_before",
            "blocked_on",
            "waiting_for",
        )

        def look(lg: Ledger) -> dict[str, Any]:
            rows = [compact(r, keys) for r in lg.ready(scope=scope, explain=explain)]
            return listing("tasks", [{k: clip(v) for k, v in r.items()} for r in rows], limit)

        return await calls(look)

    @tool(READ_ONLY)
    async def due(limit: Limit = DEFAULT_LIMIT) -> CallToolResult:
        """The tasks entering this heartbeat round, with risk (P0 act now, P1 tell the user, P2
        routine) and reasons: next_check, overdue, blocked_check, waiting_check, stale."""
        keys = ("id", "scope", "title", "status", "risk", "reasons", "due_at", "blocker", "next_action")

        def look(lg: Ledger) -> dict[str, Any]:
            rows = [{k: clip(v) for k, v in compact(r, keys).items()} for r in lg.due()]
            return listing("tasks", rows, limit)

        return await calls(look)

    @tool(WRITES)
    async def notify(
        id: str,
        risk: Literal["P0", "P1", "P2"] | None = None,
        scope: Scope = None,
        reason: Annotated[str | None, Field(description="Why the reminder.")] = None,
        suggestion: str | None = None,
        fallback: str | None = None,
        lang: Lang | None = None,
    ) -> CallToolResult:
        """May a reminder about task id go out now (quiet hours, repeat window)? Recorded.
        decision "sent": send `message`; "suppressed": send nothing (`reason` says why)."""
        keys = ("id", "decision", "reason", "risk", "message")

        def ask(lg: Ledger) -> dict[str, Any]:
            answer = lg.notify(
                id, risk, scope=scope, reason=reason, suggestion=suggestion, fallback=fallback, lang=lang
            )
            return compact(answer, keys)

        return await calls(ask)

    @tool(WRITES)
    async def proactive(
        topic: str | None = None, suggestion: str | None = None, lang: Lang | None = None
    ) -> CallToolResult:
        """May a proactive message on topic go out now (daily cap, gaps, quiet hours)? Recorded.
        decision "sent": send `message`; "suppressed": send nothing (`reason` says why)."""
        keys = ("decision", "reason", "message", "sent_today")
        return await calls(lambda lg: compact(lg.proactive(topic, suggestion, lang=lang), keys))

    @tool(IDEMPOTENT)
    async def recur_due(
        claim: Annotated[bool, Field(description="Hand each out: not again this period.")] = False,
        limit: Limit = DEFAULT_LIMIT,
    ) -> CallToolResult:
        """The recurrences and proactive tasks due now (CraftBot's recurring_read). Judge each
        conditions_to_check yourself; record each run with recur_outcome."""
        return await calls(
            lambda lg: listing("rules", [rule_item(r) for r in lg.recur_due(claim=claim)], limit)
        )

    @tool(WRITES)
    async def recur_outcome(id: str, result: str, success: bool = True) -> CallToolResult:
        """Record a run of a recurrence or proactive task: an outcome, run count + 1, last run."""
        keys = ("id", "run_count", "last_run_at")
        return await calls(lambda lg: compact(lg.recur_outcome(id, result=result, success=success), keys))

    @tool(READ_ONLY)
    async def sql(
        query: Annotated[str, Field(description="One statement; tables and views: docs/sql.md.")],
        limit: Annotated[int, Field(ge=1, le=1_000, description="At most this many rows (1-1000).")] = 100,
        timeout: Annotated[
            str | None, Field(description="e.g. 10s (default and most: setting sql.timeout).")
        ] = None,
    ) -> CallToolResult:
        """Run one read-only SQL statement on the ledger (the database refuses writes)."""

        def query_rows(lg: Ledger) -> dict[str, Any]:
            from heartbeat.reporting.output import nested_too_deep
            from heartbeat.reporting.table import Table

            try:
                with lg.sql_stream(query, timeout=_within_sql_timeout(lg, timeout)) as answer:
                    # the rows listed are held, the rest only counted as they pass (an answer of
                    # millions of rows took gigabytes, then ran past its time limit)
                    rows = list(itertools.islice(answer.rows, limit))
                    more = sum(1 for _ in answer.rows)
                found = Table(answer.columns, rows, answer.zone, answer.meta, answer.sparse)
                return table_of(found.names, found.records(), limit, more=more)
            except RecursionError:
                raise nested_too_deep() from None

        return await calls(query_rows)

    @tool(READ_ONLY)
    async def report(
        kind: Literal["outcomes", "failures", "notifications", "queue", "recurrences"],
        since: Annotated[str | None, Field(description="ISO date/time, or a duration back like 7d.")] = None,
        until: str | None = None,
        by: Annotated[
            str | None, Field(description="Grouping, e.g. day, skill, task, scope, reason.")
        ] = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> CallToolResult:
        """A report: outcomes (success rate, durations), failures, notifications (sent vs
        suppressed), queue depth, recurrences."""

        def run(lg: Ledger) -> dict[str, Any]:
            found = lg.report(kind, since=since, until=until, by=by)
            meta = compact(found, ("report", "by", "since", "until", "timezone"))
            return table_of(found["columns"], found["rows"], limit, **meta)

        return await calls(run)

    server: MCPServer[Any] = _Server(
        "hb", version=__version__, instructions=INSTRUCTIONS, tools=tools, log_level="WARNING"
    )
    return server, calls


def _within_sql_timeout(ledger: Ledger, timeout: str | None) -> str | None:
    """The ``sql`` tool's timeout: at most the setting ``sql.timeout``. The server's calls take
    turns on one ledger, so a client asking for hours would hold every other client's calls
    that long; the operator's setting bounds it (InvalidInput past it, naming both)."""
    if timeout is None:
        return None
    most = ledger.ctx.settings.sql_timeout
    if parse_duration(timeout, what="sql timeout") > parse_duration(most, what="sql.timeout"):
        raise InvalidInput(
            f"timeout {timeout} is past the setting sql.timeout ({most}), the most a client of "
            "hb mcp may ask for: the server's calls take turns"
        )
    return timeout


class _Server(MCPServer[Any]):
    """The SDK's server, whose ``prompts/get`` of a name it does not know (hb offers no prompts)
    is an Invalid params error naming it, not a ValueError logged twice with its traceback,
    each repeating the name as the client sent it, and answered with code 0."""

    async def get_prompt(self, name: str, arguments: Any = None, context: Any = None) -> Any:
        if self._prompt_manager.get_prompt(name) is None:
            raise MCPError(INVALID_PARAMS, f"unknown prompt {clip(name, 40)!r}: hb offers no prompts")
        return await super().get_prompt(name, arguments, context)


def slim_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema without what an agent pays for and never needs: titles, and the null
    branch and null default of optional arguments (leaving one out is how to say none)."""
    properties = {}
    for name, prop in schema.get("properties", {}).items():
        prop = {k: v for k, v in prop.items() if k != "title"}
        options = prop.pop("anyOf", None)
        if options is not None:
            kinds = [o for o in options if o != {"type": "null"}]
            prop = {**kinds[0], **prop} if len(kinds) == 1 else {"anyOf": kinds, **prop}
        if "default" in prop and prop["default"] is None:
            del prop["default"]
        properties[name] = prop
    slim: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("required"):
        slim["required"] = schema["required"]
    return slim


def _stderr(message: str) -> None:
    print(f"hb mcp: {message}", file=sys.stderr, flush=True)


# --- transports ------------------------------------------------------------------------------


def serve_stdio(server: MCPServer[Any]) -> bool:
    """Serve on standard input and output until the client closes them (as the SDK's
    ``run("stdio")``, with its reading screened by :class:`AnsweredReads`), or a signal stops it:
    True for SIGTERM, KeyboardInterrupt for Ctrl-C, both at once, whatever the client does. A
    standard output that fails ends the serving too: BrokenPipeError (or ConnectionResetError)
    when the client went away, :class:`~heartbeat.errors.OutputFailed` for another reason (a
    full disk). A call running then finishes in the ledger's thread; its answer is not sent."""
    import signal

    import anyio

    stopped_by = anyio.run(_serve_stdio, server)
    if stopped_by == signal.SIGINT:
        raise KeyboardInterrupt
    return stopped_by == signal.SIGTERM


async def _serve_stdio(server: MCPServer[Any]) -> int | None:
    """Serve (see :func:`serve_stdio`); the signal that stopped it, if one did."""
    import anyio
    from mcp.server.stdio import stdio_server

    lowlevel = getattr(server, "_lowlevel_server", None)  # the SDK's own run_stdio_async serves it so
    if lowlevel is None:  # an SDK that keeps it elsewhere: its own runner, reads unscreened
        await server.run_stdio_async()
        return None
    signals: list[int] = []
    with _standard_input() as wire, _standard_output() as out, anyio.CancelScope() as serving:
        out.stop = serving.cancel
        async with anyio.create_task_group() as watching:
            watching.start_soon(_stop_on_signal, serving, signals)
            lines = ScreenedLines(wire)
            async with stdio_server(stdin=cast(Any, lines), stdout=cast(Any, out)) as (
                read_stream,
                write_stream,
            ):
                lines.answers = write_stream
                reads = AnsweredReads(read_stream, write_stream)
                await lowlevel.run(reads, write_stream, lowlevel.create_initialization_options())
            watching.cancel_scope.cancel()  # the client closed its input: the server is done
    if out.failed is not None:
        raise out.failed
    return signals[0] if signals else None


async def _stop_on_signal(serving: Any, signals: list[int]) -> None:
    """Cancel ``serving`` at the first SIGINT or SIGTERM, noted in ``signals``. asyncio's own
    Ctrl-C cancels the server too, but waits for the threads reading standard input, so it
    stopped only when the client closed it; and SIGTERM killed the process mid-write. Signals
    are the main thread's: elsewhere (an embedding host) they are left as they are."""
    import signal

    import anyio

    if threading.current_thread() is not threading.main_thread():
        return
    with contextlib.ExitStack() as stack:
        try:
            received = stack.enter_context(anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM))
        except NotImplementedError:  # an event loop without signal handlers: asyncio's Ctrl-C only
            return
        async for signum in received:
            signals.append(signum)
            serving.cancel()
            return


class _OwnThread:
    """Blocking calls made one at a time on a daemon thread of their own, awaited as a future: a
    read of standard input that waits for the client, or a write it does not take, never holds
    up the server's stop. (The SDK reads and writes on anyio's worker threads, which a
    cancellation and the interpreter's exit both wait for: a Ctrl-C waited for the client to
    close its input.)"""

    def __init__(self, name: str) -> None:
        import queue

        self.jobs: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        threading.Thread(target=self._work, name=name, daemon=True).start()

    def _work(self) -> None:
        while True:
            future, job = self.jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job())
            except BaseException as exc:  # (handed to the caller, which raises it)
                future.set_exception(exc)

    async def __call__(self, job: Callable[[], Any]) -> Any:
        future: Future[Any] = Future()
        self.jobs.put((future, job))
        return await asyncio.wrap_future(future)


class _Lines:
    """The protocol's input lines, read on a thread of their own (:class:`_OwnThread`)."""

    def __init__(self, wire: io.TextIOBase) -> None:
        self.wire = wire
        self.reader = _OwnThread("hb-mcp-stdin")
        self.ended = False

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line: str = "" if self.ended else await self.reader(self.wire.readline)
        if not line:
            self.ended = True
            raise StopAsyncIteration
        return line


@contextmanager
def _standard_input() -> Iterator[Any]:
    """The protocol's input lines (:class:`_Lines`), as the SDK's stdio transport claims them:
    read through a private copy of descriptor 0 while descriptor 0 itself reads the null device
    (a tool, or a program one runs, reads nothing of the protocol), put back on the way out.
    Where standard input is not a descriptor (an embedding host's stream), its buffer as it is."""
    try:
        fd = sys.stdin.buffer.fileno()
        private = os.dup(fd)  # (not inherited by a program a tool runs)
    except (AttributeError, OSError, ValueError):
        private = -1
    if private <= 2:  # no descriptor, or a standard one was closed: the buffer in place
        yield _Lines(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
        return
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, fd)
    os.close(null)
    # never closed: its thread may still be blocked reading it after the server stops
    wire = io.TextIOWrapper(os.fdopen(private, "rb", closefd=False), encoding="utf-8", errors="replace")
    try:
        yield _Lines(wire)
    finally:
        os.dup2(private, fd)


class _Output:
    """The protocol's output, each message written whole (:func:`_write_whole`) on a thread of
    its own (:class:`_OwnThread`). The first write that fails is kept (``failed``: the client's
    going away as BrokenPipeError or ConnectionResetError, any other failure as OutputFailed),
    ``stop`` is called, and what follows is dropped: the SDK's writer would raise it out of its
    task group, an internal error, or wait for ever for a reader that will not come back."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.writer = _OwnThread("hb-mcp-stdout")
        self.failed: OSError | None = None
        self.stop: Callable[[], None] = lambda: None

    async def write(self, text: str) -> None:
        if self.failed is not None:
            return
        data = text.encode("utf-8")
        try:
            await self.writer(lambda: _write_whole(self.fd, data))
        except (BrokenPipeError, ConnectionResetError) as gone:
            self.failed = gone
            self.stop()
        except OSError as exc:
            from heartbeat.errors import OutputFailed

            self.failed = OutputFailed(exc.errno, exc.strerror)
            self.stop()

    async def flush(self) -> None:
        """Nothing to do: each write went out whole."""


def _write_whole(fd: int, data: bytes) -> None:
    """``data`` written to ``fd`` to its last byte (a pipe takes part of a long message; one its
    reader made non-blocking is waited for when full)."""
    import select

    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])


@contextmanager
def _standard_output() -> Iterator[_Output]:
    """The protocol's output (:class:`_Output`), as the SDK's stdio transport claims it: written
    through a private copy of descriptor 1 while descriptor 1 itself points at standard error
    (what a tool, or a program one runs, prints never lands in the protocol), put back on the
    way out. Where standard output is not a descriptor (an embedding host's stream), its own."""
    try:
        fd = sys.stdout.fileno()
        private = os.dup(fd)
    except (AttributeError, OSError, ValueError):
        private = -1
    if private <= 2:
        yield _HostOutput() if private < 0 else _Output(fd)
        return
    os.dup2(2, fd)
    try:  # (the copy is never closed: its thread may still be blocked writing to it)
        yield _Output(private)
    finally:
        os.dup2(private, fd)


class _HostOutput(_Output):
    """An embedding host's standard output (no descriptor): written through its own stream."""

    def __init__(self) -> None:
        super().__init__(-1)

    async def write(self, text: str) -> None:
        if self.failed is None:
            sys.stdout.write(text)
            sys.stdout.flush()


# a request whose id JSON-RPC 2.0 or MCP does not take (null, a fraction, true, an object): the
# SDK reads the line as a notification and drops it (odd_id_refusal reads such a line again).
_ODD_ID = re.compile(r'"id"\s*:\s*(?:null|true|false|[{\[]|-?\d+(?:\.\d|[eE]))')


class ScreenedLines:
    """The protocol's input lines on their way to the SDK's stdio reader, each request line whose
    ``id`` is not a string or an integer (MCP asks for one; JSON-RPC's null is not an id a reply
    can be told by) answered here, Invalid Request with id null, and kept from the SDK: it
    would read the line as a notification and answer nothing, and its client would wait for
    ever. ``answers``: the stream the answers are written to (set once the transport is up)."""

    def __init__(self, lines: Any) -> None:
        self.lines = aiter(lines)
        self.answers: Any = None

    def __aiter__(self) -> ScreenedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line: str = await anext(self.lines)
            answer = odd_id_refusal(line)
            if answer is None or self.answers is None:
                return line
            await self.answers.send(SessionMessage(answer))


def odd_id_refusal(line: str) -> JSONRPCError | None:
    """Invalid Request (id null) for a JSON-RPC request ``line`` whose id is not a string or an
    integer; None for anything else (the SDK reads it as it is). Only a line :data:`_ODD_ID`
    finds is read again."""
    if _ODD_ID.search(line) is None:
        return None
    try:
        request = json.loads(line, parse_int=_Digits)
    except (ValueError, RecursionError):
        return None  # the SDK refuses it too: AnsweredReads answers it
    if not isinstance(request, dict) or "id" not in request or not isinstance(request.get("method"), str):
        return None
    request_id = request["id"]
    if isinstance(request_id, str | _Digits):
        return None
    shown = "null" if request_id is None else type(request_id).__name__
    shown = {
        "bool": "a boolean",
        "float": "a number with a fraction or an exponent",
        "dict": "an object",
        "list": "an array",
    }.get(shown, shown)
    message = f"not a JSON-RPC 2.0 request: its id is {shown}; give a string or an integer"
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=message))


def unreadable(item: SessionMessage | Exception) -> JSONRPCError | None:
    """The error answer to a request line the SDK's parser refused though it is JSON with an
    id: nested deeper than the parser's 200 levels, a lone surrogate escape (not text), a
    number of more than 4,300 digits (the id itself may be one: it is answered as sent), or
    not a JSON-RPC 2.0 request (:func:`_invalid_request`). The SDK drops such a line, so its
    client would wait for an answer for ever. None for anything else (a message, or a line
    with no id to answer), which goes on as it is."""
    if not isinstance(item, ValidationError):
        return None
    if item.error_count() != 1:
        return _invalid_request(item)
    error = item.errors(include_url=False)[0]
    line = error.get("input")
    if error["type"] != "json_invalid" or not isinstance(line, str):
        return None
    try:  # an integer is read as its digits: one past Python's 4,300 is no ValueError here
        request = json.loads(line, parse_int=_Digits)
        request_id = request.get("id") if isinstance(request, dict) else None
    except RecursionError:  # deeper than Python's json reads (about 1,000 levels)
        request_id = _top_level_id(line)
    except ValueError:
        return None
    if isinstance(request_id, _Digits):
        request_id = request_id.value()
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        return None
    try:
        if isinstance(request_id, str):
            request_id.encode("utf-8")
    except UnicodeEncodeError:  # an id holding a lone surrogate: no answer could carry it
        return None
    failure = ErrorData(code=PARSE_ERROR, message=f"cannot read this request: {_unread(error['msg'])}")
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=failure)


def _unread(reason: str) -> str:
    """Why the SDK's parser (``reason``: its message) could not read a line of JSON."""
    if "recursion limit" in reason:
        return "its JSON is nested deeper than 200 levels"
    if "number out of range" in reason:
        return f"it holds a number of more than {sys.get_int_max_str_digits():,} digits"
    return f"it holds a lone surrogate escape or other text that is not Unicode ({reason})"


def _invalid_request(item: ValidationError) -> JSONRPCError | None:
    """The error answer (Invalid Request, as JSON-RPC 2.0 asks) to a JSON object with a method
    and an id that is not a JSON-RPC 2.0 request (``"jsonrpc": "1.0"``, a method that is not a
    string): the SDK drops it, and its client would wait for ever. None for anything else."""
    errors = item.errors(include_url=False)
    inputs = (e["input"] for e in errors if e["type"] == "missing")
    request = next((given for given in inputs if isinstance(given, dict)), None)
    if request is None or "method" not in request:
        return None  # not a request: a malformed answer or notification has no one waiting
    request_id = request.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        return None
    if request.get("jsonrpc") != "2.0":
        reason = 'its "jsonrpc" member is not "2.0"'
    elif not isinstance(request["method"], str):
        reason = 'its "method" is not a string'
    else:
        reason = " ".join(str(errors[0]["msg"]).split())
    failure = ErrorData(code=INVALID_REQUEST, message=f"not a JSON-RPC 2.0 request: {reason}")
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=failure)


class _Digits(str):
    """An integer of a request line as its JSON text (``json.loads``' ``parse_int``): the line's
    other integers are not needed, and its id may be longer than ``int()`` reads."""

    def value(self) -> int:
        """The integer, its digits read in pieces ``int()`` takes (past them, a number is
        only arithmetic, which has no limit)."""
        sign, digits = (-1, self[1:]) if self.startswith("-") else (1, str(self))
        step = 1000
        value = 0
        for start in range(0, len(digits), step):
            piece = digits[start : start + step]
            value = value * 10 ** len(piece) + int(piece)
        return sign * value


def _top_level_id(line: str) -> Any:
    """The ``id`` member of the JSON object ``line``, read without reading the members' values
    (a value nested too deep for ``json.loads`` is skipped by its brackets); None when there is
    none, or the text is not such an object."""
    from heartbeat.formats.json_edit import brackets

    decoder = json.JSONDecoder(parse_int=_Digits)
    blank = " \t\r\n"

    def skip(i: int) -> int:
        while i < len(line) and line[i] in blank:
            i += 1
        return i

    def past_value(i: int) -> int:
        """Where the value at ``i`` ends (a container where its brackets close)."""
        if line[i] not in "[{":
            return decoder.raw_decode(line, i)[1]
        return next(at + 1 for at, depth in brackets(line, i) if depth == 0)  # StopIteration: unclosed

    try:
        i = skip(0)
        if line[i] != "{":
            return None
        i = skip(i + 1)
        while line[i] == '"':
            key, i = decoder.raw_decode(line, i)
            i = skip(i)
            if line[i] != ":":
                return None
            i = skip(i + 1)
            if key == "id" and line[i] not in "[{":
                found = decoder.raw_decode(line, i)[0]
                return found.value() if isinstance(found, _Digits) else found
            i = skip(past_value(i))
            if line[i] != ",":
                return None
            i = skip(i + 1)
    except (ValueError, IndexError, StopIteration):
        return None
    return None


def _blank(error: ValidationError) -> bool:
    """Whether the line the SDK's parser refused is blank (a separator some clients write between
    messages: nothing to answer)."""
    line = error.errors(include_url=False)[0].get("input")
    return isinstance(line, str) and not line.strip()


class AnsweredReads:
    """The SDK's stdio read stream, with each line its parser refused taken out of it and the
    error answer (:func:`refusal`) written back instead: the SDK drops such a line, and a client
    would wait for its answer for ever."""

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self.inner = inner
        self.write_stream = write_stream

    @property
    def last_context(self) -> Any:
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item: SessionMessage | Exception = await self.inner.receive()
            if not await self.answered(item):
                return item

    async def answered(self, item: SessionMessage | Exception) -> bool:
        if not isinstance(item, ValidationError) or _blank(item):
            return False
        await self.write_stream.send(SessionMessage(refusal(item)))
        return True

    def __aiter__(self) -> AnsweredReads:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        while True:
            item: SessionMessage | Exception = await self.inner.__anext__()
            if not await self.answered(item):
                return item

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> AnsweredReads:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class BearerGate:
    """An ASGI app in front of another: HTTP requests without ``Authorization: Bearer <token>``
    get 401 and never reach it, and a request with more than one Authorization header gets 400
    (the header is a single field, RFC 9110 section 11.6.2: which copy a proxy or the app behind
    would read is a guess). The token is compared in constant time and never logged. Before
    the token, as hb serve does: another HTTP version than 1.x is 505, another path than
    :data:`HTTP_PATH` 404 (the SDK's own are text), a request with both Content-Length and
    Transfer-Encoding 400 (h11 would read the chunks and drop the length: a proxy in front
    may have read the other). Bound to loopback (``loopback``), it answers only a Host header
    hb serve answers (:func:`heartbeat.serve.loopback_host`: 421 for another site's name, which a
    DNS rebinding points at 127.0.0.1), and only an Origin naming loopback likewise (403), when
    there is one. After the token, as hb serve does, the body: a Content-Length
    past :data:`MAX_BODY` is 413 before any of it is read, and so is a chunked body as soon as
    it grows past that; the app is handed the body read whole (it holds at most
    :data:`MAX_BODY` bytes here, uvicorn's own buffer stays under its flow-control limit). Each
    refusal closes the connection."""

    def __init__(self, app: Any, token: str, *, loopback: bool = False) -> None:
        self.app = app
        self.token = token.encode()
        self.loopback = loopback

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            if scope.get("http_version") not in ("1.0", "1.1"):  # h11 takes any HTTP/d.d
                await self.refuse(send, 505, {"error": "HTTP version not supported: use HTTP/1.1"})
                return
            elsewhere = _elsewhere(scope.get("headers", ())) if self.loopback else None
            if elsewhere is not None:
                await self.refuse(send, *elsewhere)
                return
            raw = scope.get("raw_path")  # as sent: "/%6dcp" is decoded to the path "/mcp"
            if scope.get("path") != HTTP_PATH or (raw is not None and raw != HTTP_PATH.encode()):
                # as hb serve: only the exact path (no /mcp/, no /%6dcp)
                await self.refuse(send, 404, {"error": "not found"})
                return
            names = [k.lower() for k, _ in scope.get("headers", ())]
            if b"transfer-encoding" in names and b"content-length" in names:  # RFC 9112 section 6.1
                error = "both Content-Length and Transfer-Encoding: send one"
                await self.refuse(send, 400, {"error": error})
                return
            given = [v for k, v in scope.get("headers", ()) if k.lower() == b"authorization"]
            if len(given) > 1:
                await self.refuse(send, 400, {"error": "more than one Authorization header"})
                return
            if not self.authorized(given[0] if given else b""):
                challenge = (b"www-authenticate", b'Bearer realm="hb"')
                await self.refuse(send, 401, {"error": "missing or wrong bearer token"}, challenge)
                return
            too_large = {"error": f"body over {MAX_BODY} bytes"}
            declared = [v for k, v in scope.get("headers", ()) if k.lower() == b"content-length"]
            if declared and int(declared[0]) > MAX_BODY:  # (h11 took it: one plain number)
                await self.refuse(send, 413, too_large)
                return
            body = bytearray()
            while True:  # until the body's end, past MAX_BODY or the client gone
                message = await receive()
                if message["type"] != "http.request":  # the client went away: no one to answer
                    return
                chunk = message.get("body", b"")
                if len(body) + len(chunk) > MAX_BODY:  # (a chunked body: its length was not said)
                    await self.refuse(send, 413, too_large)
                    return
                body += chunk
                if not message.get("more_body", False):
                    break
            receive = _replay(bytes(body), receive)
            send = _json_errors(send)
        await self.app(scope, receive, send)

    @staticmethod
    async def refuse(send: Any, status: int, payload: dict[str, str], *extra: tuple[bytes, bytes]) -> None:
        body, headers = _json_body(payload)
        # the body, if any, is unread: the connection ends here
        headers += [(b"connection", b"close"), *extra]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def authorized(self, header: bytes) -> bool:
        scheme, _, credentials = header.partition(b" ")
        if scheme.lower() != b"bearer" or not credentials.strip():
            return False
        return hmac.compare_digest(credentials.strip(), self.token)


def _elsewhere(headers: Sequence[tuple[bytes, bytes]]) -> tuple[int, dict[str, str]] | None:
    """The refusal of a request to a server bound to loopback from elsewhere: a Host header hb
    serve refuses (421, in its words), or an Origin that names no loopback address (403: a page
    of another site). None when both name loopback, or there is none."""
    from urllib.parse import urlsplit

    from heartbeat.serve import MISDIRECTED, loopback_host

    def first(name: bytes) -> str | None:
        return next((v.decode("latin-1") for k, v in headers if k.lower() == name), None)

    if not loopback_host(first(b"host")):
        return 421, {"error": MISDIRECTED}
    origin = first(b"origin")
    if origin is None:
        return None
    try:
        parts = urlsplit(origin.strip())
        named = parts.scheme.lower() in ("http", "https") and bool(parts.netloc)
    except ValueError:  # an address urlsplit cannot read ("http://[::1")
        named = False
    if named and loopback_host(parts.netloc):
        return None
    return 403, {"error": FOREIGN_ORIGIN}


FOREIGN_ORIGIN = (
    "the Origin header names no loopback address: this server answers pages of 127.0.0.1, ::1 and localhost"
)


class EnvelopeCheck:
    """An ASGI app in front of the SDK's, behind :class:`BearerGate` (which hands on the body
    whole): a POSTed body that is not a JSON-RPC 2.0 message is answered here, 400 with
    :func:`envelope_refusal`'s error, one line."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST":
            message = await receive()
            body = message.get("body", b"") if message["type"] == "http.request" else b""
            answer = envelope_refusal(body) if body else None
            if answer is not None:
                data = answer.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
                await send({"type": "http.response.start", "status": 400, "headers": headers})
                await send({"type": "http.response.body", "body": data})
                return
            receive = _again(message, receive)  # the SDK reads the body as it came
        await self.app(scope, receive, send)


def _again(message: dict[str, Any], receive: Any) -> Any:
    """An ASGI ``receive`` that hands out ``message`` once more, then what ``receive`` brings."""
    pending = [message]

    async def again() -> Any:
        return pending.pop() if pending else await receive()

    return again


def envelope_refusal(body: bytes) -> JSONRPCError | None:
    """The answer to a POSTed body that is not a JSON-RPC 2.0 message, as the stdio transport
    gives it (:func:`unreadable`: the request's id where it has one, else null), one line; None
    for a message, or a body that is not UTF-8 (the SDK refuses those itself). The SDK answered
    with pydantic's report, several lines quoting the input, as Invalid params."""
    from mcp_types import jsonrpc_message_adapter

    try:
        text = body.decode("utf-8")
        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except UnicodeDecodeError:
        return None
    except ValidationError as exc:
        return refusal(exc)
    return odd_id_refusal(text)


def refusal(exc: ValidationError) -> JSONRPCError:
    """The answer to a line or body the SDK's parser refused: :func:`unreadable`'s, under the
    request's id, or where there is no id to answer (not JSON, a batch array, ``null``, an
    object that is no message), a parse error or Invalid Request with id null, as JSON-RPC 2.0
    asks."""
    answer = unreadable(exc)
    if answer is not None:
        return answer
    error = exc.errors(include_url=False)[0]
    if error["type"] != "json_invalid":
        message = "not a JSON-RPC 2.0 message: expected an object with jsonrpc, and method or result"
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=message))
    try:  # JSON the SDK's parser could not read (too deep, ...), or no JSON at all
        json.loads(str(error.get("input")), parse_int=_Digits)
        reason = _unread(error["msg"])
    except RecursionError:
        reason = _unread("recursion limit")
    except ValueError:
        reason = "not JSON"
    return JSONRPCError(
        jsonrpc="2.0",
        id=None,
        error=ErrorData(code=PARSE_ERROR, message=f"cannot read this request: {reason}"),
    )


def _json_body(payload: dict[str, str]) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """A JSON answer's body, one line, and its Content-Type and Content-Length headers."""
    body = (dumps(payload) + "\n").encode()
    return body, [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]


def _json_errors(send: Any) -> Any:
    """An ASGI ``send`` that passes every answer on, but for an error the app answers in text
    (the SDK's 400 for a Content-Type it does not take): that one goes out as hb's other
    refusals do, ``{"error": TEXT}`` in JSON, its other headers kept. Answers already JSON (the
    SDK's JSON-RPC errors) pass as they are."""
    held: dict[str, Any] | None = None
    parts: list[bytes] = []

    async def wrapped(message: dict[str, Any]) -> None:
        nonlocal held
        if message["type"] == "http.response.start" and message["status"] >= 400:
            kind = next((v for k, v in message.get("headers", ()) if k.lower() == b"content-type"), b"")
            if not kind.lower().startswith(b"application/json"):
                held = message
                return
        if held is None or message["type"] != "http.response.body":
            await send(message)
            return
        parts.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        text = b"".join(parts).decode("utf-8", "replace").strip() or HTTPStatus(held["status"]).phrase
        body, content = _json_body({"error": text})
        kept = [
            (k, v)
            for k, v in held.get("headers", ())
            if k.lower() not in (b"content-type", b"content-length")
        ]
        await send({**held, "headers": kept + content})
        await send({"type": "http.response.body", "body": body})

    return wrapped


def _replay(body: bytes, receive: Any) -> Any:
    """An ASGI ``receive`` that hands out ``body``, whole, then what ``receive`` brings (the
    client going away)."""
    return _again({"type": "http.request", "body": body, "more_body": False}, receive)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free one); InvalidInput when it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise InvalidInput(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in str(host) else str(host)
    return f"http://{shown}:{port}{HTTP_PATH}"


class _Stop(Exception):
    """SIGTERM: stop serving as Ctrl-C does."""


def serve_http(server: MCPServer[Any], sock: socket.socket, token: str) -> None:
    """Serve streamable HTTP on ``sock`` behind the bearer token until SIGINT or SIGTERM, which
    end it cleanly (uvicorn shuts down, then re-raises the signal it caught: here, to return)."""
    import signal

    import uvicorn

    def stop(_signum: int, _frame: Any) -> None:
        raise _Stop

    from mcp.server.transport_security import TransportSecuritySettings

    from heartbeat.serve import is_loopback

    # the Host and Origin headers are checked in front, as hb serve checks them: the SDK's own
    # check took a Host without a port (port 80's) for another site's, and was off for a
    # loopback address other than 127.0.0.1 and ::1
    unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    sdk_app = server.streamable_http_app(streamable_http_path=HTTP_PATH, transport_security=unchecked)
    app = BearerGate(EnvelopeCheck(sdk_app), token, loopback=is_loopback(str(sock.getsockname()[0])))
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        from heartbeat.mcp_http import http_config

        uvicorn.Server(http_config(app)).run(sockets=[sock])
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
