"""The process that holds each online role's proxy, apart from the controller: nono's
credential-holding listener, and before it the strict front (front.py), the one listener the
role can reach.

Apart, so that what a role does to its proxy never reaches the controller: a flood of
connections could only grow this process's threads, memory and descriptors, and nono-py
refuses to start a tool from a controller above 32 threads. Here too it is bounded: each front
serves its role a few connections at once (a thread each) and answers any more at once from
its accept thread, unread; it passes nono one request at a time and reads nono's audit after
each, so that audit (which keeps 4,096 events between reads and silently drops the rest) never
fills; and the front's own records are kept up to a bound, any beyond it counted, never lost
silently (role_front.py).

The controller speaks to it over stdin and stdout, one JSON object a line each way
(proxy_pipe.py). It ends when the controller closes the pipe, or dies (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from app.tools.nono.front import FrontPolicy
from app.tools.nono.role_front import LOOPBACK, RoleFront
from app.tools.nono.side_process import tie_to_controller

if TYPE_CHECKING:
    from nono_py import ProxyHandle

# One command line from the controller, and the records one drain reply carries.
MAX_COMMAND_BYTES: Final = 64 * 1024
DRAIN_BATCH: Final = 256
BACKLOG: Final = 128


class ProxyHost:
    """Every role's front in this process, and the commands the controller sends."""

    def __init__(self, nono: ModuleType) -> None:
        self.nono = nono
        self.fronts: dict[str, RoleFront] = {}

    def _nono_proxy(self, role: str, route: dict[str, Any]) -> ProxyHandle:
        config = self.nono.RouteConfig(
            route["prefix"],
            route["upstream"],
            credential_key=route["credential_key"],
            env_var=route["env_var"],
            inject_header=route["inject_header"],
            credential_format=route["credential_format"],
            endpoint_rules=[(str(m), str(p)) for m, p in route["rules"]],
            tls_ca=route["tls_ca"],
        )
        # No host for CONNECT: nono adds the route's host for every port regardless, which
        # is why nothing but the front can reach this listener.
        handle: ProxyHandle = self.nono.start_proxy(
            self.nono.ProxyConfig(allowed_hosts=[], routes=[config])
        )
        problems = handle.diagnostics()
        if problems:
            handle.shutdown()
            codes = ", ".join(sorted({str(p["code"]) for p in problems}))
            raise ValueError(f"the {role}'s nono proxy did not load its credential ({codes})")
        return handle

    def start(self, command: dict[str, Any]) -> dict[str, Any]:
        """Starts each role's proxy asked for, one after the other (nono's loads slow each
        other down when started at once); a role's error is its own."""
        started: dict[str, dict[str, Any]] = {}
        for proxy in command["proxies"]:
            try:
                started[proxy["role"]] = self._start_one(command["run_id"], proxy)
            except (KeyError, ValueError, TypeError, RuntimeError, OSError) as error:
                started[proxy["role"]] = {"error": f"{type(error).__name__}: {error}"}
        return {"started": started}

    def _start_one(self, run_id: str, asked: dict[str, Any]) -> dict[str, Any]:
        role, route, front = asked["role"], asked["route"], asked["front"]
        if role in self.fronts:
            raise ValueError(f"the {role}'s proxy is already running")
        handle = self._nono_proxy(role, route)
        variables = handle.credential_env_vars()
        placeholder = variables[route["env_var"]]
        policy = FrontPolicy(
            prefix=route["prefix"],
            pairs=frozenset((str(m), str(p)) for m, p in route["rules"]),
            once=frozenset((str(m), str(p)) for m, p in front["once"]),
            inject_header=route["inject_header"],
            max_connections=int(front["max_connections"]),
        )
        listener = socket.create_server((LOOPBACK, 0), backlog=BACKLOG)
        role_front = RoleFront(role, run_id, policy, handle, placeholder, listener)
        self.fronts[role] = role_front
        threading.Thread(target=role_front.accept_forever, daemon=True).start()
        base_url = f"http://{LOOPBACK}:{role_front.port}/{policy.prefix}"
        # The role gets what nono would give it for this route, but naming the front.
        names = {name for name in variables if name != route["env_var"]}
        return {
            "front_port": role_front.port,
            "variables": {route["env_var"]: placeholder, **dict.fromkeys(names, base_url)},
        }

    def command(self, command: dict[str, Any]) -> dict[str, Any]:
        op = command["op"]
        if op == "start":
            return self.start(command)
        if op == "usage":
            return usage()
        if op == "seal":
            for front in self.fronts.values():
                front.seal()
            return {}
        front = self.fronts[command["role"]]
        if op == "arm":
            with front.lock:
                front.armed[(command["method"], command["path"])] = command["sha256"]
            return {}
        if op == "drain":
            return front.drain(min(int(command.get("limit", DRAIN_BATCH)), DRAIN_BATCH))
        if op == "behind":
            return front.behind(command["method"], command["path"], command["request_id"])
        raise ValueError(f"unknown command {op!r}")

    def stop(self) -> None:
        for front in self.fronts.values():
            front.listener.close()
            front.nono.shutdown()


def usage() -> dict[str, Any]:
    """This process's threads, descriptors and resident memory, as the kernel counts them."""
    rss = 0
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return {
        "threads": len(os.listdir("/proc/self/task")),
        "descriptors": len(os.listdir("/proc/self/fd")),
        "rss_kib": rss,
    }


def serve(host: ProxyHost, commands: BinaryIO, replies: BinaryIO) -> None:
    """One command a line, one reply a line, in order, until the controller closes the pipe."""
    while line := commands.readline(MAX_COMMAND_BYTES):
        command = json.loads(line)
        try:
            reply = {"ok": True, **host.command(command)}
        except (KeyError, ValueError, TypeError, RuntimeError, OSError) as error:
            reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        replies.write(json.dumps(reply).encode("utf-8") + b"\n")
        replies.flush()
        if command.get("op") == "stop":
            break
    host.stop()


def _reply_channel() -> BinaryIO:
    """The pipe to the controller, which was stdout: stdout itself now goes to stderr, so
    nothing else this process prints can be read as a reply."""
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return channel


def main(argv: list[str]) -> int:
    tie_to_controller(int(argv[1]))
    replies = _reply_channel()
    # Imported only now: the package's import takes some 0.15 s of CPU
    # (docs/notes/nono-py-package-import.md), which this process spends tied to the
    # controller and not dumpable.
    import nono_py

    serve(ProxyHost(nono_py), sys.stdin.buffer, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
