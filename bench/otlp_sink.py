"""An OTLP/gRPC trace receiver that accepts and drops every export: what a tracing server
sends its spans to in ``make bench`` (a collector's own cost is not the server's)."""

from __future__ import annotations

from concurrent import futures

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as otlp

__all__ = ["OtlpSink"]

_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"


class OtlpSink:
    """Listening on 127.0.0.1 (``endpoint``) until ``stop``; ``spans`` counts what arrived."""

    def __init__(self) -> None:
        self.spans = 0
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        export = grpc.unary_unary_rpc_method_handler(
            self._export,
            request_deserializer=otlp.ExportTraceServiceRequest.FromString,
            response_serializer=otlp.ExportTraceServiceResponse.SerializeToString,
        )
        handlers = grpc.method_handlers_generic_handler(_SERVICE, {"Export": export})
        self._server.add_generic_rpc_handlers((handlers,))
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"http://127.0.0.1:{port}"
        self._server.start()

    def _export(
        self, request: otlp.ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> otlp.ExportTraceServiceResponse:
        self.spans += sum(
            len(scope.spans)
            for resource in request.resource_spans
            for scope in resource.scope_spans
        )
        return otlp.ExportTraceServiceResponse()

    def stop(self) -> None:
        self._server.stop(0)
