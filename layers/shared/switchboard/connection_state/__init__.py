"""An instance's connection state, as its provider tells it: ordered webhooks and status reads."""
