"""The role's trust policy, evaluated for one pod as EKS Pod Identity asks AWS to: the service
principal pods.eks.amazonaws.com assumes the role and tags the session with the pod's tags.

moto does not evaluate this (see `rehearsal/aws.py`), so the agent stand-in does, for the
statement shapes IAM documents for Pod Identity: Allow/Deny, a `Service` principal, actions
with `*` wildcards, and `StringEquals`/`StringLike` conditions on `aws:RequestTag/<tag>`.
Anything else in the policy is refused as not evaluable, never ignored.
https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html
"""

from __future__ import annotations

from fnmatch import fnmatchcase
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
        if operator not in ("StringEquals", "StringLike"):
            raise NotEvaluable(f"condition operator {operator}")
        for key, expected in entries.items():
            if not key.startswith(REQUEST_TAG):
                raise NotEvaluable(f"condition key {key}")
            actual = tags.get(key.removeprefix(REQUEST_TAG))
            if actual is None:
                return False
            patterns = _listed(expected)
            if operator == "StringEquals" and actual not in patterns:
                return False
            if operator == "StringLike" and not any(fnmatchcase(actual, p) for p in patterns):
                return False
    return True


def _applies(statement: dict[str, Any], action: str, tags: dict[str, str]) -> bool:
    principal = statement.get("Principal")
    if not isinstance(principal, dict) or set(principal) - {"Service", "AWS", "Federated"}:
        raise NotEvaluable(f"principal {principal!r}")
    if SERVICE not in _listed(principal.get("Service")):
        return False
    if not any(fnmatchcase(action, pattern) for pattern in _listed(statement.get("Action"))):
        return False
    return _condition_holds(statement.get("Condition") or {}, tags)


def trust_allows(policy: dict[str, Any], tags: dict[str, str]) -> tuple[bool, str]:
    """Whether Pod Identity may assume the role and tag the session with `tags`, and why."""
    try:
        for action in ACTIONS:
            applying = [s for s in policy.get("Statement", []) if _applies(s, action, tags)]
            if any(s.get("Effect") == "Deny" for s in applying):
                return False, f"a Deny statement matches {action}"
            if not any(s.get("Effect") == "Allow" for s in applying):
                return False, (
                    f"no statement allows {SERVICE} {action} for a session tagged "
                    + ", ".join(f"{k}={v}" for k, v in sorted(tags.items()))
                )
    except NotEvaluable as error:
        return False, f"the trust policy holds a {error}, which the rehearsal does not evaluate"
    return True, f"{SERVICE} may {' and '.join(ACTIONS)} for this pod's session tags"
