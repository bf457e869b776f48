"""The tags every AWS resource of the stack carries, from the stack's settings: pure.

They are the AWS provider's default tags, which the provider adds to every resource that takes
tags and the program creates through it (pulumi-aws Provider `default_tags`:
"Configuration block with settings to default resource tags across all resources"), so no
resource can be created without them; and the program names the provider on every resource.
"""

from __future__ import annotations

MANAGED_BY = "pulumi"


def default_tags(project: str, stack: str, owner: str) -> dict[str, str]:
    """Project, Stack, ManagedBy, and Owner when the stack names one."""
    tags = {"Project": project, "Stack": stack, "ManagedBy": MANAGED_BY}
    if owner:
        tags["Owner"] = owner
    return tags
