"""Every element of the bwrap vectors, accounted for (see app/tools/accounting.py).

Keys are the element names policy.py gives (the option and, where it has one, the sandbox
path or variable it acts on), the same for every role and run. ACCOUNT says which check fails
when an element is left out of the reader's vector; proof_for, of any role's. Committed, with
each role's elements in order, as policies/bubblewrap/elements.json.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Final

from app.core.roles import Role
from app.core.tool_limits import tool_limits
from app.tools import catalogue as common
from app.tools.accounting import Proof, Redundant, Watched
from app.tools.attacks import FILTER_GROUP_WATCHERS, LIMIT_WATCHERS
from app.tools.bubblewrap.policy import (
    BubblewrapPolicy,
    Element,
    elements,
    filter_group_key,
    per_call_elements,
)
from app.tools.catalogue import bubblewrap as c

# How the committed policy writes the run's paths and the filter's fd.
RUN_PLACEHOLDER: Final = PurePosixPath("<RUN>")
CODE_PLACEHOLDER: Final = PurePosixPath("<CODE>")
FD_PLACEHOLDER: Final = "<BASELINE_FD>"

START: Final = c.READER_STARTS.id
ENVIRONMENT: Final = c.ENVIRONMENT.id
MOUNTS: Final = c.MOUNTS.id
NO_PYTHON: Final = "no /usr/bin/python3 can run"
SHARED: Final = "it would share the controller's"


def _same_as_reader(role: Role) -> str:
    return c.SAME_AS_READER.id_for(role=role)


# What the evaluator's and the writer's own readings cannot show, and where it shows instead.
# The loader's limits: the attack that tries each (app/tools/attacks.py's LIMIT_WATCHERS), in
# every role.
LIMITS: Final[dict[str, Watched]] = {
    limit.option: Watched(common.ATTACK.id_for(attack=attack), because)
    for limit in tool_limits().all()
    for attack, because in [LIMIT_WATCHERS[limit.name]]
}
# Each rule group of the baseline that is an element: the attack that tries its calls.
FILTER_GROUPS: Final[dict[str, Watched]] = {
    filter_group_key(group): Watched(common.ATTACK.id_for(attack=group), because)
    for group, because in FILTER_GROUP_WATCHERS.items()
}
_SEEN_BY_ATTACKS: Final = {
    "--disable-userns": common.ATTACK.id_for(attack="namespaces"),
    **{option: proof.check for option, proof in LIMITS.items()},
    **{key: proof.check for key, proof in FILTER_GROUPS.items()},
}

ACCOUNT: Final[dict[str, Proof]] = {
    "--unshare-user": Watched(START, "bwrap refuses --disable-userns without it"),
    "--unshare-pid": Watched(c.NAMESPACE.id_for(ns="pid"), SHARED),
    "--unshare-net": Watched(c.NAMESPACE.id_for(ns="net"), SHARED),
    "--unshare-ipc": Watched(c.NAMESPACE.id_for(ns="ipc"), SHARED),
    "--unshare-uts": Watched(c.NAMESPACE.id_for(ns="uts"), SHARED),
    "--disable-userns": Watched(c.USERNS_REFUSED.id, "unshare(CLONE_NEWUSER) succeeds"),
    "--assert-userns-disabled": Redundant(
        "bwrap 0.8.0 makes the same test for --disable-userns itself: it tries "
        "unshare(CLONE_NEWUSER) before it drops its privileges and refuses to start if that "
        "succeeds (bubblewrap.c: `if (opt_disable_userns || opt_assert_userns_disabled)`); "
        "kept because the assertion is bwrap's documented way to require that test, should a "
        "release stop making it for --disable-userns alone"
    ),
    "--uid": Redundant(
        "bwrap's sandbox uid defaults to the caller's, and the launcher always starts bwrap "
        "as uid 1000 (dropped from root here, the Job's own uid in the cluster); kept so the "
        "sandbox uid is the policy's, whoever starts bwrap"
    ),
    "--gid": Redundant(
        "bwrap's sandbox gid defaults to the caller's, and the launcher always starts bwrap "
        "as gid 1000; kept so the sandbox gid is the policy's, whoever starts bwrap"
    ),
    "--cap-drop": Redundant(
        "for a sandbox uid other than 0, bwrap leaves the child no capability in any of the "
        "five sets, bounding set included; kept so that holds even if the sandbox uid were 0"
    ),
    "--new-session": Watched(c.SESSION.id, "it shares the controller's session"),
    "--die-with-parent": Watched(c.PARENT_DEATH.id, "PR_GET_PDEATHSIG is 0"),
    "--hostname": Watched(c.HOSTNAME.id, "it keeps a copy of the controller's"),
    "--clearenv": Watched(ENVIRONMENT, "bwrap's own environment reaches the reader"),
    "--setenv PATH": Watched(ENVIRONMENT, "PATH is missing from it"),
    "--setenv HOME": Watched(ENVIRONMENT, "HOME is missing from it"),
    "--setenv LANG": Watched(ENVIRONMENT, "Python coerces the C locale and adds LC_CTYPE"),
    "--setenv PYTHONPATH": Watched(
        ENVIRONMENT, "PYTHONPATH is missing (the worker is still found in the working directory)"
    ),
    "--setenv PYTHONDONTWRITEBYTECODE": Watched(
        ENVIRONMENT, "PYTHONDONTWRITEBYTECODE is missing from it"
    ),
    "--ro-bind /usr": Watched(START, NO_PYTHON),
    "--symlink /lib": Watched(START, "the dynamic loader's path resolves through /lib"),
    "--symlink /lib64": Watched(START, "the interpreter names its loader as /lib64/…"),
    "--ro-bind /opt/analyst": Watched(START, "the worker's code is not there"),
    "--proc /proc": Watched(START, "the reader cannot read its own /proc"),
    "--perms": Watched(c.SCRATCH_OWN.id, "/tmp has mode 0755"),
    "--size": Watched(c.SCRATCH_SIZE.id, "/tmp may take half the machine's memory"),
    "--tmpfs /tmp": Watched(MOUNTS, "/tmp is missing from it"),
    "--ro-bind /input": Watched(MOUNTS, "/input is missing from it"),
    "--ro-bind /output": Watched(MOUNTS, "/output is missing from it"),
    "--remount-ro /": Watched(
        c.ROOT_READ_ONLY.id, "the root is a writable tmpfs with no size limit"
    ),
    "--chdir": Watched(c.WORKING_DIRECTORY.id, "it works in /, not in the code directory"),
    "--add-seccomp-fd": Watched(c.SECCOMP.id, "it runs under none"),
    **FILTER_GROUPS,
    **LIMITS,
    # The reader's one output file is also where it shows its host identity; the evaluator's
    # and the writer's other files show in their mount lists (see proof_for).
    "--bind /output/check.txt": Watched(c.HOST_IDENTITY.id, "the reader cannot write it"),
    "--bind /output/comparison.json": Watched(
        _same_as_reader("evaluator"), "it is not in its mount list"
    ),
    "--bind /output/draft.txt": Watched(_same_as_reader("writer"), "it is not in its mount list"),
}

# Elements that modify or require another: leaving that one out leaves them out too (bwrap
# refuses --hostname without --unshare-uts, and --perms and --size apply to the next mount).
DEPENDENTS: Final[dict[str, tuple[str, ...]]] = {
    "--unshare-uts": ("--hostname",),
    "--disable-userns": ("--assert-userns-disabled",),
    "--tmpfs /tmp": ("--perms", "--size"),
}


def removal(element: str) -> frozenset[str]:
    """What leaving ``element`` out removes from the vector."""
    return frozenset({element, *DEPENDENTS.get(element, ())})


def proof_for(role: Role, element: str) -> Proof:
    """How ``element`` of ``role``'s vector is accounted for, left out of that vector alone.

    The reader's checks watch each element one by one (ACCOUNT); the evaluator's and the
    writer's whole readings are compared with the reader's, and the attacks are tried by all.
    """
    proof = ACCOUNT[element]
    if role == "reader" or isinstance(proof, Redundant):
        return proof
    return Watched(_SEEN_BY_ATTACKS.get(element, _same_as_reader(role)), proof.because)


def committed_elements(role: Role) -> list[Element]:
    """The role's shipped vector and per-call part as elements, with the committed policy's
    placeholders for the run's paths and the filter's fd."""
    workspace = RUN_PLACEHOLDER / role
    vector = elements(
        role=role,
        input_dir=workspace / "in",
        output_dir=workspace / "out",
        code_dir=CODE_PLACEHOLDER,
    )
    fds, loader = per_call_elements([FD_PLACEHOLDER], BubblewrapPolicy().limits(role))
    return [*vector, *fds, *loader]


def keys_of(role: Role) -> list[str]:
    """The element names of the role's shipped vector and its per-call part, in order."""
    return [element.key for element in committed_elements(role)]
