"""Dashboard sessions: what ``GET /login?token=...`` gives a browser instead of the token.

A session id is 256 random bits, unrelated to the token, held in the server's
memory only: it ends after :data:`SESSION_LIFETIME`, when the server stops,
or when :data:`MAX_SESSIONS` newer ones push it out. The cookie that carries
it is ``HttpOnly`` (no script reads it) and ``SameSite=Strict`` (no other site
makes the browser send it); it opens the read-only pages, never ``POST /poke``.
"""

from __future__ import annotations

import hmac
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

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


# the longest Cookie header read for a session: a browser's whole cookie jar for one host fits
MAX_COOKIE_HEADER = 8192
_SID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def session_of(cookie_header: str | None) -> str | None:
    """The session id a request's ``Cookie`` header carries, if any: the first ``hb_session``
    pair of ``name=value; ...`` (RFC 6265 section 5.4), its value as :meth:`Sessions.new` makes
    them. Read in one pass, by hand: the standard library's cookie parser takes seconds of CPU
    over a long header of backslashes (CVE-2024-7592, before Python 3.11.10), and one past
    :data:`MAX_COOKIE_HEADER` characters carries no session of hb's."""
    if not cookie_header or len(cookie_header) > MAX_COOKIE_HEADER:
        return None
    for pair in cookie_header.split(";"):
        name, equals, value = pair.partition("=")
        if equals and name.strip() == COOKIE:
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            return value if _SID.fullmatch(value) else None
    return None
