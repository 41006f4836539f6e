"""The worlds the tests, the benchmarks and the soak all build: AWS on moto, the API in-process,
tenants, fakes and signed provider webhooks. Tests import them from here; nothing here imports
the tests.

- `aws`: the template's tables, queues and bus on moto (`AwsResources`).
- `api`: the HTTP API called in-process (`Client`), tenants and keys, and `SECRET_WATCH`.
- `fakes`: one in-memory fake per port of the layer (secrets, provider client, catalog, ...).
- `builders`: principals, instances and provider events, as the services receive them.
- `pool`: a tenant's pool built through the API (`PoolWorld`).
- `connections`: simulator-backed connections for the calls and call-limit tests.
- `provider_webhooks`: a tenant's catalog and signed provider webhooks through the API.
- `downstream`: the Chatwoot-style fake helpdesk (in-process transport or a loopback server).
- `sqs`: Lambda's SQS event records, and a queue drained through a template function.
"""
