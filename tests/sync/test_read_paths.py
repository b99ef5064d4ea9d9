"""hb sync reads a TODO file without building its document (the fast path) exactly as
formats.todo.parse reads it: the same entries, lines and warnings, for any text."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from heartbeat.errors import FileFormatError
from heartbeat.formats import todo as fmt
from heartbeat.ops.sync.markdown.reading import read_file
from tests.formats.test_todo_properties import ARBITRARY, KINDS

LONG = "- [ ] [Created](2026-05-01 12:41) | " + "x" * fmt.SCANNER_LIMIT
TEXTS = ARBITRARY | st.builds(lambda t, at: t[:at] + LONG + "\n" + t[at:], ARBITRARY, st.integers(0, 40))


def _holds_nul(entry: fmt.Entry) -> bool:
    texts = (entry.content, entry.chat_id, entry.tz, entry.repeat, *(v for _, v in entry.extra))
    return any(t is not None and "\x00" in t for t in texts)


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, kind=KINDS, dialect=st.sampled_from(["strict", "extended"]))
@example(  # an entry holding a NUL, as hypothesis once found it
    text="- [ ] [Next](2000-01-01 00:00), [Repeat](cron 0 9;17 * * 1-5), [ID](todo-00000000) | \x00\n",
    kind=fmt.TodoKind.RECUR,
    dialect="extended",
)
@example(  # the same, in a file with an HTML comment (read through the document)
    text="- [ ] [Created](2026-05-01 12:41) | a\n<!-- c -->\n- [ ] [Created](2026-05-01 12:41) | b \x00\n",
    kind=fmt.TodoKind.TODO,
    dialect="strict",
)
def test_the_fast_reader_reads_what_the_document_reader_reads(
    text: str, kind: fmt.TodoKind, dialect: str
) -> None:
    doc = fmt.parse(text, kind, dialect=dialect)
    # an entry holding a NUL character is read by both; the sync refuses the first one at its line
    nul = [ln.number for ln in doc.lines if ln.entry is not None and _holds_nul(ln.entry)]
    try:
        f = read_file(kind.value, Path("TODO.md"), text, dialect)
    except FileFormatError as refused:
        assert nul and refused.line == nul[0] and "NUL character" in refused.reason
        return
    assert not nul

    def bare(entry: fmt.Entry | None) -> fmt.Entry | None:
        return None if entry is None else replace(entry, line=0, raw=None)

    assert [(it.number, it.raw, bare(it.entry)) for it in f.items] == [
        (ln.number, ln.text, bare(ln.entry)) for ln in doc.lines if ln.entry is not None
    ]
    assert f.warnings == [(w.line, w.text, w.reason) for w in doc.warnings]
