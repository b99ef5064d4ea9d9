"""Why a queue task is not ready (``hb ready --explain``): a pure function of the task's state and now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from heartbeat.errors import InvalidInput
from heartbeat.rules.ready import QueueTask, reasons_for

NOW = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("task", "reasons"),
    [
        (QueueTask("todo"), []),
        (QueueTask("doing", lease_expires_at=NOW + timedelta(seconds=1)), ["claimed"]),
        (QueueTask("doing", lease_expires_at=NOW), ["stale"]),  # a lease ends at its instant
        (QueueTask("doing"), ["stale"]),  # imported as in progress: no claim record
        (QueueTask("todo", blocked_by="blocked_on_client: translator pending"), ["blocked_on"]),
        (QueueTask("blocked"), ["blocked_on"]),
        (QueueTask("todo", waiting_for=(("a", "failed"),)), ["waiting_for"]),
        (QueueTask("waiting"), ["waiting_for"]),
        (QueueTask("todo", not_before=NOW + timedelta(minutes=1)), ["deferred"]),
        (QueueTask("todo", not_before=NOW), []),  # due at its instant, as pop takes it
        (QueueTask("snoozed"), ["deferred"]),
        (
            QueueTask("blocked", not_before=NOW + timedelta(days=1), waiting_for=(("a", "todo"),)),
            ["blocked_on", "waiting_for", "deferred"],
        ),
    ],
)
def test_reasons(task: QueueTask, reasons: list[str]) -> None:
    assert reasons_for(task, NOW) == reasons


def test_scoped_comes_first_and_naive_now_is_refused() -> None:
    assert reasons_for(QueueTask("todo"), NOW, needs_scope=True) == ["scoped"]
    assert reasons_for(QueueTask("blocked"), NOW, needs_scope=True) == ["scoped", "blocked_on"]
    with pytest.raises(InvalidInput):
        reasons_for(QueueTask("todo"), NOW.replace(tzinfo=None))
