"""A bare nono run on this machine for the layer's own tests: a fresh run tree with the sample
case staged, the real supplier API over TLS, and a listener standing in for the AWS endpoint."""

from __future__ import annotations

import io
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.controller.environment import read_supplier_key
from app.controller.services.local_supplier import LocalSupplierService
from app.controller.supplier_client import SupplierClient
from app.core.calls import CallLog
from app.core.endpoints import HostPort
from app.core.ids import OTHER_CASE_ID
from app.core.repo import CASES_DIR, SAMPLE_CASE
from app.core.roles import Layer
from app.core.run import Run
from app.core.run_tree import ToolIdentity
from tests.support.whole_runs import bare_run, bare_tree


@dataclass
class Bench:
    run: Run
    client: SupplierClient
    real_key: bytes
    stream: io.StringIO


@contextmanager
def nono_bench() -> Iterator[Bench]:
    """A fresh run tree and supplier API, so request ids of one run are never reused."""
    # Not pytest's tmp_path: its parents are 0700, which the tool's uid could not traverse.
    base = Path(tempfile.mkdtemp(prefix="nono-layer-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    paths = bare_tree(base)
    listener = socket.create_server(("127.0.0.1", 0))  # stands in for the AWS endpoint
    try:
        tool = ToolIdentity.for_this_controller()
        with LocalSupplierService(paths, tool, [SAMPLE_CASE, CASES_DIR / OTHER_CASE_ID]) as sup:
            reader_in = paths.workspace("reader").input
            (reader_in / "case.json").write_bytes((SAMPLE_CASE / "case.json").read_bytes())
            proposals = reader_in / "proposals"
            shutil.copytree(SAMPLE_CASE / "proposals", proposals)
            for path in [proposals, *proposals.iterdir()]:
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
            private = paths.workspace("writer").input / "private.json"
            private.write_text('{"draft_reference": "DR-test"}\n')
            os.chmod(private, 0o644)
            key = read_supplier_key(sup.key_file)
            client = SupplierClient(sup, key, CallLog(), paths.run_id)
            stream = io.StringIO()
            endpoint = HostPort(*listener.getsockname())
            run = bare_run(
                paths, Layer.NONO, supplier=sup, client=client, aws_endpoint=endpoint, stream=stream
            )
            yield Bench(run, client, key, stream)
    finally:
        listener.close()
        shutil.rmtree(base, ignore_errors=True)
