"""The nono layer's part of the catalogue: its own checks and sections, each section's checks in
the order a run makes them (the sections' own order is order.py's).

The layer-neutral checks (the package's own module) stand in these sections under their shared
ids; the ids here that begin ``nono.`` are this layer's alone.
"""

from __future__ import annotations

from typing import Final

from app.core.catalogue import Check, Section, each, unless, when
from app.core.roles import ROLES
from app.tools import catalogue as common
from app.tools.attacks import FILTER_SAMPLES

ONLINE_ROLES: Final = ("reader", "writer")
_SAMPLES: Final = ", ".join(FILTER_SAMPLES)

# --- profiles ---------------------------------------------------------------------------------

COMMITTED: Final = Check(
    "nono.profiles.committed",
    "the committed launch policies ({files}) are exactly what the profile generator renders",
)
LIVE: Final = Check(
    "nono.profiles.{role}.live",
    "the {role} runs under the committed {role}.launch.json with only this run's values filled in",
)
COMPARISON_CONTROL: Final = Check(
    "nono.profiles.comparison.control",
    "control: the same comparison reports a copy of the reader's profile with the supplier key "
    "file added to its read list as different, at filesystem.read",
)

PROFILES: Final = Section("profiles", COMMITTED, each("role", ROLES, LIVE), COMPARISON_CONTROL)

# --- environment --------------------------------------------------------------------------

STARTS: Final = Check(
    "nono.{role}.starts", "the {role} starts under its profile and runs the staged worker"
)
ENVIRONMENT: Final = Check(
    "nono.{role}.environment",
    "the {role}'s environment is exactly what its profile keeps: {kept}{proxy}",
)

ENVIRONMENT_SECTION: Final = Section(
    "environment", each("role", ROLES, STARTS, ENVIRONMENT), common.NO_CREDENTIAL_VARIABLES
)

# --- process: the reader seen from the host, and what the baseline refuses ---------------------

HELD: Final = Check(
    "nono.held.reader",
    "the controller looks at the reader from the host's /proc while it waits: the reader writes "
    "its pid to its own check.txt and blocks on a FIFO in its input",
)
HELD_IDENTITY: Final = Check(
    "nono.held.identity",
    "the reader, as the host's /proc shows it while it waits, runs as uid/gid {uid}/{gid}: real, "
    "effective, saved and filesystem ids alike, never 0",
)
HELD_CAPABILITIES: Final = Check(
    "nono.held.capabilities",
    "it holds no capability it could use, and no exec can gain one: NoNewPrivs is 1",
)
HELD_SECCOMP: Final = Check(
    "nono.held.seccomp",
    "it runs under {own} seccomp filters of its own, nono's and the baseline it installed "
    "before reading its arguments{inherited}",
)
HELD_BASELINE: Final = Check(
    "nono.held.baseline",
    "the filter it installed is the baseline this controller compiled, read from the code "
    "directory, which no role may write",
)
HELD_CONTROL: Final = Check(
    "nono.held.control",
    "control: started without the baseline, the same reader holds nono's filter alone{inherited}",
)
USERNS_CONTROL: Final = Check(
    "process.userns.control",
    "control: without the baseline, a nono tool process may create a user namespace of its own "
    "(and in it, new namespaces with every capability): unshare(CLONE_NEWUSER) succeeds",
)
USERNS_REFUSED: Final = Check(
    "process.userns.reader",
    "so the baseline is what refuses the reader a nested user namespace: EPERM",
)
BASELINE_CONTROL: Final = Check(
    "process.baseline.control",
    "control: under nono's rules alone (no baseline), the reader's ptrace, bpf and keyctl reach "
    "the kernel, which answers them itself; nono's own seccomp mode refuses io_uring_setup",
)
LANDLOCK_ALONE_CONTROL: Final = Check(
    "nono.baseline.landlock-alone.control",
    "control: under Landlock alone (enforcement mode landlock, no baseline), the evaluator's "
    "io_uring_setup reaches the kernel",
)
LANDLOCK_ALONE: Final = Check(
    "nono.baseline.landlock-alone",
    "and with the baseline under Landlock alone, the baseline refuses it itself: "
    "io_uring_setup EPERM",
)
BASELINE_REFUSES: Final = Check(
    "process.baseline.reader",
    f"so under the reader's profile the baseline refuses {_SAMPLES}: EPERM",
)

PROCESS: Final = Section(
    "process",
    HELD,
    HELD_IDENTITY,
    HELD_CAPABILITIES,
    HELD_SECCOMP,
    HELD_BASELINE,
    HELD_CONTROL,
    USERNS_CONTROL,
    USERNS_REFUSED,
    BASELINE_CONTROL,
    LANDLOCK_ALONE_CONTROL,
    LANDLOCK_ALONE,
    BASELINE_REFUSES,
)

# --- files --------------------------------------------------------------------------------

FILES: Final = common.files()

