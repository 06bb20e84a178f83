"""The gRPC edge: handler registration and lenient parsing, the drain gate, health,
reflection, listener TLS and caller authentication."""
