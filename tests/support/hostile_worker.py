"""A hostile tool process for the tests, staged as the worker package's ``__init__``: the first of
the worker's code that any tool process runs, after nothing but the launcher's loader.

Test-only, standard library only: it runs on the system interpreter inside each layer's
sandbox (and would run as the unconfined control, were the control the tools' code). It reads
its plan (``hostile_plan.json``, staged beside it by support/hostile.py), works out which
process it is (a role, or the control), and does the attack of the first step that names that
process and its action. An attack either ends the
process and never returns, or returns, and the genuine worker then runs the action as always.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

PLAN_FILE = "hostile_plan.json"
ROLES = ("reader", "evaluator", "writer")
# Where a bubblewrap role finds the staged code; its hostname names the role.
BWRAP_CODE = "/opt/analyst/"
RESULT_PREFIX = b"ANALYST_RESULT "
BLOCK = 65536


def whoami() -> str:
    """The role this process runs as, or ``control`` for the unconfined control."""
    if __file__.startswith(BWRAP_CODE):
        # bubblewrap names each role's host analyst-<role> (read from /proc: a check's extra
        # filter may refuse uname).
        with open("/proc/sys/kernel/hostname", encoding="ascii") as hostname:
            return hostname.read().strip().removeprefix("analyst-")
    # nono: a role may open its own output files and no other role's; the control opens all.
    run = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "run")
    opened = []
    for role in ROLES:
        try:
            os.close(os.open(os.path.join(run, role, "out", "check.txt"), os.O_RDONLY))
        except OSError:
            continue
        opened.append(role)
    return opened[0] if len(opened) == 1 else "control"


def action_of(argv: list[str]) -> str:
    """The action on the worker's command line, after the loader's options."""
    rest = list(argv)
    while rest[:1] and rest[0].startswith("--"):
        rest = rest[2:]
    return rest[0] if rest else ""


def run_dir() -> str:
    """The run directory, as the unconfined control names it."""
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(top, "run")


# --- attacks ----------------------------------------------------------------------------------


def flood(fd: int, prefix: bytes) -> None:
    """Writes without end, and without a newline: one endless line."""
    os.write(fd, prefix)
    block = b"x" * BLOCK
    while True:
        os.write(fd, block)


def flood_stdout(args: dict[str, Any]) -> None:
    flood(1, RESULT_PREFIX + b'{"action": "')


def flood_stderr(args: dict[str, Any]) -> None:
    flood(2, b"")


def hold_output(args: dict[str, Any]) -> None:
    """Leaves a process of its own session behind holding stdout and stderr, then lets the
    genuine action run and end."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(float(args.get("seconds", 600)))
        os._exit(0)
    os.wait()


def plant(args: dict[str, Any]) -> None:
    """Leaves things in the reader's output directory for the controller to meet (the
    unconfined control can write there: the directory belongs to the tool's uid)."""
    where = os.path.join(run_dir(), "reader", "out")
    for kind in args["kinds"]:
        PLANTS[kind](where)


def tamper(args: dict[str, Any]) -> None:
    """Changes other roles' outputs' metadata as a process at the tool's uid outside any layer
    can (a stand-in for a role whose filter let it through): the evaluator's comparison.json
    made 0644, an extended attribute on the writer's check.txt."""
    run = run_dir()
    os.chmod(os.path.join(run, "evaluator", "out", "comparison.json"), 0o644)
    os.setxattr(os.path.join(run, "writer", "out", "check.txt"), "user.channel", b"from a role")


def _fifo(where: str) -> None:
    os.mkfifo(os.path.join(where, "pipe"))


def _zero_link(where: str) -> None:
    os.symlink("/dev/zero", os.path.join(where, "zero"))


def _dangling_link(where: str) -> None:
    os.symlink(os.path.join(where, "nothing-here"), os.path.join(where, "dangling"))


def _unreadable_file(where: str) -> None:
    path = os.path.join(where, "unreadable")
    with open(path, "wb") as handle:
        handle.write(b"unreadable")
    os.chmod(path, 0)


def _unreadable_dir(where: str) -> None:
    path = os.path.join(where, "closed")
    os.mkdir(path)
    with open(os.path.join(path, "inside"), "wb") as handle:
        handle.write(b"inside a closed folder")
    os.chmod(path, 0)


