"""The run's secret files leave the disk as soon as nothing needs them: once the last tool
process has run.

Until then they are needed: the boundary checks open the supplier key and the AWS credential file
as controls, and a role's nono proxy reads the key when it starts. After it, nothing reads them
again: the controller holds the key in memory, boto3 loaded the credentials at start, and the
supplier API loaded its TLS key before it answered (that file went at once). A run that ends
earlier, however it ends, loses them in its own clean-up or to its clean-up process.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from app.controller.cleanup_process import remove
from app.controller.environment import Services
from app.core.run import Run
from app.tools.catalogue import controller as c


def retire_secrets(run: Run, services: Services) -> None:
    directory = services.secrets_dir
    if directory is None:
        return  # the cluster's secrets are the pod's mounted Secrets: none of the run's own
    checks = run.checks
    checks.begin(c.SECRETS)
    names = sorted(os.listdir(directory))
    remove(directory)
    gone = _absent(directory)
    checks.require(
        c.SECRETS_REMOVED,
        gone,
        detail=f"{', '.join(names)}: {directory} "
        + ("is gone (ENOENT)" if gone else "still exists"),
    )


def _absent(path: Path) -> bool:
    try:
        os.lstat(path)
    except OSError as error:
        return error.errno == errno.ENOENT
    return False
