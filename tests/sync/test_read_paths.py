"""hb sync reads a TODO file without building its document (the fast path) exactly as
formats.todo.parse reads it: the same entries, lines and warnings, for any text."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from heartbeat.formats import todo as fmt
from heartbeat.ops.sync.markdown.reading import read_file
from tests.formats.test_todo_properties import ARBITRARY, KINDS

LONG = "- [ ] [Created](2026-05-01 12:41) | " + "x" * fmt.SCANNER_LIMIT
TEXTS = ARBITRARY | st.builds(lambda t, at: t[:at] + LONG + "\n" + t[at:], ARBITRARY, st.integers(0, 40))


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, kind=KINDS, dialect=st.sampled_from(["strict", "extended"]))
def test_the_fast_reader_reads_what_the_document_reader_reads(
    text: str, kind: fmt.TodoKind, dialect: str
) -> None:
    doc = fmt.parse(text, kind, dialect=dialect)

    f = read_file(kind.value, Path("TODO.md"), text, dialect)

    def bare(entry: fmt.Entry | None) -> fmt.Entry | None:
        return None if entry is None else replace(entry, line=0, raw=None)

    assert [(it.number, it.raw, bare(it.entry)) for it in f.items] == [
        (ln.number, ln.text, bare(ln.entry)) for ln in doc.lines if ln.entry is not None
    ]
    assert f.warnings == [(w.line, w.text, w.reason) for w in doc.warnings]