# --- credentials --------------------------------------------------------------------------

HOLDS_CREDENTIAL: Final = Check(
    "nono.credentials.{role}.present",
    "the {role} holds a supplier credential: SUPPLIER_API_KEY is set and not empty",
)
PLACEHOLDER: Final = Check(
    "nono.credentials.{role}.placeholder",
    "the {role}'s credential is the placeholder its own proxy issued, not the real supplier key "
    "(PBKDF2-HMAC-SHA256 under a per-run key, compared in memory, nothing kept)",
)
DISTINCT_PLACEHOLDERS: Final = Check(
    "nono.credentials.distinct",
    "the reader and the writer hold different placeholders: each online role has its own proxy",
)

CREDENTIALS: Final = Section(
    "credentials",
    each("role", ONLINE_ROLES, HOLDS_CREDENTIAL, PLACEHOLDER),
    DISTINCT_PLACEHOLDERS,
)

# --- network ------------------------------------------------------------------------------

CONNECT_CONTROL: Final = Check(
    "nono.network.{target}.control",
    "control: an unconfined process at the tool's uid {uid} connects to {what}",
)
CONNECT_REFUSED: Final = Check(
    "nono.network.{target}.reader",
    "the reader cannot connect to {what} directly: Landlock answers EACCES",
)
SOCKET_CONTROL: Final = Check(
    "nono.network.socket.control",
    "control: the online reader creates an Internet socket: socket(AF_INET, SOCK_STREAM), no "
    "connect",
)
NO_SOCKET: Final = Check(
    "nono.network.socket.evaluator",
    "the offline evaluator cannot create an Internet socket: the same socket() call fails with "
    "EPERM",
)

NETWORK: Final = Section(
    "network",
    each("target", ("aws",), CONNECT_CONTROL, CONNECT_REFUSED),
    SOCKET_CONTROL,
    NO_SOCKET,
    each("target", ("supplier",), CONNECT_CONTROL, CONNECT_REFUSED),
)

# --- supplier proxy: the endpoint policy, request by request ------------------------------

STATUS: Final = Check(
    "nono.proxy.{request}", "{role}: {method} {path} through its proxy returns {status}"
)
AUDIT: Final = Check(
    "nono.proxy.{request}.audit", "nono's audit records the {role}'s {method} {path}: {verdict}"
)
# A request the role's front answers itself (front.py): nono never sees it.
FRONT: Final = Check(
    "nono.proxy.{request}.front",
    "the {role}'s proxy records {what} as refused at its front, {why}, and passes nothing to nono",
)
ALIAS_CONTROL: Final = Check(
    "nono.proxy.alias.control",
    "control: the controller reaches the same server by its second name, {alias}, with the real "
    "key: GET {path} returns 200",
)
FOREIGN_PLACEHOLDER: Final = Check(
    "nono.proxy.foreign-placeholder",
    "the writer's proxy refuses the reader's placeholder on GET {path} with 401 and records deny "
    "(authentication failed): a placeholder works only at its own proxy",
)
ACCEPTED_UPSTREAM: Final = Check(
    "nono.proxy.{request}.control",
    "control: the supplier API accepts {method} {path} from the controller with the real key, "
    "outside any profile: {status}",
)
# The writer's refused operations, each accepted upstream from the controller.
REFUSED_OPERATIONS: Final = ("writer.patch-supplier", "writer.purchase-order", "writer.other-case")
BEHIND: Final = Check(
    "nono.proxy.behind-front",
    "behind the writer's front, its nono proxy refuses the same operations itself when the "
    "controller sends them straight to it with the writer's placeholder, each recorded by nono "
    "as deny by the endpoint policy: {said}",
)
EARLY_DRAFT: Final = Check(
    "nono.proxy.writer.early-draft",
    "writer: POST {path} through the writer's proxy, with its placeholder, before the "
    "controller verified a draft, returns 403",
)
# A read in a shape it does not have (shape_checks.py): nono would add the key to its body.
SHAPE_CONTROL: Final = Check(
    "nono.proxy.{role}.read-shape.control",
    "control: {role}: GET {path} sent raw through its proxy with its placeholder, no body and "
    "no type, returns 200",
)
WITH_BODY: Final = Check(
    "nono.proxy.{role}.read-with-body",
    "{role}: the same GET with a body, its own {file} ({size} bytes), is answered 400 by its "
    "proxy's front, recorded as not its pair's shape, and nothing of it passes to nono",
)
WITH_TYPE: Final = Check(
    "nono.proxy.{role}.read-with-type",
    "{role}: the same GET with a Content-Type ({type}) and no body is answered 400 by its "
    "proxy's front, recorded as not its pair's shape, and nothing of it passes to nono",
)
# Tunnels and absolute URIs: nono-py's own listener would let them through to the route's
# upstream host on any port (docs/notes/nono-proxy-upstream-host.md).
TUNNEL: Final = Check(
    "nono.proxy.tunnel.{target}",
    "reader: its proxy refuses a tunnel to {where}, {what}: CONNECT answered 403",
)
TUNNEL_AUDIT: Final = Check(
    "nono.proxy.tunnel.{target}.audit",
    "the reader's proxy records the tunnel to {where} as refused at its front, a tunnel, and "
    "passes nothing to nono",
)
CANARY_CONTROL: Final = Check(
    "nono.proxy.canary.control",
    "control: the controller reaches a canary listening on the supplier's host at another "
    "port, {where}, directly: GET / answered 200",
)
SERVICE_CONTROL: Final = Check(
    "nono.proxy.canary.control",
    "control: a TCP connection of the controller's own to the supplier Service's host, "
    "{where}, is accepted",
)
OTHER_SERVERS: Final = Check(
    "nono.proxy.{role}.other-servers",
    "the {role}'s proxy refuses every request for another server, the canary on the supplier's "
    "host and the AWS endpoint among them, each as a tunnel and as an absolute URI, under "
    "several names for loopback: 403 each",
)
OTHER_SERVERS_FRONT: Final = Check(
    "nono.proxy.{role}.other-servers.front",
    "the {role}'s proxy records each of them as refused at its front, a tunnel or an absolute "
    "URI, and passes none to nono",
)
CANARY_UNTOUCHED: Final = Check(
    "nono.proxy.canary.untouched",
    "the canary answered one connection, the controller's own: no role's request reached it "
    "through its proxy",
)
LIMIT_CONTROL: Final = Check(
    "nono.proxy.{role}.connection-limit.control",
    "control: with {open} connections to the {role}'s proxy left open mid-request, the next is "
    "served: its tunnel is answered 403",
)
LIMIT: Final = Check(
    "nono.proxy.{role}.connection-limit",
    "the {role}'s proxy serves at most {limit} connections at once: one more is answered 503 at "
    "once, unread, so no flood of connections can grow the proxy",
)

