"""Attacks on the roles' way to the supplier, each by a hostile tool in place of the worker
under each role's committed policy, launched by the real controller: a tunnel through the
role's proxy to loopback (where moto's admin API serves the local keys), a flood of
connections to it, extra draft POSTs, and a forged draft. Each is refused with its status or
stops the run with one line naming the role, never exit 0 while it succeeded; nothing is left
running and no secret on disk."""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.tools.at_once import AT_ONCE_WIDTH
from tests.support.faults import start_controller
from tests.support.hostile import HostileRun, Step, run_hostile

pytestmark = pytest.mark.integration

LAYERS = ["bubblewrap", "nono"]
# nono-py's own fork guard: a controller with more threads cannot start a tool process.
FORK_GUARD_THREADS = 32


class Decoy(http.server.ThreadingHTTPServer):
    """Stands in for moto's admin API on loopback: any path answers with keys, and every
    connection is counted."""

    connections = 0

    def get_request(self) -> tuple[object, object]:
        self.connections += 1
        return super().get_request()  # type: ignore[no-any-return]


class _Keys(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"iam": {"access_keys": ["AKIADECOY", "decoy-secret"]}}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def base() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="analyst-hostile-proxy-", dir="/var/tmp"))
    os.chmod(made, 0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def decoy() -> Iterator[Decoy]:
    server = Decoy(("127.0.0.1", 0), _Keys)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _requests(port: int) -> list[list[str]]:
    return [
        ["CONNECT", f"localhost:{port}"],
        ["GET", f"http://localhost:{port}/moto-api/data.json"],
        ["CONNECT", f"127.0.0.1:{port}"],
        ["GET", f"http://[::1]:{port}/moto-api/data.json"],
    ]


def _clean(run: HostileRun) -> None:
    assert run.secrets(), "the run wrote no secret the harness saw"
    assert run.secrets_on_disk() == [], run.describe()
    assert run.processes_left() == [], run.describe()


def _stopped(run: HostileRun) -> str:
    """The run's one line of why it stopped (exit 1)."""
    assert run.exit_code == 1, run.describe()
    lines = [
        line
        for line in (run.stdout + run.stderr).splitlines()
        if line.startswith(("FAIL ", "error (run stopped):"))
    ]
    assert len(lines) == 1, run.describe()
    return lines[0]


def _stopped_naming(run: HostileRun, role: str) -> str:
    """The run's one FAIL line (exit 1), which names the role."""
    line = _stopped(run)
    assert line.startswith("FAIL ") and role in line, run.describe()
    return line


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("role", ["reader", "writer"])
def test_a_tunnel_to_loopback_through_the_roles_proxy_is_refused(
    layer: str, role: str, base: Path, decoy: Decoy
) -> None:
    port = decoy.server_address[1]
    # An action both layers run after their preflight.
    action = "read-case" if role == "reader" else "write-draft"
    step = Step("tunnel", role=role, action=action, args={"requests": _requests(port)})
    run = run_hostile(base, layer, [step])
    line = _stopped(run)
    (said,) = re.findall(r"hostile tunnel: (.*)", line)
    answers = [answer.rsplit(" -> ", 1)[1] for answer in said.split("; ")]
    if layer == "nono":
        # Each answered by the role's front, none passed on.
        assert all(a.startswith("HTTP/1.1 403") for a in answers), line
    else:
        # No network at all: nothing of the host's loopback is there.
        assert all(a in ("ECONNREFUSED", "ENETUNREACH", "no such name") for a in answers), line
    assert decoy.connections == 0
    _clean(run)


def test_a_role_that_tunnels_and_goes_on_fails_the_run_at_its_proxys_record(
    base: Path, decoy: Decoy
) -> None:
    port = decoy.server_address[1]
    step = Step(
        "tunnel",
        role="writer",
        action="env-names",
        args={"requests": _requests(port), "then": "continue"},
    )
    run = run_hostile(base, "nono", [step])
    line = _stopped_naming(run, "writer")
    assert line.startswith("FAIL each of them is a request this run made"), line
    assert f"the writer's proxy saw CONNECT 'localhost:{port}' (no run id)" in line
    assert decoy.connections == 0
    _clean(run)


def _sample_controller(base: Path, peaks: dict[str, int], stop: threading.Event) -> None:
    """The controller's threads, descriptors and resident memory, at their highest."""
    marker = str(base / "work").encode()
    while not stop.is_set():
        for entry in Path("/proc").iterdir():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                if b"support.hostile" not in cmdline or marker not in cmdline:
                    continue
                status = (entry / "status").read_text()
                rss = int(re.findall(r"VmRSS:\s+(\d+)", status)[0])
                sample = {
                    "threads": len(os.listdir(entry / "task")),
                    "descriptors": len(os.listdir(entry / "fd")),
                    "rss_kib": rss,
                }
            except (OSError, IndexError):
                continue
            for name, value in sample.items():
                peaks[name] = max(peaks.get(name, 0), value)
        time.sleep(0.01)


def _sampled_run(base: Path, steps: list[Step]) -> tuple[HostileRun, dict[str, int]]:
    peaks: dict[str, int] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_controller, args=(base, peaks, stop))
    sampler.start()
    try:
        run = run_hostile(base, "nono", steps)
    finally:
        stop.set()
        sampler.join()
    return run, peaks


