"""A rendered DOM (Chromium's --dump-dom) as a flat list of elements with their attributes and
the text inside each, for assertions on what a reader sees."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "source", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    parents: tuple[str, ...]
    parts: list[str] = field(default_factory=list)
    # Its place in the document's list, and the place after its last descendant.
    index: int = 0
    end: int = 0

    @property
    def text(self) -> str:
        return "".join(self.parts)


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs}, tuple(e.tag for e in self.open))
        element.index = element.end = len(self.elements)
        self.elements.append(element)
        if tag in VOID:
            element.end += 1
        else:
            self.open.append(element)

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self.open) - 1, -1, -1):
            if self.open[index].tag == tag:
                for closed in self.open[index:]:
                    closed.end = len(self.elements)
                del self.open[index:]
                return

    def handle_data(self, data: str) -> None:
        for element in self.open:
            element.parts.append(data)


def parse(html: str) -> list[Element]:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    for unclosed in builder.open:
        unclosed.end = len(builder.elements)
    return builder.elements


def inside(elements: list[Element], container: Element) -> list[Element]:
    """The elements within ``container``, in document order."""
    return elements[container.index + 1 : container.end]


def find(elements: list[Element], tag: str | None = None, **attrs: str) -> list[Element]:
    """Elements of ``tag`` (any if None) carrying every given attribute (``data_x`` names
    ``data-x``); an attribute given as "" needs only to be present."""
    wanted = {name.replace("_", "-"): value for name, value in attrs.items()}
    return [
        e
        for e in elements
        if (tag is None or e.tag == tag)
        and all(k in e.attrs and (v == "" or e.attrs[k] == v) for k, v in wanted.items())
    ]
