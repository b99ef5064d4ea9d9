"""Progress of long work, for a person watching a terminal.

Library code reports steps through :func:`steps`; nothing is shown unless a front end installed
a reporter (the CLI does when stderr is a terminal and ``-q`` is not given) and the work is
long enough (:data:`THRESHOLD` units). Piped, hb prints no progress at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")
THRESHOLD = 2000  # units of work below which no progress is shown
Reporter = Callable[[str, int], "Callable[[int], None] | None"]  # (label, total) -> advance(n)
_reporter: Reporter | None = None


def set_reporter(reporter: Reporter | None) -> None:
    global _reporter
    _reporter = reporter


@contextmanager
def steps(label: str, total: int) -> Iterator[Callable[[int], None]]:
    """``advance(n)`` for ``total`` units of ``label`` (a no-op when nobody watches)."""
    bar = _reporter(label, total) if _reporter is not None and total >= THRESHOLD else None
    try:
        yield bar if bar is not None else _nothing
    finally:
        if bar is not None:
            bar(-1)  # done: the reporter closes its bar


def each(label: str, items: Iterable[T], total: int) -> Iterator[T]:
    """The items, advancing the progress by one each."""
    with steps(label, total) as advance:
        for item in items:
            yield item
            advance(1)


def _nothing(_n: int) -> None:
    return None


def terminal_reporter(label: str, total: int) -> Callable[[int], None]:
    """A click progress bar on stderr."""
    import sys

    import click

    bar = click.progressbar(length=total, label=label, file=sys.stderr)
    bar.__enter__()

    def advance(n: int) -> None:
        if n < 0:
            bar.__exit__(None, None, None)
        else:
            bar.update(n)

    return advance
