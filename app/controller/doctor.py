"""`doctor`: every prerequisite of each layer here, PASS or FAIL, with the fix for each FAIL.

Each layer's list opens with what `run` refuses as bad input before it creates anything (the
work directory, the file size limit: the same checks, in the same words), then the list the
layer's preflight stops on, as the layer states it (app/tools/registry.py); doctor evaluates all
of them instead of stopping at the first. In cluster mode (ANALYST_MODE=cluster) it adds what
the pod must have been given: every variable of the Job and of EKS Pod Identity, through the
parser a run's settings go through (app/core/cluster_settings.py), and a supplier Service that
resolves and answers.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import boto3

from app.controller.environment import CLUSTER_BASE, pod_credentials
from app.controller.limits import check_file_size_limit
from app.controller.workdir import WorkBase, check_chosen, choose_work_base
from app.core import cluster_env, cluster_settings
from app.core.cluster_settings import SettingUnusable, Variable
from app.core.errors import BadInput, RunStopped, shown
from app.core.roles import Layer
from app.core.run_tree import MAX_OUTPUT_FILE_BYTES, ToolIdentity
from app.tools.prerequisites import (
    WORK_DIR_HOLDS_A_RUN,
    Finding,
    Outcome,
    Prerequisite,
    evaluate,
    holds,
    missing,
)
from app.tools.registry import answers

CONNECT_TIMEOUT_SECONDS = 5
SUPPLIER_RESOLVES = "the supplier Service's name resolves"
POD_CREDENTIALS = "the Pod Identity agent gives the pod's role credentials"
FILE_SIZE_LIMIT = (
    f"the file size limit (ulimit -f) is at least a tool's own, {MAX_OUTPUT_FILE_BYTES} bytes"
)


@dataclass(frozen=True)
class DoctorOptions:
    layers: Sequence[Layer]
    work_base: Path | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


def in_cluster(environ: Mapping[str, str]) -> bool:
    return environ.get(cluster_env.MODE) == cluster_env.CLUSTER_MODE


def _finding(check: Callable[[], str]) -> Finding:
    """A check that `run` makes before anything exists, as doctor reports it: the same words."""
    try:
        found = check()
    except BadInput as error:
        return missing(error.message, error.remedy or "see the message")
    return holds(found)


def run_settings(layer: Layer, directory: Path | WorkBase) -> list[Prerequisite]:
    """What a run under ``layer`` refuses before it creates anything (bad input to `run`)."""
    base = directory if isinstance(directory, WorkBase) else WorkBase(directory)
    return [
        Prerequisite(
            WORK_DIR_HOLDS_A_RUN,
            lambda: _finding(lambda: shown(check_chosen(base, (layer,)))),
        ),
        Prerequisite(FILE_SIZE_LIMIT, lambda: _finding(check_file_size_limit)),
    ]


def layer_prerequisites(layer: Layer, tool: ToolIdentity, directory: Path) -> list[Prerequisite]:
    """The list the layer's own preflight stops on, as the layer states it."""
    return answers(layer).prerequisites(tool, directory)


def _variable(variable: Variable[Any], environ: Mapping[str, str]) -> Prerequisite:
    def check() -> Finding:
        try:
            variable.value(environ)
        except SettingUnusable as error:
            return missing(error.message, error.remedy)
        return holds(repr(environ[variable.name]) if variable.name in environ else "not set")

    return Prerequisite(_claim(variable), check)


def _claim(variable: Variable[Any]) -> str:
    return f"{variable.name} is {variable.what}"


