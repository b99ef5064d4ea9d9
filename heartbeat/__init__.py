"""hb, the heartbeat ledger.

One transactional database under the files AI-agent heartbeat runtimes already
use. The public API is :class:`heartbeat.Ledger`; errors live in
:mod:`heartbeat.errors`. Imports are lazy so that ``hb`` starts quickly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Ledger", "__version__"]

if TYPE_CHECKING:
    from heartbeat.ledger import Ledger


def __getattr__(name: str) -> Any:
    if name == "Ledger":
        from heartbeat.ledger import Ledger

        return Ledger
    raise AttributeError(f"module 'heartbeat' has no attribute {name!r}")
