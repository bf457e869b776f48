"""Rehearse each Job's pod on this machine as the kubelet would run it, before `pulumi up`.

`python -m rehearsal` runs the objects the Pulumi program renders (the supplier Deployment,
each layer's analyst Job and comparison pod) with the stack's real security contexts, volumes
and environment, in private namespaces, against local stand-ins for what only a cluster and AWS
have. It sits above infra and app in the import order, and nothing imports it.

Scope. It reproduces what the kubelet, the container runtime and EKS do with the fields the
stack's own objects set (`make manifests` shows them all), each from a named upstream source, and
no more: a field those objects do not set is printed as not simulated or, where running without
it would start the container differently than the kubelet would, refused by name, never guessed.

- The kubelet's container environment: image ENV, HOSTNAME, the Services' variables, `env`
  values with `$(VAR)` expanded (kubernetes.io, "Define environment variables for a container").
- Secret, ConfigMap, emptyDir and projected-token volumes with `items`, `defaultMode` and
  `fsGroup`, laid out as the kubelet's atomic writer does (pkg/volume/util/atomic_writer.go,
  pkg/volume/volume_linux.go SetVolumeOwnership, pkg/volume/projected/projected.go).
- The runtime's process setup: uid/gid and the fsGroup, `privileged`, containerd's default
  capabilities with `drop` and `add`, no_new_privs, a read-only root, containerd's masked and
  read-only /proc paths unless `procMount: Unmasked` (containerd oci/spec.go, oci/spec_opts.go),
  and the container's seccomp profile as containerd chooses it and runc loads it (containerd's CRI
  `generateSeccompSpecOpts`, runc's libcontainer/seccomp and standard_init_linux.go), for the
  actions and comparisons the stack's profiles use.
- Init containers first, in order, each to completion; a Job's deadline; a tcpSocket readiness
  probe.
- EKS Pod Identity's webhook (aws/amazon-eks-pod-identity-webhook, pkg/handler/handler.go: every
  container, init containers included, but those `eks.amazonaws.com/skip-containers` lists) and
  its agent's credentials endpoint, with the role's trust policy, in the one shape the program
  renders (app/core/iam_policy.py), evaluated for the pod.
- Services by ClusterIP and cluster DNS name, through a resolver at the cluster DNS address that
  each pod's /etc/resolv.conf names (kubelet pkg/kubelet/network/dns/dns.go), and the analyst
  pods' ApplicationNetworkPolicy as nftables rules on the pods' network namespace.
- The Security Profiles Operator's one effect a pod sees: each SeccompProfile's spec on the node.
- Its own verdicts on what ran: the Job's stored checks by id, where the report landed, what the
  Pod Identity agent served, the filters counted, and, on a failure, the pod-spec field it points
  at (rehearsal/verdicts.py, rehearsal/diagnose.py).

What it deliberately does not reproduce, and says so in its output: the Nitro VM (every pod runs
on this machine's kernel), scheduling (affinity, tolerations, node selection), the API server and
admission beyond the Pod Identity webhook, image pulls (the checkout stands in for the images),
`hostUsers: false` (no user namespace per pod), per-pod network namespaces (one is shared; the
supplier's ingress policy is therefore not applied), CoreDNS itself, Bedrock (the offline
model), any AWS service but moto's S3, IAM and STS, and every field the stack's objects do not
set: `valueFrom` and `subPath` (refused), `supplementalGroups`, AppArmor, resources (printed).
"""
