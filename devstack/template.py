"""Reads template.yaml so the local stack and the tests build exactly what AWS would.

Intrinsic functions are kept as small tagged values; only what the local stack needs is
resolved (logical ids of tables and queues become local names).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"


class Unresolvable(ValueError):
    """A template value the local stack cannot compute (e.g. `!If`, an unknown `${...}`)."""


@dataclass(frozen=True)
class Intrinsic:
    name: str
    value: Any


class _Loader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no annotations: its classes are Any
    pass


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Intrinsic:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return Intrinsic(suffix, value)


_Loader.add_multi_constructor("!", _intrinsic)


@cache
def load(path: Path = TEMPLATE) -> dict[str, Any]:
    with path.open() as handle:
        document: dict[str, Any] = yaml.load(handle, Loader=_Loader)  # noqa: S506 - SafeLoader subclass
    return document


def resources(kind: str, path: Path = TEMPLATE) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource.get("Properties") or {}
        for logical_id, resource in load(path)["Resources"].items()
        if resource["Type"] == kind
    }


def parameter_defaults(path: Path = TEMPLATE) -> dict[str, Any]:
    return {name: spec.get("Default", "") for name, spec in (load(path).get("Parameters") or {}).items()}


def table_create_kwargs(properties: dict[str, Any], table_name: str) -> dict[str, Any]:
    """`CreateTable` arguments from an AWS::DynamoDB::Table's own properties."""
    kwargs: dict[str, Any] = {
        "TableName": table_name,
        "AttributeDefinitions": properties["AttributeDefinitions"],
        "KeySchema": properties["KeySchema"],
        "BillingMode": properties.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if properties.get("GlobalSecondaryIndexes"):
        kwargs["GlobalSecondaryIndexes"] = properties["GlobalSecondaryIndexes"]
    return kwargs


@dataclass
class LocalNames:
    """Local names for the template's tables, queues and bus (the stack name is a prefix)."""

    prefix: str = "switchboard"
    tables: dict[str, str] = field(default_factory=dict)

    def table(self, logical_id: str) -> str:
        return f"{self.prefix}-{logical_id}"

    def bucket(self, logical_id: str) -> str:
        return f"{self.prefix}-{logical_id}".lower()  # S3 names are lower case

    def queue(self, logical_id: str, properties: dict[str, Any] | None = None) -> str:
        fifo = bool((properties or {}).get("FifoQueue"))
        return f"{self.prefix}-{logical_id}" + (".fifo" if fifo else "")


def _exists(error: Exception, *codes: str) -> bool:
    response = getattr(error, "response", None) or {}
    return response.get("Error", {}).get("Code") in codes


def create_tables(
    dynamodb_client: Any, names: LocalNames, path: Path = TEMPLATE, *, exist_ok: bool = False
) -> dict[str, str]:
    """Create every table of the template; returns logical id -> table name. TTL enabled too.

    `exist_ok` keeps a table that is already there (an external endpoint the user pointed at).
    """
    created = {}
    for logical_id, properties in resources("AWS::DynamoDB::Table", path).items():
        name = names.table(logical_id)
        created[logical_id] = name
        try:
            dynamodb_client.create_table(**table_create_kwargs(properties, name))
        except Exception as error:
            if exist_ok and _exists(error, "ResourceInUseException"):
                continue
            raise
        ttl = properties.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            dynamodb_client.update_time_to_live(
                TableName=name, TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True}
            )
    return created


