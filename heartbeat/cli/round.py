"""The heartbeat round: hb due, check, notify, proactive, seen, hygiene, heartbeat, poke, serve."""

from __future__ import annotations

from typing import Any

import click

from heartbeat.cli import complete as completion
from heartbeat.cli.base import (
    emit,
    fields_option,
    info,
    json_option,
    limit_option,
    pick,
    read_text_arg,
    say,
    sigterm_as_interrupt,
    state,
    table,
    warn,
)

NOT_SENT = 20  # notify/proactive decided not to send (SPEC.md section 2)

lang_option = click.option(
    "--lang",
    type=click.Choice(["en", "zh"]),
    default=None,
    help="Message language (default: setting lang, en).",
)


def _decision_exit(result: dict[str, Any]) -> None:
    if result["decision"] != "sent":
        info(f"suppressed: {result['reason']}")
        raise click.exceptions.Exit(NOT_SENT)


@click.command()
@fields_option
@limit_option
@json_option
def due(fields: str | None, limit: int | None) -> None:
    """List the tasks entering this heartbeat round, with their risk and reasons.

    Reasons: next_check, overdue, blocked_check, waiting_check, stale.

    \b
    Example:
      hb due
      hb --now 2026-05-01T09:00 due --json --fields id,risk,reasons --limit 10
    """
    rows = state().ledger().due()
    if limit is not None:
        rows = rows[:limit]
    if fields:
        emit(pick(rows, fields))
        return
    emit(
        rows,
        lambda rs: (
            table(
                [(t["id"], t["risk"], ",".join(t["reasons"]), t["status"], t["title"]) for t in rs],
                ["id", "risk", "reasons", "status", "title"],
            )
            if rs
            else "Nothing due."
        ),
    )


@click.command()
@click.option("--dry-run", is_flag=True, help="Decide and print, but record nothing.")
@lang_option
@json_option
def check(dry_run: bool, lang: str | None) -> None:
    """Run one round: decide reminders, move check times, print messages or HEARTBEAT_OK.

    Every decision, sent or suppressed, is recorded with its reason.

    \b
    Example:
      hb check
      hb check --dry-run --lang zh
      hb check --json
    """
    st = state()
    result = st.ledger().check(dry_run=dry_run, lang=lang)
    if st.verbose or dry_run:
        reasons: dict[str, int] = {}
        for d in result["decisions"]:
            if d["reason"]:
                reasons[d["reason"]] = reasons.get(d["reason"], 0) + 1
        held = ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items()))
        info(
            f"{'dry run: ' if dry_run else ''}checked {result['checked']} task(s): "
            f"{result['sent']} sent, {result['suppressed']} suppressed" + (f" ({held})" if held else "")
        )
    emit(result, lambda r: r["output"])


@click.command()
@click.argument("task_id", metavar="ID", shell_complete=completion.task_ids)
@click.option(
    "--risk",
    type=click.Choice(["P0", "P1", "P2"], case_sensitive=False),
    help="The reminder's risk (default: the task's assessed risk).",
)
@click.option("--reason", metavar="TEXT", help="Why the reminder; joins the message's status line.")
@click.option("--suggestion", metavar="TEXT", help="The immediate action (default: the task's next action).")
@click.option("--fallback", metavar="TEXT", help="The fallback action (default: the task's fallback action).")
@click.option(
    "--scope",
    metavar="PATH",
    shell_complete=completion.scopes,
    help="Disambiguate an id that exists in several queues.",
)
@lang_option
@json_option
def notify(
    task_id: str,
    risk: str | None,
    reason: str | None,
    suggestion: str | None,
    fallback: str | None,
    scope: str | None,
    lang: str | None,
) -> None:
    """Ask whether a reminder about a task may go out now; records the decision.

    Exit 0 and the message when it may be sent; exit 20 when it is suppressed
    (quiet_hours, repeat_window, no_suggestion, risk_p2).

    \b
    Example:
      hb notify task-1a2b3c4d --risk P1 --reason "no reply for two days"
      hb notify task-1a2b3c4d --risk P0 --json
    """
    result = (
        state()
        .ledger()
        .notify(
            task_id,
            risk.upper() if risk else None,
            scope=scope,
            reason=reason,
            suggestion=suggestion,
            fallback=fallback,
            lang=lang,
        )
    )
    emit(result, lambda r: r["message"] if r["decision"] == "sent" else "")
    _decision_exit(result)


