"""A queue worker for the concurrency tests: pop until empty, fail some, complete the rest.

Run as a script: drain_worker.py WORKSPACE DB NAME FAIL_RATE SEED OUT
"""

from __future__ import annotations

import json
import random
import sys

from heartbeat import Ledger


def main() -> None:
    workspace, db, name, fail_rate, seed, out = sys.argv[1:7]
    rng = random.Random(int(seed))
    log = []
    with Ledger.open(workspace=workspace, db=db or None) as ledger:
        max_attempts = ledger.settings.queue_max_attempts
        while True:
            task = ledger.pop(worker=name)
            if task is None:
                break
            shown = ledger.get(task["id"])
            if shown["attempts"] < max_attempts and rng.random() < float(fail_rate):
                ledger.fail(task["id"], reason=f"{name} flaked")
                log.append(["fail", task["id"], shown["attempts"]])
            else:
                ledger.complete(task["id"], outcome={"worker": name})
                log.append(["complete", task["id"], shown["attempts"]])
    with open(out, "w") as fh:
        json.dump(log, fh)


if __name__ == "__main__":
    main()
