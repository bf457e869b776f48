"""Images: the two ECR repositories and, in build mode, the analyst and supplier API images."""

from __future__ import annotations

import os
from pathlib import Path

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build

from ..build_context import content_tag, context_files
from ..config import REPO_ROOT, ImageMode, StackConfig

# The sandbox nodes are x86_64.
PLATFORM = docker_build.Platform.LINUX_AMD64

DOCKERFILES = {"analyst": "Dockerfile.analyst", "supplier-api": "Dockerfile.supplier-api"}


class Images(pulumi.ComponentResource):
    """The analyst and supplier API image references the workloads run."""

    analyst_image: pulumi.Output[str]
    supplier_image: pulumi.Output[str]
    repository_urls: pulumi.Output[dict[str, str]]

    def __init__(
        self,
        name: str,
        config: StackConfig,
        aws_provider: aws.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:images:Images", name, None, opts)
        self._aws_opts = pulumi.ResourceOptions(parent=self, provider=aws_provider)
        # The repositories exist in both modes, so prebuilt images can be pushed to them by CI.
        repositories = {
            image: self._create_repository(name, image, pulumi.get_stack()) for image in DOCKERFILES
        }
        self.repository_urls = pulumi.Output.all(
            **{image: repo.repository_url for image, repo in repositories.items()}
        )
        if config.image_mode is ImageMode.BUILD:
            self.analyst_image = self._build(name, "analyst", repositories["analyst"])
            self.supplier_image = self._build(name, "supplier-api", repositories["supplier-api"])
        else:
            self.analyst_image = pulumi.Output.from_input(config.analyst_image)
            self.supplier_image = pulumi.Output.from_input(config.supplier_image)
        self.register_outputs(
            {
                "analyst_image": self.analyst_image,
                "supplier_image": self.supplier_image,
                "repository_urls": self.repository_urls,
            }
        )

    def _create_repository(self, name: str, image: str, stack: str) -> aws.ecr.Repository:
        return aws.ecr.Repository(
            f"{name}-{image}",
            name=f"procurement-analyst/{stack}/{image}",
            image_tag_mutability="IMMUTABLE",
            image_scanning_configuration=aws.ecr.RepositoryImageScanningConfigurationArgs(
                scan_on_push=True
            ),
            # Images are rebuilt from the repository, so `pulumi destroy` may drop them.
            force_delete=True,
            opts=self._aws_opts,
        )

    def _build(self, name: str, image: str, repository: aws.ecr.Repository) -> pulumi.Output[str]:
        dockerfile = DOCKERFILES[image]
        tag = content_tag(REPO_ROOT, context_files(REPO_ROOT, dockerfile))
        token = aws.ecr.get_authorization_token_output(
            registry_id=repository.registry_id,
            opts=pulumi.InvokeOutputOptions(parent=self, provider=self._aws_opts.provider),
        )
        built = docker_build.Image(
            f"{name}-{image}-build",
            # Relative paths keep the checkout's location out of the state, so two machines
            # deploying the same commit see no diff.
            context=docker_build.BuildContextArgs(location=_relative(REPO_ROOT)),
            dockerfile=docker_build.DockerfileArgs(location=_relative(REPO_ROOT / dockerfile)),
            platforms=[PLATFORM],
            push=True,
            # `pulumi preview` plans the build; only `pulumi up` builds and pushes.
            build_on_preview=False,
            tags=[repository.repository_url.apply(lambda url: f"{url}:{tag}")],
            registries=[
                docker_build.RegistryArgs(
                    address=token.proxy_endpoint,
                    username=token.user_name,
                    password=pulumi.Output.secret(token.password),
                )
            ],
            opts=pulumi.ResourceOptions(parent=self),
        )
        # `ref` is the tag plus the pushed digest, so a pod runs exactly what was built.
        return built.ref


def _relative(path: Path) -> str:
    return os.path.relpath(path, Path.cwd())
