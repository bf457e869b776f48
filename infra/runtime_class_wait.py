"""Waits, within a bound, until a created cluster lets the deployer read the sandbox RuntimeClass.

On the first `pulumi up` of `clusterMode: create`, the RuntimeClass is asked for as soon as the
deployer's access entry exists: EKS may not have propagated that access yet (401, 403), and Auto
Mode may not have created the RuntimeClass yet (404). Both pass within minutes, so the read is
retried for a bounded time; anything else, or the bound, stops `pulumi up` with one error that
names what was last seen and the fix. The wait is a dynamic resource of the program (it runs in
`up` only, never in a preview); the policy of the wait is the pure function `wait_until_readable`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import pulumi
from pulumi import dynamic

# Access entries take up to a few minutes to apply; Auto Mode creates its RuntimeClasses with
# the cluster's first nodes. 10 s apart, for at most 10 minutes.
ATTEMPTS: Final = 60
INTERVAL_SECONDS: Final = 10.0
# What the API server answers while the access or the object is still on its way.
TRANSIENT_STATUSES: Final = frozenset({401, 403, 404})


class NotYetReadable(Exception):
    """One read that may succeed later: the API server's status and its words."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status


class RuntimeClassUnavailable(Exception):
    """The RuntimeClass could not be read within the bound; the message says what to do."""


@dataclass(frozen=True)
class WaitOutcome:
    attempts: int
    waited_seconds: float


def wait_until_readable(
    read: Callable[[], None],
    name: str,
    *,
    attempts: int = ATTEMPTS,
    interval: float = INTERVAL_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> WaitOutcome:
    """Calls `read` until it returns, retrying only TRANSIENT_STATUSES, at most `attempts` times."""
    last = ""
    for attempt in range(1, attempts + 1):
        try:
            read()
            return WaitOutcome(attempt, (attempt - 1) * interval)
        except NotYetReadable as error:
            if error.status not in TRANSIENT_STATUSES:
                raise RuntimeClassUnavailable(
                    f"reading the {name} RuntimeClass failed: {error}"
                ) from error
            last = str(error)
        if attempt < attempts:
            sleep(interval)
    raise RuntimeClassUnavailable(
        f"the {name} RuntimeClass was still not readable after {attempts} attempts over "
        f"{(attempts - 1) * interval:.0f}s (last answer: {last}): a 401 or 403 means the "
        "deployer's access entry has not taken effect (aws eks list-associated-access-policies), "
        f"a 404 that the cluster offers no {name} RuntimeClass (an EKS Auto Mode cluster on "
        "Kubernetes 1.36 or later has it); run `pulumi up` again once it does"
    )


def _read_with_kubeconfig(kubeconfig: str, name: str) -> Callable[[], None]:
    def read() -> None:
        from kubernetes import client, config

        api = config.new_client_from_config_dict(json.loads(kubeconfig))
        try:
            client.NodeV1Api(api).read_runtime_class(name)
        except client.ApiException as error:
            raise NotYetReadable(int(error.status or 0), str(error.reason)) from error

    return read


class _RuntimeClassWait(dynamic.ResourceProvider):
    def _wait(self, props: dict[str, Any]) -> dict[str, Any]:
        name = str(props["name"])
        outcome = wait_until_readable(_read_with_kubeconfig(str(props["kubeconfig"]), name), name)
        return {**props, "attempts": outcome.attempts}

    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        return dynamic.CreateResult(id_=f"{props['name']}-readable", outs=self._wait(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> dynamic.UpdateResult:
        return dynamic.UpdateResult(outs=self._wait(news))


def dynamic_provider(name: str, parent: pulumi.Resource) -> pulumi.ProviderResource:
    """An explicit provider for the program's dynamic resources: `pulumi:disable-default-
    providers: ["*"]` refuses every default provider but the engine's own package `pulumi`
    (pkg/resource/deploy/providers, shouldDenyRequest), the Python dynamic one included."""
    return pulumi.ProviderResource("pulumi-python", name, {}, pulumi.ResourceOptions(parent=parent))


class RuntimeClassReadable(dynamic.Resource):
    """Exists once the RuntimeClass `name` could be read with `kubeconfig` (see the module)."""

    def __init__(
        self,
        resource_name: str,
        *,
        name: str,
        kubeconfig: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            _RuntimeClassWait(),
            resource_name,
            {"name": name, "kubeconfig": kubeconfig, "attempts": None},
            opts,
        )
