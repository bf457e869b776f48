"""Images: the two ECR repositories and, in build mode, the analyst and supplier API images.

Images are pushed by digest, with no tag. The repositories' tags are IMMUTABLE, and any tag the
stack chose could collide with itself: docker-build rebuilds whenever its own context hash
changes (it hashes file modes too, provider/internal/context.go) or when a refresh finds the
pushed tag gone (Image.Read, provider/internal/image.go in pulumi-docker-build v0.0.22), and a
rebuild that is not byte-identical gets a new digest that cannot take the old tag
(ImageTagAlreadyExistsException). A push by digest has no tag to collide: each build adds one
untagged image, and every pod runs `repository@sha256:<digest>`.
Push by digest: BuildKit's image exporter (moby/buildkit#887); ECR accepts manifests pushed by
digest, meant for IMMUTABLE repositories (awslabs/amazon-ecr-containerd-resolver#19).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_aws as aws
import pulumi_docker_build as docker_build
import pulumi_random as random

from app.core.pins import bubblewrap_build_args

from ..build_context import context_files, source_digest
from ..config import REPO_ROOT, ImageMode
from ..naming import INSTANCE_BYTES, ecr_repository_name
from ..pod_specs import IMAGE_ARCH

# The sandbox nodes are x86_64.
# The one architecture the images are built for; every pod that runs one selects its nodes.
PLATFORM = docker_build.Platform(f"linux/{IMAGE_ARCH}")

DOCKERFILES = {"analyst": "Dockerfile.analyst", "supplier-api": "Dockerfile.supplier-api"}
BUILD_ARGS = {"analyst": bubblewrap_build_args()}

# The label that ties an image to the files it was built from (infra/build_context.py).
SOURCE_LABEL = "procurement-analyst.source-sha256"


@dataclass(frozen=True)
class ImageSettings:
    """Build both images, or take the two references given."""

    mode: ImageMode
    analyst_image: str = ""
    supplier_image: str = ""


class Images(pulumi.ComponentResource):
    """The analyst and supplier API image references the workloads run, pinned by digest."""

    analyst_image: pulumi.Output[str]
    supplier_image: pulumi.Output[str]
    repository_urls: pulumi.Output[dict[str, str]]

    def __init__(
        self,
        name: str,
        settings: ImageSettings,
        aws_provider: aws.Provider,
        docker_provider: docker_build.Provider,
        random_provider: random.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:images:Images", name, None, opts)
        self._aws_provider = aws_provider
        self._docker_provider = docker_provider
        # The repositories exist in both modes, so prebuilt images can be pushed to them by CI.
        # Drawn once into this stack's state: what tells two same-named stacks of one account
        # apart when their backends give them the same organization (infra/naming.py).
        instance = random.RandomId(
            f"{name}-stack-instance",
            byte_length=INSTANCE_BYTES,
            keepers={"stack": pulumi.get_stack()},
            opts=pulumi.ResourceOptions(parent=self, provider=random_provider),
        ).hex
        repositories = {
            image: self._create_repository(name, image, instance) for image in DOCKERFILES
        }
        self.repository_urls = pulumi.Output.all(
            **{image: repo.repository_url for image, repo in repositories.items()}
        )
        if settings.mode is ImageMode.BUILD:
            self.analyst_image = self._build(name, "analyst", repositories["analyst"])
            self.supplier_image = self._build(name, "supplier-api", repositories["supplier-api"])
        else:
            self.analyst_image = pulumi.Output.from_input(settings.analyst_image)
            self.supplier_image = pulumi.Output.from_input(settings.supplier_image)
        self.register_outputs(
            {
                "analyst_image": self.analyst_image,
                "supplier_image": self.supplier_image,
                "repository_urls": self.repository_urls,
            }
        )

    def _create_repository(
        self, name: str, image: str, instance: pulumi.Output[str]
    ) -> aws.ecr.Repository:
        organization, project, stack = (
            pulumi.get_organization(),
            pulumi.get_project(),
            pulumi.get_stack(),
        )
        return aws.ecr.Repository(
            f"{name}-{image}",
            name=instance.apply(
                lambda drawn: ecr_repository_name(organization, project, stack, image, drawn)
            ),
            image_tag_mutability="IMMUTABLE",
            image_scanning_configuration=aws.ecr.RepositoryImageScanningConfigurationArgs(
                scan_on_push=True
            ),
            # Images are rebuilt from the repository, so `pulumi destroy` may drop them.
            force_delete=True,
            opts=pulumi.ResourceOptions(parent=self, provider=self._aws_provider),
        )

    def _build(self, name: str, image: str, repository: aws.ecr.Repository) -> pulumi.Output[str]:
        dockerfile = DOCKERFILES[image]
        token = aws.ecr.get_authorization_token_output(
            registry_id=repository.registry_id,
            opts=pulumi.InvokeOutputOptions(parent=self, provider=self._aws_provider),
        )
        built = docker_build.Image(
            f"{name}-{image}-build",
            # Relative paths keep the checkout's location out of the state, so two machines
            # deploying the same commit see no diff.
            context=docker_build.BuildContextArgs(location=_relative(REPO_ROOT)),
            dockerfile=docker_build.DockerfileArgs(location=_relative(REPO_ROOT / dockerfile)),
            platforms=[PLATFORM],
            labels={SOURCE_LABEL: source_digest(REPO_ROOT, context_files(REPO_ROOT, dockerfile))},
            # What the analyst image builds from source, from the one pin (app/core/pins.py);
            # Dockerfile.analyst has no defaults of its own.
            build_args=BUILD_ARGS.get(image),
            # No tags: one export to the repository, by digest only.
            push=False,
            exports=[
                docker_build.ExportArgs(
                    image=docker_build.ExportImageArgs(
                        names=[repository.repository_url], push=True, push_by_digest=True
                    )
                )
            ],
            # `pulumi preview` plans the build; only `pulumi up` builds and pushes. (A preview
            # still needs a Docker daemon with BuildKit: the provider checks for it first.)
            build_on_preview=False,
            registries=[
                docker_build.RegistryArgs(
                    address=token.proxy_endpoint,
                    username=token.user_name,
                    password=pulumi.Output.secret(token.password),
                )
            ],
            opts=pulumi.ResourceOptions(parent=self, provider=self._docker_provider),
        )
        # The pushed digest, in the repository it was pushed to: what every pod runs.
        return pulumi.Output.concat(repository.repository_url, "@", built.digest)


def _relative(path: Path) -> str:
    return os.path.relpath(path, Path.cwd())
