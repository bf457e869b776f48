"""The controller's part of the catalogue: every check its own phases (app/controller/phases/)
make, each section's checks in the order a run makes them (the sections' own order is
order.py's), the same under both layers, so two runs compare id by id."""

from __future__ import annotations

from typing import Final

from app.core.catalogue import Check, Entry, Section, each, unless, when
from app.core.secret_names import MODEL_KEY_VARIABLES

# --- identity and storage -----------------------------------------------------------------

CREDENTIAL_SOURCE: Final = Check(
    "identity.credentials", "the AWS SDK takes the controller's credentials from {source}"
)
CALLER: Final = Check("identity.caller", "the caller is the analyst's role")
NO_MODEL_KEY: Final = Check(
    "identity.no-model-key",
    "no model API key is in the controller's environment: "
    f"{', '.join(MODEL_KEY_VARIABLES)} are all absent",
)
IDENTITY: Final = Section("identity", CREDENTIAL_SOURCE, CALLER, NO_MODEL_KEY)

STORED_PROPOSAL: Final = Check(
    "storage.proposal.{supplier}",
    "the stored proposal of {supplier} matches its case entry, byte for byte",
)
CASE_FOLDER: Final = Check(
    "storage.case-folder", "the shipped case folder matches the store, byte for byte"
)
IAM_REFUSES: Final = Check("storage.iam.{operation}", "IAM returns AccessDenied for {what}")
IAM_OPERATIONS: Final = ("overwrite", "delete", "other-case")
STORAGE: Final = Section(
    "storage",
    each("supplier", "suppliers", STORED_PROPOSAL),
    CASE_FOLDER,
    each("operation", IAM_OPERATIONS, IAM_REFUSES),
)

# --- what only a run in the analyst Job's pod can check -----------------------------------

SECRET_FILE_MODE: Final = Check(
    "cluster.secret-file-mode",
    "the supplier key Secret's file {path} has the mode the manifest gives it, {mode}, owned by "
    "root and a group of the controller's (the pod's fsGroup), so no other user can read it",
)
SERVICE_NAME: Final = Check(
    "cluster.supplier-name",
    "the controller reaches the supplier API by its Service's cluster DNS name {host} over TLS "
    "verified against the run's CA, whose certificate carries that name",
)
SERVICE_NAME_CONTROL: Final = Check(
    "cluster.supplier-name.control",
    "control: the same server fails verification under a name its certificate does not carry "
    "({name})",
)
CLUSTER: Final = Section("cluster", SECRET_FILE_MODE, SERVICE_NAME, SERVICE_NAME_CONTROL)

# The pod's own egress, bounded by its network policy (egressPolicy): facts `bounded` (the Job
# names destinations to probe) and `denied` (their keys, egress_key).
EGRESS_BOUNDED: Final = Check(
    "egress.bounded", "the pod's own egress reaches only what its network policy names"
)
EGRESS_CONTROL: Final = Check(
    "egress.control.{target}",
    "control: the controller connects to {what} ({address}), which the policy names",
)
EGRESS_REFUSED: Final = Check(
    "egress.refused.{key}", "so the controller cannot reach {destination}, which no rule names"
)
EGRESS: Final = Section(
    "egress",
    unless("bounded", EGRESS_BOUNDED),
    when(
        "bounded",
        each("target", ("sts", "supplier"), EGRESS_CONTROL),
        each("key", "denied", EGRESS_REFUSED),
    ),
)


def egress_key(host: str, port: int) -> str:
    """A destination as an id's last words: `sqs.us-west-2.amazonaws.com-443`."""
    return f"{host.lower()}-{port}"


# --- the supplier -------------------------------------------------------------------------

AVAILABILITY: Final = Check(
    "supplier.availability",
    "the supplier API answers the controller's authenticated read with 200, and the reply holds "
    "one true/false per supplier of the case",
)
WRONG_KEY: Final = Check("supplier.wrong-key", "the supplier API refuses an invalid key with 401")
STAGED_AVAILABILITY: Final = Check(
    "supplier.staged-availability",
    "the availability staged for the evaluator holds the case's own supplier ids and one "
    "boolean each, nothing else the supplier sent",
)
SUPPLIER: Final = Section("supplier", AVAILABILITY, WRONG_KEY, STAGED_AVAILABILITY)

# --- business -----------------------------------------------------------------------------