def create_buckets(s3_client: Any, names: LocalNames, path: Path = TEMPLATE) -> dict[str, str]:
    """Create every bucket of the template with its own settings (public access block,
    ownership, default encryption, lifecycle); returns logical id -> name. Creating a bucket the
    stack already owns is a no-op.

    The bucket policy is not applied: it only refuses requests that are not over TLS, and the
    local endpoint is plain http on loopback (moto also applies a Deny without its condition)."""
    created: dict[str, str] = {}
    for logical_id, properties in resources("AWS::S3::Bucket", path).items():
        name = names.bucket(logical_id)
        created[logical_id] = name
        try:
            s3_client.create_bucket(Bucket=name)
        except Exception as error:
            if not _exists(error, "BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise
        if "PublicAccessBlockConfiguration" in properties:
            s3_client.put_public_access_block(
                Bucket=name, PublicAccessBlockConfiguration=properties["PublicAccessBlockConfiguration"]
            )
        if "OwnershipControls" in properties:
            s3_client.put_bucket_ownership_controls(Bucket=name, OwnershipControls=properties["OwnershipControls"])
        if "BucketEncryption" in properties:
            # CloudFormation's `ServerSideEncryptionByDefault` is the API's `Apply...` one.
            rules = [
                {
                    "ApplyServerSideEncryptionByDefault": rule["ServerSideEncryptionByDefault"],
                    "BucketKeyEnabled": bool(rule.get("BucketKeyEnabled")),
                }
                for rule in properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
            ]
            s3_client.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules})
        lifecycle = properties.get("LifecycleConfiguration")
        if lifecycle:
            s3_client.put_bucket_lifecycle_configuration(
                Bucket=name, LifecycleConfiguration={"Rules": [_lifecycle_rule(rule) for rule in lifecycle["Rules"]]}
            )
    return created