def test_a_flood_of_connections_to_the_proxy_leaves_the_controller_as_it_was(
    tmp_path: Path, base: Path
) -> None:
    """56 tunnel requests at once from the reader, as many as its own descriptor limit (64)
    leaves it room for, seven times what its proxy serves at once: the controller's threads,
    descriptors and memory stay as in a run without them, every later tool process starts,
    and the run stops at the reader's proxy's record, which holds every one of them."""
    quiet_base = Path(tempfile.mkdtemp(prefix="analyst-hostile-quiet-", dir="/var/tmp"))
    os.chmod(quiet_base, 0o755)
    try:
        quiet, quiet_peaks = _sampled_run(quiet_base, [Step("passthrough")])
        assert quiet.exit_code == 0, quiet.describe()
    finally:
        shutil.rmtree(quiet_base, ignore_errors=True)
    flood = Step("flood-proxy", role="reader", action="env-names", args={"count": 56})
    run, peaks = _sampled_run(base, [flood])
    print(f"controller at its highest: quiet run {quiet_peaks}, flooded run {peaks}")
    line = _stopped_naming(run, "reader")
    # The last check of the proxies: every tool process after the flood started.
    assert line.startswith("FAIL each of them is a request this run made"), line
    assert "every connection to the roles' proxies is on record, none dropped" in run.stdout
    assert peaks["threads"] < FORK_GUARD_THREADS
    # Checks made at once (CheckLog.at_once) run in threads of their own, so two runs' highest
    # counts differ by as many as AT_ONCE_WIDTH of those and their calls' channel threads: far
    # below the dozens a flood served inside the controller would add.
    assert peaks["threads"] <= quiet_peaks["threads"] + 2 * AT_ONCE_WIDTH, (peaks, quiet_peaks)
    _clean(run)


def _drafts_posted(run: HostileRun) -> list[dict[str, object]]:
    """The supplier API's own log of draft POSTs, from the kept run folder."""
    (log,) = run.controller.work.glob("*/supplier/requests.jsonl")
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return [
        e for e in entries if e["method"] == "POST" and str(e["path"]).endswith("/recommendations")
    ]


def test_extra_draft_posts_by_the_writer_never_reach_the_supplier(base: Path) -> None:
    """The writer posts its draft twice more in every supplier call it makes: before the
    controller verified it, its proxy refuses each (403); after, the first passes and takes
    the run's one draft, so the writer's own post is refused and the run stops there; the
    supplier has exactly one draft, the verified one."""
    step = Step(
        "post-drafts",
        role="writer",
        action="supplier-request",
        args={"count": 2, "case": "rfp-001"},
    )
    run = run_hostile(base, "nono", [step], "--keep-workdir")
    line = _stopped_naming(run, "writer")
    assert line.startswith("FAIL writer: POST /cases/rfp-001/recommendations with its draft"), line
    assert [e["status"] for e in _drafts_posted(run)] == [201]
    _clean(run)


