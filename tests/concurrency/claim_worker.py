"""A queue worker that behaves like a real agent, for the claims stress test (issue 15).

It pops with a 1 s lease, taking stale claims over first (``--accept-stale``), and then, by
chance: finishes at once; works past its lease without renewing; works longer while renewing
every 0.4 s; fails (the task is retried); or clears the stale claims of others first. Every
completion, failure and renewal carries its claim token; a refused one (exit 15) is logged as
lost. Run as a script: claim_worker.py WORKSPACE DB NAME SEED OUT DEADLINE_S
"""

from __future__ import annotations

import json
import random
import sys
import time

from heartbeat import Ledger
from heartbeat.errors import ClaimLost


def main() -> None:
    workspace, db, name, seed, out, deadline = sys.argv[1:7]
    rng = random.Random(int(seed))
    end = time.monotonic() + float(deadline)
    log: list[list[str]] = []
    with Ledger.open(workspace=workspace, db=db or None) as ledger:
        while time.monotonic() < end:
            task = ledger.pop(worker=name, lease="1s", accept_stale=True)
            if task is None:
                if not ledger.list():  # nothing active left anywhere: the queue is drained
                    break
                time.sleep(0.05)  # claims held by others: they finish, or go stale and are ours
                continue
            task_id, claim = task["id"], task["claim"]
            roll = rng.random()
            try:
                if roll < 0.03:
                    time.sleep(rng.uniform(1.1, 1.6))  # outlives its lease, no renewal
                elif roll < 0.08:
                    for _ in range(rng.randint(2, 4)):
                        time.sleep(0.4)
                        ledger.renew(task_id, claim, lease="1s")
                elif roll < 0.11:
                    ledger.fail(task_id, reason=f"{name} flaked", claim=claim)
                    log.append(["fail", task_id, claim])
                    continue
                elif roll < 0.12:
                    ledger.clear_stale()
                ledger.complete(task_id, outcome={"worker": name}, claim=claim)
                log.append(["complete", task_id, claim])
            except ClaimLost:
                log.append(["lost", task_id, claim])
    with open(out, "w") as fh:
        json.dump(log, fh)
    if time.monotonic() >= end:
        sys.exit(f"{name}: the queue was not drained within {deadline} s")


if __name__ == "__main__":
    main()
