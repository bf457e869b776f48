"""Storage: the locked-down case bucket, the case, its proposals and one other case's object."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_aws as aws

from app.core.case import case_key
from app.core.control_case import control_case_document, renamed
from app.core.ids import OTHER_CASE_ID, other_case_id

from ..config import CASES_DIR, BucketOnDestroy


@dataclass(frozen=True)
class SeedObject:
    """One file of the repository's case folders and the store key it is uploaded to.

    ``content``: the bytes to upload instead of the file's own, for the control case's template
    under another id.
    """

    key: str
    source: Path
    content: bytes | None = None

    def data(self) -> bytes:
        return self.content if self.content is not None else self.source.read_bytes()


def seed_objects(case_id: str, cases_dir: Path = CASES_DIR) -> list[SeedObject]:
    """The case document, each of its proposals, and the AccessDenied control's case document
    under the id the controller reads it by (`other_case_id`), by store key."""
    case_dir = cases_dir / case_id
    objects = [SeedObject(case_key(case_id), case_dir / "case.json")]
    objects += [
        SeedObject(f"proposals/{case_id}/{proposal.name}", proposal)
        for proposal in sorted((case_dir / "proposals").glob("*.json"))
    ]
    template = cases_dir / OTHER_CASE_ID
    control = SeedObject(case_key(other_case_id(case_id)), template / "case.json")
    if renamed(case_id):
        # The stack's own case is the template's: the control is the template under another id.
        control = SeedObject(control.key, control.source, control_case_document(case_id, template))
    return [*objects, control]


@dataclass(frozen=True)
class StoreSettings:
    """The case the bucket is seeded with, and what becomes of the bucket."""

    case_id: str
    on_destroy: BucketOnDestroy
    versioning: bool


class CaseStore(pulumi.ComponentResource):
    """The S3 bucket the analyst reads its case from and writes its reports to.

    With `bucketOnDestroy: retain` everything here is retained on `pulumi destroy`, not only the
    bucket: its public access block, ownership controls, encryption and versioning are separate
    resources in the AWS provider, and deleting them would leave the kept reports in a bucket
    without those protections; the seeded case objects stay with it.
    """

    bucket_name: pulumi.Output[str]
    bucket_arn: pulumi.Output[str]
    report_prefix: str

    def __init__(
        self,
        name: str,
        settings: StoreSettings,
        aws_provider: aws.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:storage:CaseStore", name, None, opts)
        retain = settings.on_destroy is BucketOnDestroy.RETAIN
        # Retained: `pulumi destroy` forgets these and leaves them in the account as they are.
        self._opts = pulumi.ResourceOptions(
            parent=self, provider=aws_provider, retain_on_delete=retain
        )
        bucket = self._create_bucket(name, settings)
        self._lock_down(name, bucket, settings)
        self._seed(name, bucket, settings.case_id)
        self.bucket_name = bucket.bucket
        self.bucket_arn = bucket.arn
        self.report_prefix = f"reports/{settings.case_id}/"
        self.register_outputs(
            {
                "bucket_name": self.bucket_name,
                "bucket_arn": self.bucket_arn,
                "report_prefix": self.report_prefix,
            }
        )

    def _create_bucket(self, name: str, settings: StoreSettings) -> aws.s3.Bucket:
        return aws.s3.Bucket(
            f"{name}-bucket",
            bucket_prefix="procurement-analyst-",
            force_destroy=settings.on_destroy is BucketOnDestroy.FORCE_DESTROY,
            opts=self._opts,
        )

    def _lock_down(self, name: str, bucket: aws.s3.Bucket, settings: StoreSettings) -> None:
        aws.s3.BucketPublicAccessBlock(
            f"{name}-public-access",
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=self._opts,
        )
        aws.s3.BucketOwnershipControls(
            f"{name}-ownership",
            bucket=bucket.id,
            rule={"object_ownership": "BucketOwnerEnforced"},
            opts=self._opts,
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-encryption",
            bucket=bucket.id,
            rules=[
                {
                    "apply_server_side_encryption_by_default": {"sse_algorithm": "AES256"},
                    "bucket_key_enabled": True,
                }
            ],
            opts=self._opts,
        )
        if settings.versioning:
            # Turning it off later deletes this resource, which suspends versioning (S3 cannot
            # un-version a bucket) unless the bucket is retained, when versioning stays on; the
            # versions already kept stay either way.
            aws.s3.BucketVersioning(
                f"{name}-versioning",
                bucket=bucket.id,
                versioning_configuration={"status": "Enabled"},
                opts=self._opts,
            )

    def _seed(self, name: str, bucket: aws.s3.Bucket, case_id: str) -> None:
        for seed in seed_objects(case_id):
            aws.s3.BucketObjectv2(
                f"{name}-{seed.key.replace('/', '-').removesuffix('.json')}",
                bucket=bucket.id,
                key=seed.key,
                source=pulumi.FileAsset(str(seed.source))
                if seed.content is None
                else pulumi.StringAsset(seed.content.decode()),
                content_type="application/json",
                opts=self._opts,
            )