@pytest.mark.parametrize("layer", LAYERS)
def test_a_forged_draft_is_never_posted(layer: str, base: Path) -> None:
    step = Step("forge-draft", role="writer", action="write-draft", args={"winner": "cedar"})
    run = run_hostile(base, layer, [step], "--keep-workdir")
    line = _stopped_naming(run, "writer")
    assert line.startswith("FAIL the writer's draft is the one the checked comparison implies")
    assert "it awards to 'cedar', where the checked comparison's winner is 'northstar'" in line
    assert _drafts_posted(run) == []
    _clean(run)


def _reads_with_a_body(run: HostileRun) -> list[dict[str, object]]:
    """The GETs the supplier API's own log counts a body for, from the kept run folder."""
    (log,) = run.controller.work.glob("*/supplier/requests.jsonl")
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return [e for e in entries if e["method"] == "GET" and e["body_bytes"] != 0]


INPUT_FILES = {"reader": "reader/in/case.json", "writer": "writer/in/private.json"}


@pytest.mark.parametrize("role", ["reader", "writer"])
def test_a_get_with_a_body_or_a_type_never_reaches_the_supplier(base: Path, role: str) -> None:
    """The role sends its own supplier read with 60 KB of its input as a body, and with a
    Content-Type, under the request id the run gave it: its front answers each 400 and the
    supplier reads no body on any GET; the run stops naming the role."""
    step = Step(
        "read-with-body",
        role=role,
        action="supplier-request",
        args={"file": INPUT_FILES[role], "size": 60 * 1024},
    )
    run = run_hostile(base, "nono", [step], "--keep-workdir")
    line = _stopped(run)
    assert line.startswith(f"error (run stopped): the {role}'s tool process exited 3"), line
    (said,) = re.findall(r"hostile read-with-body: (.*)", line)
    assert said == (
        "GET with 61440 bytes -> HTTP/1.1 400 Bad Request; GET with a type -> HTTP/1.1 400 Bad "
        "Request"
    ), line
    assert _reads_with_a_body(run) == []
    _clean(run)


@pytest.mark.parametrize("role", ["reader", "writer"])
def test_a_role_that_sends_a_get_with_a_body_and_goes_on_fails_the_run(
    base: Path, role: str
) -> None:
    """The same requests, then the genuine read under the same request id: the run stops at the
    read's record, naming the role, and the supplier read no body on any GET."""
    step = Step(
        "read-with-body",
        role=role,
        action="supplier-request",
        args={"file": INPUT_FILES[role], "size": 60 * 1024, "then": "continue"},
    )
    run = run_hostile(base, "nono", [step], "--keep-workdir")
    _stopped_naming(run, role)
    assert _reads_with_a_body(run) == []
    _clean(run)


def test_a_front_that_passes_a_reads_body_fails_the_run(base: Path) -> None:
    """The proxy host's front swapped for one that passes a read in any shape (support/
    leaky_front.py): the run stops at the reader's GET with a body, which was answered 200, and
    the supplier's own log shows the body it read."""
    controller = start_controller(
        base, "--keep-workdir", layer="nono", entry_module="support.leaky_front"
    )
    assert controller.finish(timeout=300) == 1, controller.output() + controller.errors()
    fails = [line for line in controller.output().splitlines() if line.startswith("FAIL ")]
    assert len(fails) == 1, controller.output()
    assert fails[0].startswith("FAIL reader: the same GET with a body, its own case.json"), fails
    assert "observed 200, records origin request, answered 200; nono: allow" in fails[0], fails
    (log,) = controller.work.glob("*/supplier/requests.jsonl")
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["body_bytes"] for e in entries if e["method"] == "GET" and e["body_bytes"]] != []
