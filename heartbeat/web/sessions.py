"""Dashboard sessions: what ``GET /login?token=...`` gives a browser instead of the token.

A session id is 256 random bits, unrelated to the token, held in the server's
memory only: it ends after :data:`SESSION_LIFETIME`, when the server stops,
or when :data:`MAX_SESSIONS` newer ones push it out. The cookie that carries
it is ``HttpOnly`` (no script reads it) and ``SameSite=Strict`` (no other site
makes the browser send it); it opens the read-only pages, never ``POST /poke``.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from http.cookies import CookieError, SimpleCookie

COOKIE = "hb_session"
SESSION_LIFETIME = 12 * 3600  # seconds a login lasts
MAX_SESSIONS = 256  # logins remembered at once; the oldest go first


class Sessions:
    """The live sessions of one server (thread-safe)."""

    def __init__(
        self,
        lifetime: float = SESSION_LIFETIME,
        limit: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lifetime = lifetime
        self.limit = limit
        self.clock = clock
        self._ends: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def new(self) -> str:
        """A new session id, valid for :attr:`lifetime` seconds."""
        sid = secrets.token_urlsafe(32)
        with self._lock:
            self._ends[sid] = self.clock() + self.lifetime
            while len(self._ends) > self.limit:
                self._ends.popitem(last=False)
        return sid

    def valid(self, sid: str | None) -> bool:
        """Whether ``sid`` is a live session (compared in constant time)."""
        if not sid:
            return False
        now = self.clock()
        with self._lock:
            for known, ends in list(self._ends.items()):
                if ends <= now:
                    del self._ends[known]
            return any(hmac.compare_digest(sid.encode(), known.encode()) for known in self._ends)

    def cookie(self, sid: str) -> str:
        """The ``Set-Cookie`` value that hands ``sid`` to the browser."""
        return f"{COOKIE}={sid}; HttpOnly; SameSite=Strict; Path=/; Max-Age={int(self.lifetime)}"


def session_of(cookie_header: str | None) -> str | None:
    """The session id a request's ``Cookie`` header carries, if any."""
    if not cookie_header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(cookie_header)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None
