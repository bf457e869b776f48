"""The environment every tool process starts with, under either layer and as the unconfined
control: set by the launcher, never copied from the controller's own."""

from __future__ import annotations

from typing import Final

# On a merged-/usr system /bin is a link into /usr/bin: the one directory a tool may search.
SEARCH_PATH: Final = "/usr/bin"
# A UTF-8 locale set explicitly, so Python does not coerce the C locale (and add LC_CTYPE).
LOCALE: Final = "C.UTF-8"


def tool_environment(code_dir: str) -> dict[str, str]:
    """The variables a tool process holds, in this order, with the staged worker code at
    ``code_dir`` as the tool itself names it."""
    return {
        "PATH": SEARCH_PATH,
        "LANG": LOCALE,
        "PYTHONPATH": code_dir,
        # The code directory is read-only: the interpreter is not even to try writing there.
        "PYTHONDONTWRITEBYTECODE": "1",
    }


TOOL_VARIABLES: Final = tuple(tool_environment(""))
