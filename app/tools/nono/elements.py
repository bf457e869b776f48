"""The elements of a nono profile: every leaf of the document, named by its path.

A value in a list is named by the value itself (``filesystem.read[<CODE>]``), an endpoint
rule by its method and path (``...allow[GET /cases/<CASE>/suppliers]``), so a name is the same
in every run and says what it is. The accounting in policies/nono/elements.json gives each
element of each committed profile its proof; the removal test leaves them out one at a time.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any


def _item_name(item: Any) -> str:
    if isinstance(item, dict) and set(item) == {"method", "path"}:
        return f"{item['method']} {item['path']}"
    if isinstance(item, (str, int)):
        return str(item)
    raise ValueError(f"a list item that names no element: {item!r}")


def _walk(node: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """(element name, container, key or item) for every leaf under ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            at = f"{path}.{key}" if path else key
            if isinstance(value, (dict, list)):
                # An empty section grants and sets nothing: it is no element.
                yield from _walk(value, at)
            else:
                yield at, node, key
    elif isinstance(node, list):
        for item in node:
            yield f"{path}[{_item_name(item)}]", node, item


def elements(profile: dict[str, Any]) -> list[str]:
    """Every element of a profile, in document order."""
    return [name for name, _, _ in _walk(profile, "")]


def without(profile: dict[str, Any], element: str) -> dict[str, Any]:
    """A copy of ``profile`` with one element left out; an unknown name is an error."""
    copied = copy.deepcopy(profile)
    for name, container, key in _walk(copied, ""):
        if name == element:
            if isinstance(container, dict):
                del container[key]
            else:
                container.remove(key)
            return copied
    raise KeyError(f"no element {element!r} in the profile")
