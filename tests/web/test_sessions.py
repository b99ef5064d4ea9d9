"""Dashboard sessions: random ids unrelated to the token, that expire and are bounded in number."""

from __future__ import annotations

from heartbeat.web.sessions import COOKIE, Sessions, session_of


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_session_lasts_its_lifetime() -> None:
    clock = FakeClock()
    sessions = Sessions(lifetime=60, clock=clock)
    sid = sessions.new()
    assert sessions.valid(sid)
    clock.now += 59
    assert sessions.valid(sid)
    clock.now += 1
    assert not sessions.valid(sid)
    assert not sessions.valid("") and not sessions.valid(None) and not sessions.valid(sid + "x")


def test_the_oldest_sessions_give_way_past_the_limit() -> None:
    sessions = Sessions(limit=3, clock=FakeClock())
    ids = [sessions.new() for _ in range(5)]
    assert [sessions.valid(sid) for sid in ids] == [False, False, True, True, True]
    assert len(set(ids)) == 5 and all(len(sid) >= 40 for sid in ids)


def test_the_cookie_is_http_only_and_same_site_strict() -> None:
    sessions = Sessions(lifetime=3600)
    cookie = sessions.cookie("abc")
    assert cookie == f"{COOKIE}=abc; HttpOnly; SameSite=Strict; Path=/; Max-Age=3600"


def test_the_session_is_read_from_the_cookie_header() -> None:
    assert session_of(f"a=1; {COOKIE}=xyz; b=2") == "xyz"
    assert session_of("a=1") is None and session_of(None) is None and session_of("") is None
    assert session_of('bad"cookie') is None