EVALUATOR_WINNER: Final = Check(
    "business.evaluator", "the evaluator's offline comparison names {winner}, {eligibility}"
)
COMPARISONS_AGREE: Final = Check(
    "business.comparisons-agree",
    "the controller's own comparison agrees with the evaluator's, supplier by supplier",
)
WRITER_SAVES: Final = Check(
    "business.writer-saves", "the writer saves the comparison in its own output directory"
)
OUTPUTS_UNCHANGED: Final = Check(
    "business.outputs-unchanged",
    "every role's output is as the controller made it when it is read back: the tool's own "
    "(uid {uid}), files of mode 0600 and directories of 0700, with no extended attribute",
)


def business(submission: tuple[Entry, ...]) -> Section:
    """The business section, ending with the checks of the layer's draft submission."""
    return Section(
        "business",
        EVALUATOR_WINNER,
        COMPARISONS_AGREE,
        OUTPUTS_UNCHANGED,
        WRITER_SAVES,
        *submission,
    )


# --- the secrets leave the disk -------------------------------------------------------------

SECRETS_REMOVED: Final = Check(
    "secrets.removed",
    "the run's secret files are removed now that the last tool process has run, while the key "
    "stays only in the controller's memory",
)
SECRETS: Final = Section("secrets", SECRETS_REMOVED)

# --- the model turn and its gates ---------------------------------------------------------

EVIDENCE_TOOL: Final = Check(
    "model.evidence-tool", "the model called the evidence tool once ({model})"
)
BEDROCK_USAGE: Final = Check(
    "model.bedrock-usage", "Bedrock returned a real turn with nonzero token usage"
)
CHOICE: Final = Check(
    "model.choice", "the model's own choice, {supplier}, matches the verified comparison"
)
CITATIONS: Final = Check(
    "model.citations", "the model's analysis cites all {count} proposals by store key"
)
GATE_CONTROL: Final = Check("model.gate.{control}", "control: the {gate} gate rejects {label}")
GATE_CONTROLS: Final = ("choice.wrong-supplier", "choice.prose-only", "citation.missing-key")
MODEL: Final = Section(
    "model",
    EVIDENCE_TOOL,
    BEDROCK_USAGE,
    CHOICE,
    CITATIONS,
    each("control", GATE_CONTROLS, GATE_CONTROL),
)

# --- the report ---------------------------------------------------------------------------

REPORT_CLEAN: Final = Check(
    "report.no-secret", "the report and the comparison hold no secret", fails_only=True
)
ROUND_TRIP: Final = Check(
    "report.stored.{document}", "the report object round-trips through the store: {name}"
)
REPORT_DOCUMENTS: Final = ("recommendation", "comparison")
REPORT: Final = Section("report", REPORT_CLEAN, each("document", REPORT_DOCUMENTS, ROUND_TRIP))

# --- correlation with the supplier API's own log ------------------------------------------

SUPPLIER_LOG: Final = Check(
    "correlation.supplier-log",
    "the supplier API's own log holds every request of this run that reached it exactly once, "
    "and none that was refused",
)
READ_AND_DRAFT: Final = Check(
    "correlation.read-and-draft",
    "the run's record includes a successful availability read and an accepted draft",
)
ONE_DRAFT: Final = Check(
    "correlation.one-draft",
    "exactly one draft of this run reached the supplier API, by its own log, whoever sent it",
)
REFUSED_OPERATION: Final = Check(
    "correlation.refused-operation",
    "and at least one refused operation, so an empty upstream log could not pass this",
)
NO_BODY_ON_READ: Final = Check(
    "correlation.no-body-on-read",
    "no GET of this run reached the supplier API with a body, by the body bytes its own log "
    "counts for each request: {reads} GETs, each of 0 bytes",
)
NO_BODY_ON_READ_CONTROL: Final = Check(
    "correlation.no-body-on-read.control",
    "control: the same log counts the body of the draft this run posted, {draft} bytes, so a "
    "count of 0 is a reading and not a field the log never fills",
)
CORRELATION: Final = Section(
    "correlation",
    SUPPLIER_LOG,
    READ_AND_DRAFT,
    ONE_DRAFT,
    NO_BODY_ON_READ,
    NO_BODY_ON_READ_CONTROL,
    when("refuses_upstream", REFUSED_OPERATION),
)

# --- the last writes ----------------------------------------------------------------------

SCANNED_BEFORE: Final = Check(
    "evidence.scanned-before-write",
    "the report, the comparison, the evidence and the call record were scanned before being "
    "written for every secret of the run; the run stops if one appears",
)
SCANNED_AFTER: Final = Check(
    "evidence.scanned-after",
    "and so was every file left in the run directory, read back after the last write",
)
EVIDENCE: Final = Section("evidence", SCANNED_BEFORE, SCANNED_AFTER)
