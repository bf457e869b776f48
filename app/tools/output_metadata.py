"""What every role's output must still be when the controller reads the roles' work back: the
file the controller made (app/core/run_tree.py), the tool's own, a regular file of mode 0600
with no extended attribute, in a directory of mode 0700; anything else names every role that
could have changed it, not merely the role whose file it is.

A mode or an attribute is a channel between roles that bypasses the controller, and a mode
such as 0777 or setgid outlives the run's own reading; the baseline filter refuses every call
that changes them, and this is what the controller sees if anything ever got through.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Final

from app.core.roles import ROLES, Role
from app.core.run_tree import OUTPUT_FILES, RunPaths, ToolIdentity

FILE_MODE: Final = 0o600
DIRECTORY_MODE: Final = 0o700
# The label an LSM (SELinux) sets on every file it creates; changing it is that LSM's policy's
# to allow, not the file owner's. Every other attribute (user.*, an ACL in system.*) is one a
# process at the owner's uid could have set.
LSM_LABELS: Final = frozenset({"security.selinux"})

# Which roles can reach a role's output under a layer: the role alone, or every role.
Reach = Callable[[Role], tuple[Role, ...]]


def _findings(path: Path, uid: int, gid: int, mode: int, kind: int) -> list[str]:
    try:
        st = os.lstat(path)
    except OSError as error:
        return [f"cannot be examined ({error.strerror})"]
    found = []
    if stat.S_IFMT(st.st_mode) != kind:
        found.append("not the kind of file the controller made")
    if stat.S_IMODE(st.st_mode) != mode:
        found.append(f"mode {stat.S_IMODE(st.st_mode):04o}, not {mode:04o}")
    if (st.st_uid, st.st_gid) != (uid, gid):
        found.append(f"owner {st.st_uid}:{st.st_gid}, not {uid}:{gid}")
    try:
        names = sorted(set(os.listxattr(path, follow_symlinks=False)) - LSM_LABELS)
    except OSError as error:
        return [*found, f"its extended attributes cannot be listed ({error.strerror})"]
    if names:
        found.append(f"extended attributes {', '.join(names)}")
    return found


def _could(roles: tuple[Role, ...]) -> str:
    named = [f"the {role}" for role in roles]
    listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} or {named[-1]}"
    return f"{listed} could have changed it"


def changed_outputs(paths: RunPaths, tool: ToolIdentity, reach: Reach) -> list[str]:
    """Each output (file or directory) of each role that is not as the controller made it,
    with what changed and the roles that could have changed it; empty when none is."""
    uid, gid = tool.uid, tool.gid
    changed = []
    for role in ROLES:
        output = paths.workspace(role).output
        places = [(output, DIRECTORY_MODE, stat.S_IFDIR)]
        places += [(output / name, FILE_MODE, stat.S_IFREG) for name in OUTPUT_FILES[role]]
        for path, mode, kind in places:
            found = _findings(path, uid, gid, mode, kind)
            if found:
                relative = path.relative_to(paths.run)
                changed.append(f"{relative}: {'; '.join(found)} ({_could(reach(role))})")
    return changed