def _lifecycle_rule(rule: dict[str, Any]) -> dict[str, Any]:
    """A CloudFormation lifecycle rule in the S3 API's words."""
    api: dict[str, Any] = {"ID": rule.get("Id", "rule"), "Status": rule["Status"], "Filter": {"Prefix": ""}}
    if "ExpirationInDays" in rule:
        api["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
    abort = rule.get("AbortIncompleteMultipartUpload")
    if abort:
        api["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": int(abort["DaysAfterInitiation"])}
    return api


QUEUE_ATTRIBUTES = (
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "MaximumMessageSize",
    "ReceiveMessageWaitTimeSeconds",
    "FifoQueue",
    "ContentBasedDeduplication",
    "SqsManagedSseEnabled",
)


@dataclass(frozen=True)
class Queue:
    logical_id: str
    url: str
    arn: str
    visibility_timeout: int


def create_queues(
    sqs_client: Any, names: LocalNames, path: Path = TEMPLATE, *, visibility_timeout: int | None = None
) -> dict[str, Queue]:
    """Create every queue of the template from its own properties, RedrivePolicy included.

    Dead-letter targets are created first so `!GetAtt X.Arn` resolves to the local ARN.
    `visibility_timeout` overrides every queue's (tests that watch a retry in seconds).
    Creating a queue that exists with the same attributes is a no-op in SQS.
    """
    definitions = resources("AWS::SQS::Queue", path)
    ordered = sorted(definitions, key=lambda logical_id: "RedrivePolicy" in definitions[logical_id])
    queues: dict[str, Queue] = {}
    for logical_id in ordered:
        properties = definitions[logical_id]
        attributes = {name: _attribute(properties[name]) for name in QUEUE_ATTRIBUTES if name in properties}
        if visibility_timeout is not None:
            attributes["VisibilityTimeout"] = str(visibility_timeout)
        redrive = properties.get("RedrivePolicy")
        if redrive:
            target = ref_target(redrive["deadLetterTargetArn"])
            attributes["RedrivePolicy"] = json.dumps(
                {"deadLetterTargetArn": queues[target].arn, "maxReceiveCount": int(redrive["maxReceiveCount"])}
            )
        url = sqs_client.create_queue(QueueName=names.queue(logical_id, properties), Attributes=attributes)["QueueUrl"]
        found = sqs_client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn", "VisibilityTimeout"])
        queues[logical_id] = Queue(
            logical_id, url, found["Attributes"]["QueueArn"], int(found["Attributes"]["VisibilityTimeout"])
        )
    return queues


def create_event_buses(events_client: Any, names: LocalNames, path: Path = TEMPLATE) -> dict[str, str]:
    """Create every custom event bus; returns logical id -> bus name."""
    buses = {}
    for logical_id, properties in resources("AWS::Events::EventBus", path).items():
        name = substitute(properties.get("Name") or f"{names.prefix}-{logical_id}", names)
        try:
            events_client.create_event_bus(Name=name)
        except Exception as error:
            if not _exists(error, "ResourceAlreadyExistsException"):
                raise
        buses[logical_id] = name
    return buses


def substitute(value: Any, names: LocalNames, region: str = "us-east-1", account: str = "000000000000") -> str:
    """A string, or a `!Sub` of pseudo parameters only, as the local stack names it."""
    text = value.value if isinstance(value, Intrinsic) and value.name == "Sub" else value
    if not isinstance(text, str):
        raise Unresolvable(f"cannot resolve {value!r} locally")
    for pseudo, replacement in {
        "${AWS::StackName}": names.prefix,
        "${AWS::Region}": region,
        "${AWS::AccountId}": account,
        "${AWS::Partition}": "aws",
        "${AWS::URLSuffix}": "amazonaws.com",
    }.items():
        text = text.replace(pseudo, replacement)
    if "${" in text:
        raise Unresolvable(f"cannot resolve {text!r} locally")
    return text


def function_environment(refs: dict[str, str], names: LocalNames, path: Path = TEMPLATE) -> dict[str, str]:
    """The functions' environment variables (Globals, then each function's), resolved locally.

    `refs` maps logical ids (tables, queues, buses) to their local names or URLs; parameters
    take their defaults. A value that cannot be resolved locally (`!If`, `!GetAtt`) is left out
    for the caller to set.
    """
    document = load(path)
    values = {**parameter_defaults(path), **refs}
    blocks = [((document.get("Globals") or {}).get("Function") or {}).get("Environment")]
    blocks += [properties.get("Environment") for properties in resources("AWS::Serverless::Function", path).values()]
    environment: dict[str, str] = {}
    for block in blocks:
        for name, value in ((block or {}).get("Variables") or {}).items():
            if isinstance(value, Intrinsic) and value.name == "Ref" and value.value in values:
                environment[name] = str(values[value.value])
            elif isinstance(value, Intrinsic) and value.name != "Sub":
                continue
            else:
                try:
                    environment[name] = substitute(value, names)
                except Unresolvable:
                    continue
    return environment


def _attribute(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def ref_target(value: Any) -> str:
    if isinstance(value, Intrinsic) and value.name == "GetAtt":
        target = value.value if isinstance(value.value, str) else ".".join(value.value)
        return target.split(".")[0]
    if isinstance(value, Intrinsic) and value.name == "Ref":
        return str(value.value)
    raise Unresolvable(f"cannot resolve {value!r} locally")


# --- people: the user pool and its app clients -------------------------------------------------

_USER_POOL_PROPERTIES = (
    "UsernameAttributes",
    "AutoVerifiedAttributes",
    "UsernameConfiguration",
    "MfaConfiguration",
    "Policies",
    "AdminCreateUserConfig",
    "AccountRecoverySetting",
)
_CLIENT_PROPERTIES = (
    "ClientName",
    "GenerateSecret",
    "ExplicitAuthFlows",
    "PreventUserExistenceErrors",
    "EnableTokenRevocation",
    "AccessTokenValidity",
    "IdTokenValidity",
    "RefreshTokenValidity",
    "TokenValidityUnits",
)


def create_user_pools(cognito_client: Any, names: LocalNames, path: Path = TEMPLATE) -> dict[str, str]:
    """The template's user pools and their app clients, with the template's own properties
    (password policy, sign-in by email, flows), so the local pool refuses what the deployed
    one refuses. Returns logical id -> pool id or client id."""
    refs: dict[str, str] = {}
    for logical_id, properties in resources("AWS::Cognito::UserPool", path).items():
        kwargs = {name: properties[name] for name in _USER_POOL_PROPERTIES if name in properties}
        answer = cognito_client.create_user_pool(PoolName=f"{names.prefix}-{logical_id}", **kwargs)
        refs[logical_id] = answer["UserPool"]["Id"]
    for logical_id, properties in resources("AWS::Cognito::UserPoolClient", path).items():
        pool = refs[ref_target(properties["UserPoolId"])]
        kwargs = {name: properties[name] for name in _CLIENT_PROPERTIES if name in properties}
        answer = cognito_client.create_user_pool_client(UserPoolId=pool, **kwargs)
        refs[logical_id] = answer["UserPoolClient"]["ClientId"]
    return refs
