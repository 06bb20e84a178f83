// What the Node interop checks share: the ToolService loaded from the repository's proto/, and
// the google.rpc.Status / ErrorInfo decoding of errors (trailers and per-result statuses).
import path from "node:path";
import { fileURLToPath } from "node:url";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";

const protoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../proto");

// The llmworker.v1.ToolService client constructor. google/protobuf/*.proto come with
// protobufjs; google/rpc/status.proto is vendored under proto/. `options` adds proto-loader
// options to keepCase and defaults (e.g. oneofs: true to name the set member of each oneof).
export function toolService(options = {}) {
  const definition = protoLoader.loadSync("llmworker/v1/tool_service.proto", {
    includeDirs: [protoRoot],
    keepCase: true,
    defaults: true,
    ...options,
  });
  return grpc.loadPackageDefinition(definition).llmworker.v1.ToolService;
}

// google.rpc.Status and ErrorInfo, wire-compatible: Status to read grpc-status-details-bin,
// ErrorInfo to read the value of a google.protobuf.Any detail.
const rpc = protobuf.Root.fromJSON({
  nested: {
    google: {
      nested: {
        protobuf: { nested: { Any: { fields: { type_url: { type: "string", id: 1 }, value: { type: "bytes", id: 2 } } } } },
        rpc: {
          nested: {
            Status: {
              fields: {
                code: { type: "int32", id: 1 },
                message: { type: "string", id: 2 },
                details: { rule: "repeated", type: "google.protobuf.Any", id: 3 },
              },
            },
            ErrorInfo: {
              fields: {
                reason: { type: "string", id: 1 },
                domain: { type: "string", id: 2 },
                metadata: { keyType: "string", type: "string", id: 3 },
              },
            },
          },
        },
      },
    },
  },
});
const Status = rpc.lookupType("google.rpc.Status");
const ErrorInfo = rpc.lookupType("google.rpc.ErrorInfo");

// The ErrorInfo among google.protobuf.Any details ({type_url, value}), or null.
export function detailsErrorInfo(details) {
  const detail = (details ?? []).find((d) => d.type_url.endsWith("/google.rpc.ErrorInfo"));
  return detail ? ErrorInfo.decode(detail.value) : null;
}

// The details of a failed RPC's google.rpc.Status trailer.
export function trailerDetails(error) {
  const [raw] = error.metadata?.get("grpc-status-details-bin") ?? [];
  return raw ? Status.decode(raw).details : [];
}

// The ErrorInfo of a failed RPC, or null.
export function trailerErrorInfo(error) {
  return detailsErrorInfo(trailerDetails(error));
}

// The llmworker.v1.ToolRegistry client constructor (the server's internal listener), loaded
// as toolService loads the ToolService.
export function toolRegistry(options = {}) {
  const definition = protoLoader.loadSync("llmworker/v1/tool_registry.proto", {
    includeDirs: [protoRoot],
    keepCase: true,
    defaults: true,
    ...options,
  });
  return grpc.loadPackageDefinition(definition).llmworker.v1.ToolRegistry;
}
