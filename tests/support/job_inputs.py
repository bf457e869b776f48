"""What an analyst Job's pod spec is built from, with placeholder values: for the tests that
build pod specs directly, without running the program."""

from __future__ import annotations

from app.core.roles import Layer
from infra.pod_specs import JobInputs
from infra.targets import RuntimeTarget


def job_inputs(
    layer: Layer = Layer.BUBBLEWRAP, target: RuntimeTarget = RuntimeTarget.ISOLATED_SANDBOX
) -> JobInputs:
    return JobInputs(
        layer=layer,
        image="i",
        namespace="ns",
        case_id="rfp-001",
        bucket="b",
        region="us-west-2",
        model_id="m",
        role_name="r",
        service_account="analyst",
        target=target,
    )
