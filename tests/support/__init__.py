"""Plain helpers only the tests import; fixtures live in the conftest.py nearest to all their
users. What the benchmarks and the soak build too (AWS on moto, the API in-process, fakes,
builders, signed webhooks, the fake helpdesk) is in tools/support.

- `sending`: the send worker over those fakes, and pool numbers for it.
- `samples`: the sample events of events/ (also used with `sam local invoke`).
- `kinds`: an instance of every provider kind, each on its flavour's simulator server.
- `openapi`: the operations of our OpenAPI document as schemathesis reads them.
- `stacks`: local stacks with free ports and resources named for each.
- `threads`: real threads released together, for races.
"""
