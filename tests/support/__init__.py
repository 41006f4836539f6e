"""Plain helpers the tests import; fixtures live in the conftest.py nearest to all their users.

- `aws`: the template's tables, queues and bus on moto (`AwsResources`).
- `api`: the HTTP API called in-process (`Client`), tenants and keys, and `SECRET_WATCH`.
- `fakes`: one in-memory fake per port of the layer (secrets, provider client, catalog, ...).
- `builders`: principals, instances and provider events, as the services receive them.
- `sending`: the send worker over those fakes, and pool numbers for it.
- `pool`: a tenant's pool built through the API (`PoolWorld`).
- `connections`: simulator-backed connections for the calls and call-limit tests.
- `provider_webhooks`: a tenant's catalog and signed provider webhooks through the API.
- `downstream`: the Chatwoot-style fake helpdesk (in-process transport or a loopback server).
- `sqs`: Lambda's SQS event records, and a queue drained through a template function.
- `samples`: the sample events of events/ (also used with `sam local invoke`).
"""
