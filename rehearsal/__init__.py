"""Rehearse each Job's pod on this machine as the kubelet would run it, before `pulumi up`.

`python -m rehearsal` runs the objects the Pulumi program renders (the supplier Deployment,
each layer's analyst Job and comparison pod) with the stack's real security contexts, volumes
and environment, in private namespaces, against local stand-ins for what only a cluster and AWS
have. It sits above infra and app in the import order, and nothing imports it.

Scope: what it reproduces, and from which upstream source.

- The kubelet's container environment (image ENV, HOSTNAME, Service variables, `env` with
  `valueFrom` and `$(VAR)`): kubernetes.io, "Define environment variables for a container".
- Secret, ConfigMap, emptyDir and projected volumes with `items`, `defaultMode` and `fsGroup`,
  written as the kubelet's atomic writer does (pkg/volume/util/atomic_writer.go).
- The runtime's process setup: uid/gid/groups, `privileged`, default capabilities less `drop`,
  no_new_privs, a read-only root, masked and read-only /proc paths (runc's and containerd's
  defaults), and the container's seccomp profile as containerd chooses it and runc loads it
  (containerd's CRI `generateSeccompSpecOpts`, runc's `libcontainer/seccomp`).
- Init containers first, in order, each to completion; a Job's deadline; a tcpSocket readiness
  probe.
- EKS Pod Identity's webhook (aws/amazon-eks-pod-identity-webhook, pkg/handler/handler.go: every
  container, init containers included, but those `eks.amazonaws.com/skip-containers` lists) and
  its agent's credentials endpoint, with the role's trust policy evaluated for the pod.
- Services by ClusterIP and cluster DNS name (/etc/hosts), and the analyst pods'
  ApplicationNetworkPolicy as nftables rules on the pods' network namespace.
- The Security Profiles Operator's one effect a pod sees: each SeccompProfile's spec on the node.

What it deliberately does not reproduce, and says so in its output: the Nitro VM (every pod runs
on this machine's kernel), scheduling (affinity, tolerations, node selection), the API server and
admission beyond the Pod Identity webhook, image pulls (the checkout stands in for the images),
per-pod network namespaces (one is shared; the supplier's ingress policy is therefore not
applied), the cluster DNS server, Bedrock (the offline model), and any AWS service but moto's S3,
IAM and STS. A pod-spec field outside this list is printed as not simulated, never guessed.
"""