SUPPLIER_PROXY: Final = Section(
    "supplier proxy",
    each("request", ("reader.read",), STATUS, AUDIT),
    ALIAS_CONTROL,
    each("request", ("writer.read",), STATUS, AUDIT),
    FOREIGN_PLACEHOLDER,
    each("request", ("reader.draft",), STATUS, FRONT),
    each("request", REFUSED_OPERATIONS, ACCEPTED_UPSTREAM, STATUS, FRONT),
    BEHIND,
    EARLY_DRAFT,
    each("request", ("writer.early-draft",), FRONT),
    each("role", ONLINE_ROLES, SHAPE_CONTROL, WITH_BODY, WITH_TYPE),
    each("target", ("alias", "supplier"), TUNNEL, TUNNEL_AUDIT),
    when("loopback", CANARY_CONTROL),
    unless("loopback", SERVICE_CONTROL),
    each("role", ONLINE_ROLES, OTHER_SERVERS, OTHER_SERVERS_FRONT),
    when("loopback", CANARY_UNTOUCHED),
    each("role", ONLINE_ROLES, LIMIT_CONTROL, LIMIT),
)

# --- business: the writer's own draft submission through its proxy -------------------------

FORGED_DRAFT: Final = Check(
    "nono.proxy.writer.forged-draft",
    "the writer's proxy refuses a draft other than the one the controller verified: POST {path} "
    "with the draft's winner changed answered 403, recorded as refused at its front, nothing "
    "passed to nono",
)
DRAFT_SUBMITTED: Final = Check(
    "business.draft.submitted",
    "writer: POST {path} with its draft through its proxy returns 201",
)
DRAFT_AUDIT: Final = Check(
    "nono.proxy.writer.draft.audit",
    "nono's audit records the writer's POST {path}: allow, forwarded, supplier status 201",
)
DRAFT_AGAIN: Final = Check(
    "nono.proxy.writer.draft-again",
    "writer: POST {path} with the same draft again through the writer's proxy returns 403",
)
# The proxies' records, whole (proxy_audit.py).
RECORDS_KEPT: Final = Check(
    "nono.proxy.records.kept",
    "every connection to the roles' proxies is on record, none dropped: {counts}",
)
RECORDS_MADE: Final = Check(
    "nono.proxy.records.made",
    "each of them is a request this run made, by its request id (and the connections each "
    "connection-limit check left mid-request, {headless})",
)
RECORDS_NONO: Final = Check(
    "nono.proxy.records.nono",
    "and nono's audit holds exactly one decided record of each request the fronts passed it: "
    "{counts}",
)
SUBMISSION: Final = (
    *common.DRAFT_VERIFIED,
    FORGED_DRAFT,
    DRAFT_SUBMITTED,
    DRAFT_AUDIT,
    DRAFT_AGAIN,
    each("request", ("writer.draft-again",), FRONT),
    RECORDS_KEPT,
    RECORDS_MADE,
    RECORDS_NONO,
)
