"""``python -m heartbeat`` runs the ``hb`` command."""

from heartbeat.cli.main import run

if __name__ == "__main__":
    run()
