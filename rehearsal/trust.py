"""The role's trust policy, evaluated for one pod as EKS Pod Identity asks AWS to: the service
principal pods.eks.amazonaws.com assumes the role and tags the session with the pod's tags.

moto does not evaluate this (see `rehearsal/aws.py`), so the agent stand-in does, for the
statement shape the program renders (app/core/iam_policy.py) and IAM documents for Pod
Identity: Allow, a `Service` principal, the actions by name, and `StringEquals` conditions on
`aws:RequestTag/<tag>`. Anything else in the policy is refused as not evaluable, never ignored.
https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html
"""

from __future__ import annotations

from typing import Any, Final

SERVICE: Final = "pods.eks.amazonaws.com"
ACTIONS: Final = ("sts:AssumeRole", "sts:TagSession")
REQUEST_TAG: Final = "aws:RequestTag/"


class NotEvaluable(ValueError):
    """The policy holds something this evaluator does not model."""


def _listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _condition_holds(condition: dict[str, Any], tags: dict[str, str]) -> bool:
    for operator, entries in condition.items():
        if operator != "StringEquals":
            raise NotEvaluable(f"condition operator {operator}")
        for key, expected in entries.items():
            if not key.startswith(REQUEST_TAG):
                raise NotEvaluable(f"condition key {key}")
            if tags.get(key.removeprefix(REQUEST_TAG)) not in _listed(expected):
                return False
    return True


def _applies(statement: dict[str, Any], action: str, tags: dict[str, str]) -> bool:
    if statement.get("Effect") != "Allow":
        raise NotEvaluable(f"effect {statement.get('Effect')!r}")
    principal = statement.get("Principal")
    if not isinstance(principal, dict) or set(principal) - {"Service", "AWS", "Federated"}:
        raise NotEvaluable(f"principal {principal!r}")
    if SERVICE not in _listed(principal.get("Service")):
        return False
    if action not in _listed(statement.get("Action")):
        return False
    return _condition_holds(statement.get("Condition") or {}, tags)


def trust_allows(policy: dict[str, Any], tags: dict[str, str]) -> tuple[bool, str]:
    """Whether Pod Identity may assume the role and tag the session with `tags`, and why."""
    try:
        for action in ACTIONS:
            # Every statement is read, so one that cannot be evaluated is never skipped.
            applying = [_applies(s, action, tags) for s in policy.get("Statement", [])]
            if not any(applying):
                return False, (
                    f"no statement allows {SERVICE} {action} for a session tagged "
                    + ", ".join(f"{k}={v}" for k, v in sorted(tags.items()))
                )
    except NotEvaluable as error:
        return False, f"the trust policy holds a {error}, which the rehearsal does not evaluate"
    return True, f"{SERVICE} may {' and '.join(ACTIONS)} for this pod's session tags"