def cluster_prerequisites(environ: Mapping[str, str]) -> list[Prerequisite]:
    """What the Job and EKS must have given this pod before either layer can run a case: each
    variable through the parser a run's settings go through, then the supplier Service."""
    supplier_set = f"{cluster_settings.SUPPLIER_URL.name} is {cluster_settings.SUPPLIER_URL.what}"

    def supplier_address() -> tuple[str, int]:
        endpoint = cluster_settings.SUPPLIER_URL.value(environ)
        return endpoint.host, endpoint.port

    def resolves() -> Finding:
        host, port = supplier_address()
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as error:
            return missing(
                f"{host} does not resolve ({error})",
                f"the {cluster_env.SUPPLIER_SERVICE} Service must exist in this namespace: "
                "kubectl get service -n <namespace>",
            )
        return holds(f"{host} is {infos[0][4][0]}")

    def answers() -> Finding:
        host, port = supplier_address()
        try:
            with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_SECONDS):
                pass
        except OSError as error:
            return missing(
                f"nothing accepts connections at {host}:{port} ({error})",
                f"the {cluster_env.SUPPLIER_SERVICE} Deployment must be ready: "
                "kubectl get deployment -n <namespace>",
            )
        return holds(f"{host}:{port} accepts TCP connections")

    def credentials() -> Finding:
        agent = cluster_settings.CREDENTIALS_URI.value(environ)
        session = boto3.Session(region_name=cluster_settings.REGION.value(environ))
        try:
            pod_credentials(session, agent)
        except RunStopped as error:
            return missing(error.message, error.remedy)
        return holds(f"{agent.url} gave credentials for the pod's role")

    needed: tuple[Variable[Any], ...] = (
        cluster_settings.CREDENTIALS_URI,
        cluster_settings.TOKEN_FILE,
        cluster_settings.REGION,
    )
    return [
        *(_variable(variable, environ) for variable in cluster_settings.VARIABLES),
        Prerequisite(POD_CREDENTIALS, credentials, tuple(map(_claim, needed))),
        Prerequisite(SUPPLIER_RESOLVES, resolves, (supplier_set,)),
        Prerequisite(
            "the supplier Service accepts connections", answers, (supplier_set, SUPPLIER_RESOLVES)
        ),
    ]


def _print(outcome: Outcome, stream: TextIO) -> None:
    claim = outcome.prerequisite.claim
    finding = outcome.finding
    if finding is None:
        waits = ", ".join(f'"{c}"' for c in outcome.waits_for)
        print(f"SKIP {claim}: not checked, it needs {waits}", file=stream)
    elif finding.ok:
        print(f"PASS {claim}: {finding.found}", file=stream)
    else:
        print(f"FAIL {claim}: {finding.found}", file=stream)
        print(f"     fix: {finding.fix}", file=stream)


def doctor(options: DoctorOptions, stream: TextIO) -> bool:
    """Prints every prerequisite of each layer; True when every chosen layer can run here."""
    environ = options.environ
    cluster = in_cluster(environ)
    tool = ToolIdentity.for_this_controller()
    chosen = choose_work_base(options.work_base, environ, CLUSTER_BASE if cluster else None)
    base = chosen.path
    shared: list[Outcome] = []
    if cluster:
        print(
            "==> doctor: cluster mode (ANALYST_MODE=cluster): what the pod was given", file=stream
        )
        shared = evaluate(cluster_prerequisites(environ))
        for outcome in shared:
            _print(outcome, stream)
    runnable = True
    for layer in options.layers:
        print(
            f"==> doctor: {layer.value} ({'cluster' if cluster else 'local'} mode, tool uid "
            f"{tool.uid}, work directory {base})",
            file=stream,
        )
        outcomes = evaluate([*run_settings(layer, chosen), *layer_prerequisites(layer, tool, base)])
        for outcome in outcomes:
            _print(outcome, stream)
        short = [o for o in [*shared, *outcomes] if not o.ok]
        if short:
            runnable = False
            print(
                f"{layer.value} cannot run here: {len(short)} of {len(shared) + len(outcomes)} "
                "prerequisites do not hold or were not checked",
                file=stream,
            )
        else:
            print(
                f"{layer.value} can run here: all {len(outcomes)} prerequisites hold", file=stream
            )
    stream.flush()
    return runnable
