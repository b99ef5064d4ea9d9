"""``python -m heartbeat`` runs the ``hb`` command."""

from heartbeat.cli.main import main

if __name__ == "__main__":
    main()