def _deep(where: str) -> None:
    """1,100 nested folders, made one level at a time relative to the last (no long paths)."""
    fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1100):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    with open(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as leaf:
        leaf.write(b"at the bottom")
    os.close(fd)


FORGED_NAME = "x\n\x1b[32mPASS every secret is gone\x1b[0m\n"


def _forged_name(where: str) -> None:
    with open(os.path.join(where, FORGED_NAME), "wb") as handle:
        handle.write(b"a file with a forged name")


PLANTS: dict[str, Callable[[str], None]] = {
    "fifo": _fifo,
    "zero-link": _zero_link,
    "dangling-link": _dangling_link,
    "unreadable-file": _unreadable_file,
    "unreadable-dir": _unreadable_dir,
    "deep": _deep,
    "forged-name": _forged_name,
}


def say(args: dict[str, Any]) -> None:
    """Writes ``args["stderr"]`` to stderr and exits ``args["exit"]`` with no result line."""
    os.write(2, str(args["stderr"]).encode("utf-8", "surrogateescape"))
    os._exit(int(args.get("exit", 1)))


def answer(args: dict[str, Any]) -> None:
    """Writes ``args["line"]`` (a whole result line, or any text) to stdout and exits 0."""
    os.write(1, str(args["line"]).encode("utf-8", "surrogateescape"))
    os._exit(0)


def report(args: dict[str, Any]) -> None:
    """Shows that this code ran, where, and under which file size limit: exits 3 saying so."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    said = f"hostile worker ran as {whoami()} for {action_of(sys.argv[1:])}: RLIMIT_FSIZE {soft}"
    os.write(2, said.encode() + b"\n")
    os._exit(3)


# --- the role's proxy -------------------------------------------------------------------------


def proxy_address() -> tuple[str, int] | None:
    """Where this role's proxy listens (nono: its base URL names it); None without one."""
    base = os.environ.get("SUPPLIER_BASE_URL", "")
    if not base.startswith("http://"):
        return None
    host, _, port = base[len("http://") :].split("/", 1)[0].rpartition(":")
    return host, int(port)


def _answer_of(connection: Any) -> str:
    line = b""
    while not line.endswith(b"\n") and len(line) < 200:
        chunk = connection.recv(1)
        if not chunk:
            break
        line += chunk
    return line.decode("latin-1").strip()[:40] or "closed"


def ask_proxy(method: str, target: str, body: bytes = b"", headers: str = "") -> str:
    """One raw request to this role's proxy, or straight to the target where there is none
    (bubblewrap); the answer's status line, or the errno that stopped it."""
    import socket

    proxy = proxy_address()
    if proxy is None:
        host, _, port = target.split("//")[-1].split("/")[0].rpartition(":")
        proxy = (host.strip("[]"), int(port))
    try:
        connection = socket.create_connection(proxy, timeout=10)
    except socket.gaierror:
        return "no such name"
    except OSError as error:
        import errno

        return errno.errorcode.get(error.errno or 0, str(error))
    with connection:
        head = f"{method} {target} HTTP/1.1\r\nHost: {target}\r\n{headers}"
        head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        connection.sendall(head.encode() + body)
        return _answer_of(connection)


def tunnel(args: dict[str, Any]) -> None:
    """Asks its proxy for each of ``args["requests"]`` (method, target), with the proxy token
    nono would have handed it, if it has one; says what each was answered and exits 3, or,
    with ``args["then"] == "continue"``, lets the genuine worker run."""
    token = os.environ.get("SUPPLIER_API_KEY", "")
    import base64

    auth = "Proxy-Authorization: Basic " + base64.b64encode(f"nono:{token}".encode()).decode()
    answers = [
        f"{method} {target} -> {ask_proxy(method, target, headers=auth + chr(13) + chr(10))}"
        for method, target in args["requests"]
    ]
    if args.get("then") == "continue":
        return
    os.write(2, ("hostile tunnel: " + "; ".join(answers) + "\n").encode())
    os._exit(3)


def flood_proxy(args: dict[str, Any]) -> None:
    """Opens ``args["count"]`` connections to its proxy at once, a tunnel request on each, then
    reads every answer; then the genuine worker runs."""
    import socket

    proxy = proxy_address()
    assert proxy is not None
    opened = []
    for _ in range(int(args["count"])):
        connection = socket.create_connection(proxy, timeout=10)
        connection.sendall(b"CONNECT localhost:1 HTTP/1.1\r\nHost: localhost:1\r\n\r\n")
        opened.append(connection)
    for connection in opened:
        _answer_of(connection)
        connection.close()


def post_drafts(args: dict[str, Any]) -> None:
    """Posts its own draft file ``args["count"]`` times through its proxy, under no request id
    of the run's; then the genuine worker runs (and posts it once more)."""
    path = os.path.join(run_dir(), "writer", "out", "draft.txt")
    with open(path, "rb") as draft:
        body = draft.read()
    token = os.environ.get("SUPPLIER_API_KEY", "")
    case = args["case"]
    for _ in range(int(args["count"])):
        ask_proxy(
            "POST",
            f"/supplier/cases/{case}/recommendations",
            body,
            headers=f"X-Api-Key: {token}\r\nContent-Type: text/plain\r\n",
        )


def read_with_body(args: dict[str, Any]) -> None:
    """Sends its own supplier-request's GET twice through its proxy first, with its placeholder
    and under the request id the run gave it: with ``args["size"]`` bytes of its own input file
    ``args["file"]`` (repeated) as a body, and with a Content-Type; says what each was answered
    and exits 3, or, with ``args["then"] == "continue"``, lets the genuine worker send it."""
    argv = sys.argv[1:]
    while argv[:1] and argv[0].startswith("--"):
        argv = argv[2:]
    method, path, request_id = argv[1], argv[2], argv[4] if len(argv) > 4 else ""
    if method != "GET":
        return
    with open(os.path.join(run_dir(), args["file"]), "rb") as source:
        data = source.read()
    size = int(args["size"])
    body = (data * (size // len(data) + 1))[:size]
    base = os.environ.get("SUPPLIER_BASE_URL", "")
    target = "/" + base.split("//", 1)[-1].split("/", 1)[-1] + path
    own = f"X-Api-Key: {os.environ.get('SUPPLIER_API_KEY', '')}\r\n"
    own += f"X-Analyst-Request-ID: {request_id}\r\n"
    answers = [
        f"GET with {len(body)} bytes -> {ask_proxy('GET', target, body, headers=own)}",
        "GET with a type -> "
        + ask_proxy("GET", target, headers=own + "Content-Type: application/json\r\n"),
    ]
    if args.get("then") == "continue":
        return
    os.write(2, ("hostile read-with-body: " + "; ".join(answers) + "\n").encode())
    os._exit(3)


def forge_draft(args: dict[str, Any]) -> None:
    """Does the writer's write-draft itself, with a draft that awards to ``args["winner"]``:
    the comparison saved as staged, the draft forged, a result line as the worker's; exits."""
    argv = sys.argv[1:]
    while argv[:1] and argv[0].startswith("--"):
        argv = argv[2:]
    in_dir, out_dir = argv[1], argv[2]
    with open(os.path.join(in_dir, "comparison.json"), "rb") as source:
        comparison = source.read()
    case = json.loads(comparison)["case_id"]
    with open(os.path.join(in_dir, "private.json"), "rb") as source:
        reference = json.loads(source.read())["draft_reference"]
    forged = f"Draft recommendation {reference} for case {case}: award to {args['winner']}.\n"
    for name, data in (("comparison.json", comparison), ("draft.txt", forged.encode())):
        fd = os.open(os.path.join(out_dir, name), os.O_WRONLY | os.O_TRUNC)
        os.write(fd, data)
        os.close(fd)
    import hashlib

    said = {
        "action": "write-draft",
        "errno": None,
        "ok": True,
        "comparison_sha256": hashlib.sha256(comparison).hexdigest(),
        "draft_sha256": hashlib.sha256(forged.encode()).hexdigest(),
        "winner": args["winner"],
    }
    os.write(1, RESULT_PREFIX + json.dumps(said).encode() + b"\n")
    os._exit(0)


def _errno_of(call: Callable[[], object]) -> str:
    import errno

    try:
        call()
    except OSError as error:
        return errno.errorcode.get(error.errno or 0, str(error.errno))
    except (MemoryError, RuntimeError) as error:  # Python's words for ENOMEM, and for a
        return type(error).__name__  # thread the kernel would not start
    return "ok"


def _raw(number: int, *values: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    ctypes.set_errno(0)
    words = [ctypes.c_long(value) for value in values]
    if libc.syscall(ctypes.c_long(number), *words) == -1:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))


def _daemon() -> None:
    """A process in a session of its own that keeps this one's stdout and stderr for 10 min."""
    if os.fork() == 0:
        os.setsid()
        time.sleep(600)
        os._exit(0)


def _write_output(size: int) -> str:
    """Writes ``size`` bytes to this role's check.txt, 64 KiB at a time; how far it got."""
    if __file__.startswith(BWRAP_CODE):
        path = "/output/check.txt"
    else:
        path = os.path.join(run_dir(), whoami(), "out", "check.txt")
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    written, block = 0, b"x" * BLOCK
    try:
        while written < size:
            written += os.write(fd, block[: size - written])
    except OSError as error:
        import errno

        return f"{errno.errorcode.get(error.errno or 0)} after {written} bytes"
    finally:
        os.close(fd)
    return f"ok: {written} bytes"


def _host_top() -> str:
    """The run's top directory on the host: under bwrap, found through the code directory's
    mount (its source, in /proc/self/mountinfo), as an attacker would find it."""
    if not __file__.startswith(BWRAP_CODE):
        return os.path.dirname(run_dir())
    with open("/proc/self/mountinfo", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            if fields[4] == BWRAP_CODE.rstrip("/"):
                return os.path.dirname(fields[3])
    raise RuntimeError("the code directory's mount is not in /proc/self/mountinfo")


def _read_secrets() -> None:
    """Reads the run's supplier key and AWS credentials, by their paths on the host."""
    top = _host_top()
    for name in ("supplier-api-key", "aws-credentials"):
        with open(os.path.join(top, "secrets", name), "rb") as secret:
            secret.read()


def _descriptors(count: int) -> None:
    for _ in range(count):
        os.dup(0)


def _thread() -> None:
    import threading

    started = threading.Thread(target=time.sleep, args=(600,), daemon=True)
    started.start()


def attempt(args: dict[str, Any]) -> None:
    """Tries each of ``args["tries"]`` in turn, from before the worker's first instruction, and
    exits 3 saying what each got, on one line: ``hostile tried: NAME ANSWER; ...``. A raw call
    is named by its syscall (numbers from ``args["syscalls"]``), with the harmless arguments
    the worker's own probes use; ``spin`` never returns."""
    numbers = args.get("syscalls", {})
    tries: dict[str, Callable[[], object]] = {
        "unshare-user": lambda: _raw(numbers["unshare"], 0x10000000),
        "bpf": lambda: _raw(numbers["bpf"], 0x7FFFFFFF, 0, 0),
        "keyctl": lambda: _raw(numbers["keyctl"], 0x7FFFFFFF),
        "io_uring_setup": lambda: _raw(numbers["io_uring_setup"], 1, 0),
        "daemon": _daemon,
        "secrets": _read_secrets,
        "thread": _thread,
        "allocate": lambda: bytearray(int(args.get("allocate", 2**31))),
        "descriptors": lambda: _descriptors(int(args.get("descriptors", 1000))),
    }
    said = []
    for name in args["tries"]:
        if name == "spin":
            while True:
                pass
        if name == "write":
            said.append(f"write {_write_output(int(args.get('write', 2**31)))}")
        else:
            said.append(f"{name} {_errno_of(tries[name])}")
    os.write(2, ("hostile tried: " + "; ".join(said) + "\n").encode())
    os._exit(3)


def _summed(answers: list[str]) -> str:
    return answers[0] if len(set(answers)) == 1 else ", ".join(answers)


def reach(args: dict[str, Any]) -> None:
    """Counts the processes at its uid near its own pid (a read-only prlimit64 of each), then
    re-limits, renices, pins and reprioritises each of ``args["pids"]`` (processes at its uid
    outside any sandbox) and its own parent, opens a pidfd of each and compares their
    descriptors; then changes the mode, times and attributes of ``args["other"]``'s output
    (by its path on the host) and of its own, and watches the other's folder. Exits 3 saying
    what each call got on every target: ``hostile tried: NAME ANSWER; ...``."""
    import ctypes
    from functools import partial

    numbers = args["syscalls"]
    pids = [*args["pids"], os.getppid()]
    limit = ctypes.create_string_buffer(bytes(16))  # RLIMIT_CORE 0, soft and hard
    one_cpu = ctypes.create_string_buffer(b"\x01" + bytes(127))

    def raw(name: str, *values: object) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        words = [ctypes.c_long(v) if isinstance(v, int) else v for v in values]
        ctypes.set_errno(0)
        if libc.syscall(ctypes.c_long(numbers[name]), *words) == -1:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))

    on_processes: dict[str, Callable[[int], object]] = {
        "prlimit64": lambda pid: raw("prlimit64", pid, 4, limit, None),
        "setpriority": lambda pid: raw("setpriority", 0, pid, 19),
        "sched_setaffinity": lambda pid: raw("sched_setaffinity", pid, 128, one_cpu),
        "ioprio_set": lambda pid: raw("ioprio_set", 1, pid, 3 << 13),  # the idle class
        "pidfd_open": lambda pid: raw("pidfd_open", pid, 0),
        "kcmp": lambda pid: raw("kcmp", pid, pid, 0, 0, 1),
    }
    # The attacker's discovery: a read-only prlimit64 of each pid near its own finds every
    # process at its uid (counted only: what it attacks is the list above).
    old_limit = ctypes.create_string_buffer(16)
    near = range(max(1, os.getpid() - 4000), os.getpid() + 4000)
    found = [
        pid
        for pid in near
        if pid != os.getpid()
        and _errno_of(partial(raw, "prlimit64", pid, 4, None, old_limit)) == "ok"
    ]
    said = [f"scan found {len(found)}"]
    said += [
        f"{name} {_summed([_errno_of(partial(call, pid)) for pid in pids])}"
        for name, call in on_processes.items()
    ]
    other = os.path.join(_host_top(), "run", args["other"], "out")
    other_file = os.path.join(other, "check.txt")
    own_file = (
        "/output/check.txt"
        if __file__.startswith(BWRAP_CODE)
        else os.path.join(run_dir(), whoami(), "out", "check.txt")
    )
    on_files: dict[str, Callable[[], object]] = {
        "chmod": lambda: os.chmod(other_file, 0o666),
        "chmod own setgid": lambda: os.chmod(own_file, 0o2777),
        "fchmodat2": lambda: raw("fchmodat2", -100, other_file.encode(), 0o666, 0),
        "utime": lambda: os.utime(other_file, (0, 0)),
        "setxattr": lambda: os.setxattr(other_file, "user.hostile", b"a channel"),
        "setxattr own": lambda: os.setxattr(own_file, "user.hostile", b"a channel"),
        "inotify": lambda: raw("inotify_init1", 0),
        "inotify_add_watch": lambda: raw("inotify_add_watch", -1, other.encode(), 1),
    }
    said += [f"{name} {_errno_of(call)}" for name, call in on_files.items()]
    os.write(2, ("hostile tried: " + "; ".join(said) + "\n").encode())
    os._exit(3)


def passthrough(args: dict[str, Any]) -> None:
    """Does nothing: the genuine worker runs."""


ATTACKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "flood-stdout": flood_stdout,
    "flood-stderr": flood_stderr,
    "hold-output": hold_output,
    "plant": plant,
    "tamper": tamper,
    "say": say,
    "answer": answer,
    "report": report,
    "attempt": attempt,
    "reach": reach,
    "passthrough": passthrough,
    "tunnel": tunnel,
    "flood-proxy": flood_proxy,
    "post-drafts": post_drafts,
    "forge-draft": forge_draft,
    "read-with-body": read_with_body,
}


def matches(step: dict[str, Any], who: str, action: str) -> bool:
    return step.get("role", "any") in ("any", who) and step.get("action", "any") in (
        "any",
        action,
    )


def take_over() -> None:
    plan_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), PLAN_FILE)
    with open(plan_path, encoding="utf-8") as source:
        steps: list[dict[str, Any]] = json.load(source)
    who, action = whoami(), action_of(sys.argv[1:])
    for step in steps:
        if matches(step, who, action):
            ATTACKS[step["attack"]](dict(step.get("args", {})))
            return


# Staged, this file is the package analyst_worker itself; imported as a module of tests/ (by a
# type checker, say) it does nothing.
if __name__ == "analyst_worker":
    take_over()
