"""What an operator reads: the call log and its formats, failure logs, Prometheus metrics
(also across ``--workers``) and OpenTelemetry tracing."""
