"""Live updates: tickets, WebSocket connections and the notifier that pushes domain events to them."""
