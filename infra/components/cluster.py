"""Cluster access: the EKS cluster (found or created), the explicit Kubernetes provider, and the
required isolated-sandbox RuntimeClass."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from ..config import ClusterMode, StackConfig
from ..kubeconfig import exec_kubeconfig
from ..pod_specs import SANDBOX_RUNTIME_CLASS


class ClusterAccess(pulumi.ComponentResource):
    """Connects the stack to its cluster and proves the sandbox RuntimeClass is there."""

    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    provider: k8s.Provider
    runtime_class: k8s.node.v1.RuntimeClass

    def __init__(
        self,
        name: str,
        config: StackConfig,
        aws_provider: aws.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:cluster:ClusterAccess", name, None, opts)
        self._config = config
        self._aws = aws_provider
        created = self._create_cluster(name) if config.cluster_mode is ClusterMode.CREATE else None
        found = self._look_up_cluster(created)
        self.cluster_name = found.name
        self.endpoint = found.endpoint
        self.provider = self._create_provider(name, found)
        self.runtime_class = self._require_runtime_class()
        self.register_outputs({"cluster_name": self.cluster_name, "endpoint": self.endpoint})

    def _create_cluster(self, name: str) -> eks.Cluster:
        # EKS Auto Mode runs the nodes, networking and the Pod Identity agent, and API
        # authentication mode uses access entries rather than the aws-auth ConfigMap.
        return eks.Cluster(
            f"{name}-eks",
            name=self._config.cluster_name,
            version=self._config.kubernetes_version,
            authentication_mode=eks.AuthenticationMode.API,
            auto_mode=eks.AutoModeOptionsArgs(enabled=True),
            opts=pulumi.ResourceOptions(parent=self, providers={"aws": self._aws}),
        )

    def _look_up_cluster(
        self, created: eks.Cluster | None
    ) -> pulumi.Output[aws.eks.GetClusterResult]:
        # One path for both modes: a created cluster is read back by name once it exists, so
        # the provider is built from the same fields whichever mode made the cluster.
        return aws.eks.get_cluster_output(
            name=self._config.cluster_name,
            opts=pulumi.InvokeOutputOptions(
                parent=self, provider=self._aws, depends_on=[created] if created else None
            ),
        )

    def _create_provider(
        self, name: str, found: pulumi.Output[aws.eks.GetClusterResult]
    ) -> k8s.Provider:
        kubeconfig = found.apply(
            lambda cluster: json.dumps(
                exec_kubeconfig(
                    cluster_name=cluster.name,
                    endpoint=cluster.endpoint,
                    ca_data=cluster.certificate_authorities[0].data,
                    region=self._config.region,
                )
            )
        )
        return k8s.Provider(
            f"{name}-k8s",
            kubeconfig=kubeconfig,
            # Only a change of cluster replaces the provider (and so every object it made);
            # a refreshed endpoint, CA or token command is an in-place update.
            cluster_identifier=found.arn,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _require_runtime_class(self) -> k8s.node.v1.RuntimeClass:
        # Read, never created or deleted: the cluster provides the sandbox. If it is missing,
        # the read fails and `pulumi up` stops before any workload is scheduled without it.
        return k8s.node.v1.RuntimeClass.get(
            "isolated-sandbox",
            SANDBOX_RUNTIME_CLASS,
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider),
        )
