"""Resource options for a component's children.

A component's `depends_on` orders the component's own registration only: the SDK sends each
child's dependencies as that child's options say, and a child does not inherit its parent's.
So every component hands its `depends_on` down to its children here, and what must exist before
a component's objects (the RuntimeClass, the Secrets a pod mounts) is one `ResourceOptions` away.
"""

from __future__ import annotations

import pulumi


def child_options(
    component: pulumi.ComponentResource,
    opts: pulumi.ResourceOptions | None,
    provider: pulumi.ProviderResource | None = None,
    *,
    retain_on_delete: bool | None = None,
) -> pulumi.ResourceOptions:
    """`parent=component`, the component's `depends_on`, and an explicit provider."""
    return pulumi.ResourceOptions(
        parent=component,
        provider=provider,
        depends_on=opts.depends_on if opts is not None else None,
        retain_on_delete=retain_on_delete,
    )
