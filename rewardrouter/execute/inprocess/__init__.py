"""Executors that run calls in the router's own process: ``inline`` on the event loop,
``thread`` on daemon threads."""
