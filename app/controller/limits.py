"""The process limits a run needs from whoever started it, checked before anything is created.

A tool's output files are held to MAX_OUTPUT_FILE_BYTES by RLIMIT_FSIZE, set for it below the
limit the controller was started with: a lower hard limit cannot be raised back, so the tool
could not start, and a lower soft limit would have the kernel kill the controller (SIGXFSZ)
when it copies such a file. `ulimit -f` sets both (in blocks of 1024 bytes in bash, 512 in dash).
"""

from __future__ import annotations

import resource
from typing import Final

from app.core.errors import BadInput
from app.core.run_tree import MAX_OUTPUT_FILE_BYTES

ULIMIT_BLOCK_BYTES: Final = 1024


class LimitTooLow(BadInput):
    """A process limit of this shell is below what a run needs; the message names it."""


def check_file_size_limit() -> str:
    """Refuses a file size limit, soft or hard, under what a tool's output file may reach;
    returns the limit in words."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    blocks = MAX_OUTPUT_FILE_BYTES // ULIMIT_BLOCK_BYTES
    for which, value in (("hard", hard), ("soft", soft)):
        if value != resource.RLIM_INFINITY and value < MAX_OUTPUT_FILE_BYTES:
            raise LimitTooLow(
                f"the {which} file size limit (ulimit -f, RLIMIT_FSIZE) is {value} bytes: a "
                f"tool's output file may reach {MAX_OUTPUT_FILE_BYTES} bytes, held there by "
                "the same limit set lower for the tool",
                "raise it before the run: ulimit -f unlimited (or, in bash's blocks of "
                f"{ULIMIT_BLOCK_BYTES} bytes, at least {blocks})",
            )
    if soft == resource.RLIM_INFINITY:
        return "unlimited"
    return f"{soft} bytes (hard: {'unlimited' if hard == resource.RLIM_INFINITY else hard})"