@click.command()
@click.option("--topic", metavar="TEXT", help="The open loop the message is about.")
@click.option("--suggestion", metavar="TEXT", help="The concrete next step to suggest.")
@lang_option
@json_option
def proactive(topic: str | None, suggestion: str | None, lang: str | None) -> None:
    """Ask the proactive-chat limits whether a message may go out now; records the decision.

    Exit 0 and the message when it may be sent; exit 20 when it is suppressed
    (disabled, no_suggestion, quiet_hours, daily_cap, min_gap, recent_conversation).

    \b
    Example:
      hb proactive --topic "flight to Osaka" --suggestion "book the 09:10 train to the airport"
    """
    result = state().ledger().proactive(topic, suggestion, lang=lang)
    emit(result, lambda r: r["message"] if r["decision"] == "sent" else "")
    _decision_exit(result)


@click.command()
@click.option("--at", "at", metavar="WHEN", help="When the user spoke (ISO 8601; default: now).")
@json_option
def seen(at: str | None) -> None:
    """Record that the user just talked to the agent (holds proactive messages back).

    \b
    Example:
      hb seen
      hb seen --at 2026-05-01T09:30
    """
    emit(state().ledger().seen(at), lambda r: f"seen at {r['at']}")


@click.group()
def hygiene() -> None:
    """Memory hygiene bookkeeping (settings hygiene.enabled, hygiene.every_hours).

    \b
    Example:
      hb hygiene done
    """


@hygiene.command("done")
@click.option("--at", "at", metavar="WHEN", help="When the pass was made (ISO 8601; default: now).")
@json_option
def hygiene_done(at: str | None) -> None:
    """Record a memory hygiene pass; `hb check` stops listing it until the next is due.

    \b
    Example:
      hb hygiene done
    """
    result = state().ledger().hygiene_done(at)
    emit(result, lambda r: f"memory hygiene done at {r['at']}; next due {r['next_due_at']}")


@click.command()
@lang_option
@json_option
def heartbeat(lang: str | None) -> None:
    """One heartbeat tick: sync, materialise recurrences, run the round, export, print the brief.

    Prints the HEARTBEAT.md checklist (unless it is effectively empty) and the
    messages to send, or exactly HEARTBEAT_OK. Exits 75 at once while another
    heartbeat or poke holds the workspace guard.

    \b
    Example:
      hb heartbeat
      hb --workspace ~/agent --json heartbeat
    """
    st = state()
    given: list[dict[str, Any]] = []

    def deliver(result: dict[str, Any]) -> None:
        # the round has recorded its messages as sent: they are printed before the export
        given.append(result)
        for report in result["sync"]["reports"]:
            for message in report["preserved"]:
                warn(message)
        for skipped in (result["materialized"] or {}).get("skipped", []):
            warn(skipped["reason"])
        if not st.json:
            emit(result, lambda r: r["brief"])

    with sigterm_as_interrupt():
        try:
            result = st.ledger().heartbeat(lang=lang, deliver=deliver)
        except KeyboardInterrupt:
            if st.json and given:  # stopped in the export: the round's document still goes out
                emit({**given[0], "interrupted": True})
            raise
    if st.json:
        emit(result)


@click.command()
@click.argument("text", nargs=-1, required=True)
@click.option(
    "--key",
    metavar="KEY",
    help="Idempotent poke: a task poked (or added) with KEY already is returned, not made again.",
)
@json_option
def poke(text: tuple[str, ...], key: str | None) -> None:
    """Turn TEXT (or standard input with '-') into a task, under the heartbeat's guard.

    Empty text is a usage error (exit 2); exit 75 while a heartbeat runs.

    \b
    Example:
      hb poke "Check whether the build on main is green"
      echo "Summarise today's mail" | hb poke -
      hb poke --key build-check-2026-05-01 "Check whether the build on main is green"
    """
    from heartbeat.rules.checklist import trimmed

    body = _poke_text(text)
    if not trimmed(body):
        raise click.UsageError("poke text is empty: the text becomes the task")
    with sigterm_as_interrupt():
        task = state().ledger().poke(body, key=key)
    emit(task, lambda t: t["id"])


