"""The local stack provisions the template's media bucket on its moto endpoint, with the
template's own settings, and hands its name to the functions."""

from __future__ import annotations

import boto3

from devstack.stack import LocalStack


def test_the_media_bucket_is_private_encrypted_and_expires_its_objects(local_stack: LocalStack) -> None:
    name = local_stack.buckets["MediaBucket"]
    assert local_stack.environment["MEDIA_BUCKET"] == name
    s3 = boto3.client(
        "s3",
        endpoint_url=local_stack.aws_url,
        region_name="us-east-1",
        aws_access_key_id=local_stack.environment.get("AWS_ACCESS_KEY_ID", "testing"),
        aws_secret_access_key=local_stack.environment.get("AWS_SECRET_ACCESS_KEY", "testing"),
    )
    blocked = s3.get_public_access_block(Bucket=name)["PublicAccessBlockConfiguration"]
    assert all(
        blocked[flag] for flag in ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets")
    )
    [rule] = s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    [lifecycle] = s3.get_bucket_lifecycle_configuration(Bucket=name)["Rules"]
    assert lifecycle["Expiration"]["Days"] == 15
    ownership = s3.get_bucket_ownership_controls(Bucket=name)["OwnershipControls"]["Rules"]
    assert ownership == [{"ObjectOwnership": "BucketOwnerEnforced"}]
