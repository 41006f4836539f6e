"""One module per simulated server kind: the routes that speak its HTTP API (its `*Server`, reading
and changing the state) and how the state's changes are posted as its webhooks (its `*Dialect`,
the `state.Dialect` the state asks):

- `calls`: the calls-capable server at the root (its calls routes, call settings, `/webhook`
  subscription and signed envelope are ours; its messaging routes are wuzapi's);
- `wuzapi`: asternic/wuzapi under `/wuzapi`;
- `evolution`: Evolution API v2 under `/evolution`;
- `meta`: the Meta WhatsApp Cloud API under `/meta`.

`hook` holds what the three real servers share: one webhook URL per instance, one secret.
The wire shapes themselves are pure functions in `payloads`, `incoming` and `wire`.
"""