def _poke_text(text: tuple[str, ...]) -> str:
    """The poke's text: standard input for ``-`` (read_text_arg decodes it strictly, naming
    ``<stdin>:line:column``), else the arguments joined; InvalidInput (exit 1) naming the byte
    of an argument that is not UTF-8 (it arrives with surrogate escapes)."""
    from heartbeat.errors import InvalidInput

    if text == ("-",):
        return read_text_arg("-")
    body = " ".join(text)
    try:
        body.encode("utf-8")
    except UnicodeEncodeError as exc:
        byte = len(body[: exc.start].encode("utf-8"))  # the text before it is valid
        raise InvalidInput(f"TEXT is not valid UTF-8 text (byte {byte})") from None
    return body


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", default=8787, show_default=True, type=click.IntRange(0, 65535), help="0: any free port."
)
@click.option(
    "--token-file",
    metavar="FILE",
    help="File holding the bearer token [default: <workspace>/.agent/state/serve.token]; required.",
)
def serve(host: str, port: int, token_file: str | None) -> None:
    """Serve POST /poke, GET /healthz and a read-only dashboard over HTTP, on loopback.

    The server refuses to start without a token file. POST /poke answers 202
    with the task as JSON; 401 without the token, 400 for an empty or non-text
    body, 413 past 4 KiB, 409 while a heartbeat runs, 405 for other methods.

    The dashboard (Now, Decisions, Task, Outcomes, Runs; each page also as
    JSON: /now.json, ...) takes the bearer token, or a session cookie from
    opening /login?token=TOKEN once in the browser. Its HTML pages need the
    [web] extra (pip install 'hb-ledger[web]').

    \b
    Example:
      python -c 'import secrets; print(secrets.token_urlsafe(32))' > .agent/state/serve.token
      hb serve --port 8787
      curl -H "Authorization: Bearer $(cat .agent/state/serve.token)" -d "Check the build" \\
           http://127.0.0.1:8787/poke
      # the dashboard: open http://127.0.0.1:8787/login?token=... once, then http://127.0.0.1:8787/
    """
    from heartbeat import serve as serve_mod
    from heartbeat.errors import NotFound, Unavailable
    from heartbeat.ledger import Ledger

    st = state()
    ledger = st.ledger()  # opened (and created or upgraded) once, up front
    path = serve_mod.token_path(ledger, token_file)
    token = serve_mod.read_token(path)
    exposed = serve_mod.token_file_warning(path)
    if exposed is not None:
        warn(exposed)

    def open_ledger() -> Ledger:
        # made once above: a file gone since is refused, not made anew (and shown as empty)
        try:
            return Ledger.open(workspace=ledger.workspace, db=st.db, now=st.now, create=False)
        except NotFound as exc:
            raise Unavailable(exc.message) from None

    server = serve_mod.make_server(
        open_ledger,
        host=host,
        port=port,
        token=token,
        log=None if st.quiet else _log_line,
        ledger_file=st.ledger_file(),
    )
    if not serve_mod.is_loopback(str(server.server_address[0])):
        shown = host or "every address"  # (--host '' binds them all)
        warn(f"listening on {shown}, not loopback: anyone who can reach it and has the token can poke")
    info(f"hb serve: listening on {server.url} (POST /poke, GET /healthz, the dashboard at /)")
    from heartbeat.web.app import WEB_EXTRA, html_available

    if not html_available():
        warn(f"the dashboard's HTML pages need the [web] extra ({WEB_EXTRA}); its JSON and /poke work")
    serve_mod.serve(server)


def _log_line(message: str) -> None:
    say(f"hb serve: {message}")


COMMANDS: list[click.Command] = [due, check, notify, proactive, seen, hygiene, heartbeat, poke, serve]
