"""Rehearse each Job's pod on this machine as the kubelet would run it, before `pulumi up`.

`python -m rehearsal` runs the objects the Pulumi program renders (the supplier Deployment,
each layer's analyst Job and comparison pod) with the stack's real security contexts, volumes
and environment, in private namespaces, against local stand-ins for what only a cluster and AWS
have. It sits above infra and app in the import order, and nothing imports it.
"""
