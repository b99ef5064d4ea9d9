"""Reading the dashboard in tests: HTTP requests to a running server, and its HTML as a tree.

The tree parser is strict about structure: every element a page opens must be
closed, in order (void elements excepted), so a page that renders broken
markup fails the test that reads it.
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        """The text inside, as a browser shows it (entities decoded), spaces folded."""
        parts: list[str] = []

        def walk(node: Node | str) -> None:
            if isinstance(node, str):
                parts.append(node)
            else:
                for child in node.children:
                    walk(child)

        walk(self)
        return " ".join("".join(parts).split())

    def find_all(self, tag: str | None = None, **attrs: str | None) -> list[Node]:
        """Every element below this one with the tag and attributes (``data_row`` = ``data-row``,
        ``class_`` = ``class``; None: the attribute is present, any value)."""
        wanted = {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items()}
        out: list[Node] = []

        def walk(node: Node) -> None:
            for child in node.children:
                if isinstance(child, str):
                    continue
                if (tag is None or child.tag == tag) and all(
                    name in child.attrs and (value is None or child.attrs[name] == value)
                    for name, value in wanted.items()
                ):
                    out.append(child)
                walk(child)

        walk(self)
        return out

    def find(self, tag: str | None = None, **attrs: str | None) -> Node:
        found = self.find_all(tag, **attrs)
        assert found, f"no <{tag or '*'}> with {attrs}"
        return found[0]


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        open_tag = self.stack[-1].tag
        assert open_tag == tag, f"</{tag}> closes <{open_tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse_html(text: str) -> Node:
    """The page as a tree; AssertionError when an element is left open or closed out of order."""
    builder = _TreeBuilder()
    builder.feed(text)
    builder.close()
    assert len(builder.stack) == 1, f"elements left open: {[n.tag for n in builder.stack[1:]]}"
    return builder.root


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.body)

    def html(self) -> Node:
        assert self.headers["Content-Type"].startswith("text/html"), self.headers["Content-Type"]
        return parse_html(self.text)


def request(
    port: int,
    method: str,
    path: str,
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    timeout: float = 30,
) -> Reply:
    """One request to the server on 127.0.0.1:``port`` (``token``: as a bearer token)."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        data = response.read()
        # header names as sent; Set-Cookie may repeat, the last one is enough here
        return Reply(response.status, {k: v for k, v in response.getheaders()}, data)
    finally:
        conn.close()


def chart_values(page: Node, chart: str) -> dict[str, dict[str, float]]:
    """A chart's bars: series -> category -> value (from their data attributes)."""
    svg = page.find("svg", data_chart=chart)
    out: dict[str, dict[str, float]] = {}
    for rect in svg.find_all("rect", data_series=None):
        out.setdefault(rect.attrs["data-series"], {})[rect.attrs["data-category"]] = float(
            rect.attrs["data-value"]
        )
    return out
