"""The catalogue of checks: every check a run can make, by stable id and one-line claim, and its
place in the run's order. The form of a check and a section is app/core/catalogue.py's.

- this module: the checks both layers make, under the same ids, so that two runs compare id by
  id (the layer-neutral file and environment checks of app/tools/common_checks.py, the attacks
  of app/tools/attack_checks.py, the draft's verification), and the sections both layers make
  whole: ``files()`` and ATTACKS_SECTION;
- bubblewrap.py and nono.py: each layer's own checks (ids beginning with the layer's name, and
  a few shared ids a layer proves its own way) and its own sections;
- controller.py: the controller's own phases' checks, the same under both layers;
- order.py: the order of every section of a run, stated once, which the run follows.
"""

from __future__ import annotations

from typing import Final

from app.core.catalogue import Check, Entry, Section, each, unless
from app.core.roles import ROLES
from app.core.secret_names import MODEL_KEY_VARIABLES
from app.tools.attacks import ATTACKS

# --- files: what the reader was given ---------------------------------------------------------

READS_CASE: Final = Check(
    "files.reader.case",
    "the reader reads its assigned case, the same sha256 as the controller's copy",
)
READS_PROPOSALS: Final = Check(
    "files.reader.proposals",
    "the reader reads its assigned proposals, each the bytes whose sha256 the case entry names",
)
INPUT_WRITE_CONTROL: Final = Check(
    "files.input-write.control",
    "control: an unconfined process at the tool's uid {uid} opens the reader's input case.json "
    "for writing, and the file is left unchanged",
)
INPUT_WRITE: Final = Check(
    "files.input-write.reader",
    "the reader cannot open its input case.json for writing: {reason}: {errno}",
)
HIDDEN_CONTROL: Final = Check("files.{target}.control", "control: {opener} opens {label}")
HIDDEN: Final = Check("files.{target}.{role}", "the {role} cannot open {label}: {reason}: {errno}")
# What the hidden-file checks open, and which roles are refused each.
HIDDEN_TARGETS: Final = (
    ("writer-private", ("reader",)),
    ("supplier-key", ("reader",)),
    ("aws-credential", ROLES),
)
# The targets whose control never opens the real file (app/tools/secret_controls.py).
SECRET_TARGETS: Final = frozenset({"supplier-key", "aws-credential"})
SECRETS_ROOT_ONLY: Final = Check(
    "files.secrets.root-only",
    "the real supplier key and AWS credentials are root's alone: a process at the tool's uid "
    "{uid} outside the tools' decoy view is refused each: EACCES",
)

# --- files: what the writer may do, and every role in its own directories --------------------

WRITER_WRITES: Final = Check(
    "files.writer.write",
    "the writer writes its own output file, and the controller reads the same bytes back",
)
DIRECTORIES_CONTROL: Final = Check(
    "files.directories.control",
    "control: an unconfined process at the tool's uid {uid} reads every role's input, opens "
    "every role's output files for writing and creates a file in every role's output directory",
)
OWN_DIRECTORIES: Final = Check(
    "files.{role}.own",
    "the {role} reads its own input and opens each of its output files ({names}) for writing",
)
NO_NEW_FILE: Final = Check(
    "files.{role}.no-new-file",
    "the {role} cannot create a file of its own in its output directory: {reason}: {errno}",
)
OTHER_DIRECTORIES: Final = Check(
    "files.{role}.others",
    "the {role} cannot read the {others} input, nor open their output files: {errno}",
)


def hidden_files() -> tuple[Entry, ...]:
    """The hidden-file checks in order: each target's control, then each refused role; then
    that the real secrets are root's alone."""
    return (
        *(
            each("target", (target,), HIDDEN_CONTROL, each("role", roles, HIDDEN))
            for target, roles in HIDDEN_TARGETS
        ),
        SECRETS_ROOT_ONLY,
    )


def directories() -> tuple[Entry, ...]:
    return (
        DIRECTORIES_CONTROL,
        each("role", ROLES, OWN_DIRECTORIES, NO_NEW_FILE, OTHER_DIRECTORIES),
    )


def files(*, after_case: tuple[Entry, ...] = ()) -> Section:
    """The files section, made the same under both layers (CommonChecks.files): what the reader
    was given, each refusal beside its control, what the writer may do, every role in its own
    directories. ``after_case``: a layer's own checks, made beside these, after the case's."""
    return Section(
        "files",
        READS_CASE,
        *after_case,
        READS_PROPOSALS,
        INPUT_WRITE_CONTROL,
        INPUT_WRITE,
        *hidden_files(),
        WRITER_WRITES,
        *directories(),
    )


# --- environment --------------------------------------------------------------------------

NO_CREDENTIAL_VARIABLES: Final = Check(
    "environment.reader.no-credentials",
    f"so the reader holds no AWS_ variable and none of {', '.join(MODEL_KEY_VARIABLES)}",
)

# --- attacks: every path out, each beside the unconfined control --------------------------

ATTACK_CONTROL: Final = Check(
    "attacks.{attack}.control",
    "control: unconfined at the tool's uid {uid}, the same calls get the kernel's own answers",
)
ATTACK: Final = Check("attacks.{attack}", "no role can {claim}: {why}")
# A probe the control could not make here: only the IPv6 loopback may be missing.
ATTACK_NOT_TRIED: Final = Check("attacks.{attack}.{probe}", "no role can {claim} ({probe})")
IPV6_PROBES: Final = frozenset({"tcp6"})


def attacks() -> tuple[Entry, ...]:
    """Each attack's control line, the probes a host without IPv6 cannot try, its check line."""
    return tuple(
        each(
            "attack",
            (attack.key,),
            ATTACK_CONTROL,
            unless(
                "ipv6",
                each(
                    "probe",
                    tuple(p for p in attack.probes if p in IPV6_PROBES),
                    ATTACK_NOT_TRIED,
                ),
            ),
            ATTACK,
        )
        for attack in ATTACKS
    )


UNDUMPABLE_CONTROL: Final = Check(
    "attacks.undumpable.control",
    "control: a process at the controller's uid {uid} opens a dumpable sibling's /proc/<pid>/mem "
    "and environ, takes its descriptor 0 (pidfd_getfd) and reaches its memory "
    "(process_vm_readv)",
)
UNDUMPABLE: Final = Check(
    "attacks.undumpable",
    "no process at the controller's uid {uid} can open the controller's /proc/<pid>/mem or "
    "environ, take its descriptors or read its memory: it is not dumpable (EACCES, EACCES, "
    "EPERM, EPERM)",
)

ATTACKS_SECTION: Final = Section("attacks", *attacks(), UNDUMPABLE_CONTROL, UNDUMPABLE)


# --- business: the writer's draft, read back by the controller before anything is posted ------

DRAFT_IS_THE_RUNS: Final = Check(
    "business.draft.verified",
    "the writer's draft is the one the checked comparison implies: it awards case {case} to "
    "{winner}, under the run's reference {reference}",
)
DRAFT_IS_THE_RUNS_CONTROL: Final = Check(
    "business.draft.verified.control",
    "control: the same reading refuses a copy of it that awards to {other}",
)
DRAFT_VERIFIED: Final = (DRAFT_IS_THE_RUNS, DRAFT_IS_THE_RUNS_CONTROL)
