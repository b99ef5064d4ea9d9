"""The machine's zone, read as the C library reads TZ: an unset ``timezone`` stands for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from heartbeat.clock import machine_zone_name

# What glibc (through Python's time module) makes of TZ, against the zone hb names for it, at a
# few instants of 2026: the offsets from UTC must agree
PROBE = """
import time
from datetime import datetime, UTC
from zoneinfo import ZoneInfo
from heartbeat.clock import machine_zone_name
name = machine_zone_name()
for t in (1767225600, 1782864000, 1798675200):
    local = time.localtime(t).tm_gmtoff
    ours = ZoneInfo(name).utcoffset(datetime.fromtimestamp(t, UTC)).total_seconds()
    assert local == ours, (name, t, local, ours)
print(name)
"""


@pytest.mark.parametrize(
    ("tz", "name"),
    [
        ("JST-9", "Etc/GMT-9"),  # POSIX counts hours west of UTC: JST-9 is UTC+9
        ("<+09>-9", "Etc/GMT-9"),
        ("EST5", "Etc/GMT+5"),
        ("IST-5:00", "Etc/GMT-5"),
        ("UTC0", "Etc/UTC"),
        (":Asia/Tokyo", "Asia/Tokyo"),
        ("America/New_York", "America/New_York"),
    ],
)
def test_a_tz_the_c_library_reads_is_the_zone_hb_uses(tz: str, name: str) -> None:
    """A POSIX TZ of a fixed offset (``TZ=JST-9``, as containers set it) was dropped for the
    zone /etc/localtime names (UTC here) without a word: hb handed out and stamped PROACTIVE.md's
    runs nine hours off what CraftBot, reading local time, did."""
    env = {**os.environ, "TZ": tz}
    shown = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == name


def test_without_tz_the_name_etc_timezone_holds_stands_where_localtime_is_a_copy(tmp_path: Path) -> None:
    """Docker images often copy the zone file to /etc/localtime instead of linking it; Debian
    keeps its name in /etc/timezone."""
    (tmp_path / "localtime").write_bytes(b"TZif2 a copy, not a link")
    assert machine_zone_name(lambda _: None, etc=str(tmp_path)) == "UTC"
    (tmp_path / "timezone").write_text("Europe/Berlin\n")
    assert machine_zone_name(lambda _: None, etc=str(tmp_path)) == "Europe/Berlin"
    assert machine_zone_name({"TZ": "JST-9"}.get, etc=str(tmp_path)) == "Etc/GMT-9"
    (tmp_path / "timezone").write_text("Not/AZone\n")
    assert machine_zone_name(lambda _: None, etc=str(tmp_path)) == "UTC"
