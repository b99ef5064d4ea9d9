"""A heartbeat.py caller for the concurrency test: pop and complete until nothing is pending.

Run as a script from inside the project: pop_worker.py NAME OUT (the ledger: HB_DATABASE_URL).
Each call is one heartbeat.py command line through the ``heartbeat-py`` command's entry point;
the log is every task this worker was handed and completed.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

from heartbeat.compat.heartbeat_py import main as heartbeat_py


def call(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = heartbeat_py(args)
    return code, out.getvalue()


def main() -> None:
    name, path = sys.argv[1:3]
    log = []
    while True:
        code, out = call("pop")
        assert code == 0, (code, out)
        if out == "No pending tasks.\n":
            break
        task_id = json.loads(out)["id"]
        code, out = call("complete", task_id, "--outcome", json.dumps({"worker": name}))
        assert (code, out) == (0, f"Marked task {task_id} as completed.\n"), (code, out)
        log.append(task_id)
    with open(path, "w") as fh:
        json.dump(log, fh)


if __name__ == "__main__":
    main()
