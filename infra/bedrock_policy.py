"""Builds the analyst role's Bedrock statement: invoke the one configured model, nothing else.

This lives beside the infrastructure rather than in `policies/` because the S3 template there
is shared with the local run, which has no Bedrock (it uses the offline model), and because a
Bedrock ARN needs the account and Region only the deployment knows.
"""

from __future__ import annotations

from typing import Any

INVOKE_ACTIONS = ["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"]

# Prefixes of Bedrock's system-defined cross-Region inference profiles. A model id that starts
# with one of them names a profile, which routes each call to a foundation model in one of
# several Regions; any other id names a foundation model in this Region.
PROFILE_PREFIXES = ("global", "us", "us-gov", "eu", "apac", "jp", "au", "ca")


def is_inference_profile(model_id: str) -> bool:
    """Whether the id names a cross-Region inference profile rather than a foundation model."""
    prefix, _, rest = model_id.partition(".")
    return bool(rest) and prefix in PROFILE_PREFIXES


def bedrock_invoke_policy(
    *, model_id: str, region: str, account_id: str, partition: str
) -> dict[str, Any]:
    """The permissions policy that lets the role invoke `model_id` and no other model."""
    if not is_inference_profile(model_id):
        return _document(
            {
                "Sid": "InvokeTheConfiguredModel",
                "Effect": "Allow",
                "Action": INVOKE_ACTIONS,
                "Resource": f"arn:{partition}:bedrock:{region}::foundation-model/{model_id}",
            }
        )
    profile_arn = f"arn:{partition}:bedrock:{region}:{account_id}:inference-profile/{model_id}"
    prefix, _, base_model = model_id.partition(".")
    # A profile call is authorised twice: on the profile, and on the foundation model in the
    # Region the profile routes to. The Region is Bedrock's choice, hence the wildcard; the
    # condition confines that grant to calls made through this one profile.
    model_arns = [f"arn:{partition}:bedrock:*::foundation-model/{base_model}"]
    if prefix == "global":
        # Global profiles may also route to the Region-less global model ARN.
        model_arns.append(f"arn:{partition}:bedrock:::foundation-model/{base_model}")
    return _document(
        {
            "Sid": "InvokeTheConfiguredProfile",
            "Effect": "Allow",
            "Action": INVOKE_ACTIONS,
            "Resource": profile_arn,
        },
        {
            "Sid": "InvokeItsModelOnlyThroughTheProfile",
            "Effect": "Allow",
            "Action": INVOKE_ACTIONS,
            "Resource": model_arns,
            "Condition": {"StringEquals": {"bedrock:InferenceProfileArn": profile_arn}},
        },
    )


def _document(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}
