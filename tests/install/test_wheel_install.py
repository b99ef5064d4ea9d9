"""A non-editable install in a fresh venv, run from another directory, can create a ledger.

This is what a new user does; it proves the migrations ship inside the wheel.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_pip_install_then_init_add_list(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    # from a copy of the source without build output: setuptools reuses a checkout's build/lib,
    # which holds every module an earlier build had, listed or not
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(".git", ".venv*", "build", "*.egg-info", "__pycache__", ".*_cache"),
    )
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(source)],
        check=True,
        cwd=tmp_path,
        capture_output=True,
    )
    hb = env_dir / "bin" / "hb"
    ws = tmp_path / "empty"
    ws.mkdir()
    env = {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "TZ": "UTC", "HOME": str(tmp_path)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(hb), *args], cwd=ws, env=env, capture_output=True, text=True, check=True)

    run("init")
    assert (ws / ".agent" / "state" / "heartbeat.db").is_file()
    installed = subprocess.run(
        [str(py), "-c", "import heartbeat.db.migrate as m; print(m.migrations_dir())"],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert str(ROOT) not in installed and "site-packages" in installed
    # the README's first command: one heartbeat on the example workspace (every module it reaches
    # is in the wheel; heartbeat.ops.sync.queue_files was not, and the sync exited 70)
    demo = tmp_path / "demo"
    shutil.copytree(ROOT / "examples" / "workspace", demo)
    run("-w", str(demo), "init", "--timezone", "Asia/Shanghai")
    brief = run("-w", str(demo), "heartbeat")
    assert brief.stdout.strip() and "internal error" not in brief.stderr
    assert (demo / ".agent" / "state" / "tasks.json").is_file()
    current = json.loads(run("db", "current", "--json").stdout)
    assert current["status"] == "current"
    added = json.loads(run("add", "from a fresh install", "--priority", "low", "--json").stdout)
    listed = json.loads(run("list", "--json").stdout)
    assert listed == [added]
    assert subprocess.run(
        [str(py), "-m", "heartbeat", "--version"], capture_output=True, text=True, cwd=ws, env=env, check=True
    ).stdout.startswith("hb, version")
    # the heartbeat.py drop-in ships as its own command (heartbeat.compat is in the wheel)
    dropin = subprocess.run(
        [str(env_dir / "bin" / "heartbeat-py"), "add", "--skill", "s", "from the wheel"],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert dropin.stdout.startswith("Added task task-")
    assert json.loads((ws / ".agent" / "state" / "tasks.json").read_text())["pending"][0]["description"] == (
        "from the wheel"
    )
    meta = subprocess.run(
        [
            str(py),
            "-c",
            "import importlib.metadata as m; d = m.distribution('hb-ledger'); "
            "print(d.metadata['License-Expression']); print(any(f.name == 'LICENSE' for f in d.files))",
        ],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert meta == ["MIT", "True"]  # an SPDX license expression and the LICENSE file
    assert sys.version_info >= (3, 11)


def test_the_wheel_lists_every_package_of_the_source() -> None:
    """pyproject.toml names the packages one by one: a new subpackage left out of the list was
    missing from a non-editable install, which every test here (an editable one) passed."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(module.parent.relative_to(ROOT).parts) for module in (ROOT / "heartbeat").rglob("*.py")}
    found |= {"heartbeat.migrations", "heartbeat.migrations.versions"}  # migrations/, mapped
    assert found == listed
