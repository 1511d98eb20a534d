// @taskq/sdk/internal: what taskq's own packages, such as the gateway, borrow from the SDK, so that one
// copy serves them all. NOT API: no semver promise covers it, and any release may change it, minor and
// patch included. Applications use `@taskq/sdk` and `@taskq/sdk/proto`; the API page (typedoc.json's
// entry point, src/index.ts) leaves it out.

// The gRPC project's standard services the gateway serves beside taskq's (third_party/proto).
export {
  file_grpc_health_v1_health,
  Health,
  HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
  HealthListResponseSchema,
} from "./gen/grpc/health/v1/health_pb.js";
export {
  file_grpc_reflection_v1_reflection,
  ServerReflection,
  type ServerReflectionRequest,
  ServerReflectionRequestSchema,
  ServerReflectionResponseSchema,
} from "./gen/grpc/reflection/v1/reflection_pb.js";
export {
  ServerReflection as ServerReflectionV1Alpha,
  ServerReflectionRequestSchema as ServerReflectionRequestV1AlphaSchema,
  ServerReflectionResponseSchema as ServerReflectionResponseV1AlphaSchema,
} from "./gen/grpc/reflection/v1alpha/reflection_pb.js";
// Hand-written protobuf encoding and decoding for the hot path's messages (claimed jobs, settlements).
export { ByteReader } from "./wire/byte-reader.js";
export { ByteWriter } from "./wire/byte-writer.js";
// gRPC message framing, read without connect-es's async pipeline (the Claim stream, both sides).
export { EnvelopeSplitter } from "./wire/envelopes.js";
export { ClaimRequestView, SettleRequestView } from "./wire/worker-views.js";
