"""Reading a case folder's files as untrusted data, before anything of a run exists.

Every file must lie inside the folder (no symbolic link anywhere below it: each step is opened
with O_NOFOLLOW relative to the one before), be a regular file, and be small enough, all decided
from the open file's own metadata before a byte is read. Its JSON must be strict: UTF-8, no
duplicate keys, no NaN or Infinity, integers of bounded length and shallow nesting. Each refusal
names the file and, where there is one, the field.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from app.core.errors import BadInput
from app.core.files import read_at_most

MAX_DOCUMENT_BYTES: Final = 256 * 1024
# Deeper than any case document needs (case.json is four levels deep).
MAX_DEPTH: Final = 16
# Enough for any amount or count a case holds; a longer integer is refused by field name
# before Python's own int conversion limit (4300 digits) could turn it into a traceback.
MAX_INTEGER_DIGITS: Final = 15

_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CaseError(BadInput):
    """The case folder is not a valid case; the message names the file and what is wrong."""


def field_name(part: object) -> str:
    """A step of a field's path as it may be printed: a plain name as is, anything else (a key
    the input chose, which may hold control characters) quoted and escaped as JSON."""
    if isinstance(part, int) or (isinstance(part, str) and _PLAIN_NAME.fullmatch(part)):
        return str(part)
    return json.dumps(str(part))


def field_path(parts: tuple[object, ...] | list[object]) -> str:
    return ".".join(field_name(part) for part in parts) or "document"


# --- reading -----------------------------------------------------------------------------


_KINDS: Final = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a special file"


@dataclass(frozen=True)
class CaseFolderFiles:
    """An open case folder: files are read relative to its descriptor, never by a path that a
    symbolic link could redirect."""

    path: Path
    fd: int

    def _open_step(self, parent: int, name: str, shown: Path, *, directory: bool) -> int:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        if directory:
            flags |= os.O_DIRECTORY
        try:
            return os.open(name, flags, dir_fd=parent)
        except OSError as error:
            link = error.errno == errno.ELOOP or (
                # O_DIRECTORY with O_NOFOLLOW answers ENOTDIR for a link to a folder.
                error.errno == errno.ENOTDIR and _is_link(parent, name)
            )
            raise _open_error(shown, error, link=link, directory=directory) from None

    def read(self, relative: str, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
        """The bytes of ``relative`` (a path inside the folder), refused unless it is a regular
        file of at most ``limit`` bytes reached without following any symbolic link."""
        *folders, name = relative.split("/")
        shown = self.path
        parent = self.fd
        opened: list[int] = []
        try:
            for folder in folders:
                shown = shown / folder
                parent = self._open_step(parent, folder, shown, directory=True)
                opened.append(parent)
            shown = shown / name
            fd = self._open_step(parent, name, shown, directory=False)
            opened.append(fd)
            return _read_bounded(fd, shown, limit)
        finally:
            for fd in opened:
                os.close(fd)

    def exists(self, relative: str) -> bool:
        """Whether anything (of any kind, a dangling link included) has this name."""
        try:
            os.stat(relative, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True


def _is_link(parent: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _open_error(shown: Path, error: OSError, *, link: bool, directory: bool) -> CaseError:
    if link:
        return CaseError(
            f"{shown}: is a symbolic link; a case's files must lie inside its folder",
            "copy the file into the case folder instead of linking to it",
        )
    if error.errno == errno.ENOENT:
        return CaseError(f"{shown}: missing")
    if error.errno == errno.ENOTDIR and directory:
        return CaseError(f"{shown}: is not a folder")
    if error.errno == errno.ENXIO:
        return CaseError(f"{shown}: is a socket, not a file")
    return CaseError(f"{shown}: cannot be opened ({error.strerror})")


def _read_bounded(fd: int, shown: Path, limit: int) -> bytes:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise CaseError(f"{shown}: is {_kind(st.st_mode)}, not a file")
    if st.st_size > limit:
        raise CaseError(f"{shown}: {st.st_size} bytes, more than the {limit} allowed")
    data = read_at_most(fd, limit)
    if data is None:
        raise CaseError(f"{shown}: grew past the {limit} bytes allowed while it was read")
    return data


@contextmanager
def open_case_folder(folder: Path) -> Iterator[CaseFolderFiles]:
    """The folder itself may be reached through a link (it is the user's own choice of path);
    nothing below it may."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise CaseError(f"{folder}: not a case folder (no such directory)") from None
    except NotADirectoryError:
        raise CaseError(f"{folder}: not a case folder (it is a file)") from None
    except OSError as error:
        raise CaseError(f"{folder}: cannot open the case folder ({error.strerror})") from None
    try:
        yield CaseFolderFiles(folder, fd)
    finally:
        os.close(fd)


# --- strict JSON ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Refused:
    """A value the strict reader refuses; reported with its field path once parsing is done."""

    why: str


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            raise _DuplicateKey(key)
        document[key] = value
    return document


def _bounded_int(text: str) -> int | _Refused:
    digits = len(text.lstrip("-"))
    if digits > MAX_INTEGER_DIGITS:
        return _Refused(f"an integer of {digits} digits; at most {MAX_INTEGER_DIGITS} are allowed")
    return int(text)


def _finite_float(text: str) -> float | _Refused:
    value = float(text)
    if not math.isfinite(value):
        return _Refused(f"the number {text[:20]} is too large to represent")
    return value


def _constant(name: str) -> _Refused:
    return _Refused(f"{name} is not a number JSON allows")


def _first_refusal(document: Any) -> tuple[list[object], str] | None:
    """The first refused value or excess depth, with its field path (iterative: no recursion)."""
    pending: list[tuple[list[object], Any]] = [([], document)]
    while pending:
        where, value = pending.pop()
        if isinstance(value, _Refused):
            return where, value.why
        children: list[tuple[object, Any]] = []
        if isinstance(value, dict):
            children = list(value.items())
        elif isinstance(value, list):
            children = list(enumerate(value))
        if children and len(where) >= MAX_DEPTH:
            return where, f"nested more than {MAX_DEPTH} levels deep"
        pending.extend(([*where, key], child) for key, child in reversed(children))
    return None


def check_strict_json(data: bytes, source: str) -> Any:
    """Parses ``data`` as strict JSON and returns it; raises CaseError naming ``source`` and,
    where there is one, the field."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CaseError(
            f"{source}: not UTF-8 text (byte {error.start} is 0x{data[error.start]:02x})"
        ) from None
    try:
        document = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_int=_bounded_int,
            parse_float=_finite_float,
            parse_constant=_constant,
        )
    except _DuplicateKey as duplicate:
        raise CaseError(
            f"{source}: the key {field_name(duplicate.args[0])} appears twice in one object"
        ) from None
    except RecursionError:
        raise CaseError(f"{source}: nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as error:
        raise CaseError(
            f"{source}: invalid JSON ({error.msg} at line {error.lineno} column {error.colno})"
        ) from None
    refused = _first_refusal(document)
    if refused is not None:
        where, why = refused
        raise CaseError(f"{source}: {field_path(where)}: {why}")
    return document
