#!/usr/bin/env python3
"""Generate docs/api.md, the Python API reference, from the Ledger's own docstrings.

python scripts/gen_api_doc.py          # rewrite docs/api.md
python scripts/gen_api_doc.py --check  # exit 1 if docs/api.md is out of date
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heartbeat.ledger import Ledger  # noqa: E402

TARGET = ROOT / "docs" / "api.md"


def public_methods() -> list[tuple[str, object]]:
    """Every public method and property of Ledger, by name."""
    out = []
    for name in sorted(dir(Ledger)):
        if name.startswith("_"):
            continue
        member = inspect.getattr_static(Ledger, name)
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if callable(member) or isinstance(member, property):
            out.append((name, member))
    return out


def _signature(name: str, member: object) -> str:
    if isinstance(member, property):
        return f"Ledger.{name}  # property"
    text = str(inspect.signature(member)).replace("builtins.", "")  # type: ignore[arg-type]
    return f"Ledger.{name}{text.replace('(self, ', '(').replace('(self)', '()')}"


def render() -> str:
    parts = [
        "# hb Python API",
        "",
        "Generated from `heartbeat.Ledger`'s docstrings by `scripts/gen_api_doc.py`;",
        "a test keeps it current.",
        "",
        "```python",
        "from heartbeat import Ledger",
        "",
        'with Ledger.open(workspace=".", db=None, now=None) as ledger:',
        '    task = ledger.add("Write report", priority="high")',
        "```",
        "",
        "Each call is one transaction. Errors are exceptions from `heartbeat.errors`, each with the",
        "`exit_code` the CLI exits with.",
        "",
    ]
    for name, member in public_methods():
        doc = inspect.getdoc(member.fget if isinstance(member, property) else member) or ""
        parts += [f"## `{name}`", "", "```python", _signature(name, member), "```", "", doc, ""]
    return "\n".join(parts).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not TARGET.exists() or TARGET.read_text(encoding="utf-8") != text:
            print("docs/api.md is out of date: run python scripts/gen_api_doc.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
