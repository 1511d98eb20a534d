import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { compressedFlag, encodeEnvelope } from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  createEndStreamSerialization,
  endStreamFlag,
  errorFromJsonBytes,
  errorToJsonBytes,
} from "@connectrpc/connect/protocol-connect";
import { findTrailerError, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { createTrailerSerialization, trailerFlag } from "@connectrpc/connect/protocol-grpc-web";
import { minimalGrpcMessage } from "./grpc-message.js";

/*
 * A request message that does not decode as binary protobuf is the client's bad input, so it answers
 * INVALID_ARGUMENT (HTTP 400 on Connect unary). connect-es follows gRPC's status table, which lists a
 * failure to parse a message as INTERNAL, and its serialization hard-codes that code, before any
 * interceptor runs for unary RPCs (JSON that does not parse is already INVALID_ARGUMENT).
 *
 * Every handler the router makes is wrapped here, so one place covers unary and streams on Connect,
 * gRPC and gRPC-web. The only binary *parse* a server does is of request messages (responses are
 * serialized: "serialize binary: ..."), so an INTERNAL whose message starts "parse binary:" is a decode
 * failure of the client's input and nothing else; it is answered INVALID_ARGUMENT with the same text
 * plus the message type. The status is rewritten where each protocol carries it: the Connect unary
 * error body, the gRPC trailers, the gRPC-web trailer frame, the Connect end-of-stream frame.
 */

const PREFIX = "parse binary:";

export function isRequestDecodeError(err: ConnectError | undefined): err is ConnectError {
  return err !== undefined && err.code === Code.Internal && err.rawMessage.startsWith(PREFIX);
}

export function asInvalidArgument(err: ConnectError, typeName: string): ConnectError {
  // No metadata or details: connect-es's decode error carries none.
  return new ConnectError(`${err.rawMessage} (request message ${typeName})`, Code.InvalidArgument);
}

/** Wraps every handler of the router (call after registering its services). */
export function decodeErrorsAsInvalidArgument(router: ConnectRouter): void {
  const handlers = router.handlers.map(wrapHandler);
  router.handlers.splice(0, handlers.length, ...handlers);
}

/** Wraps a handler so an undecodable binary request message answers INVALID_ARGUMENT. */
function wrapHandler(handler: UniversalHandler): UniversalHandler {
  const typeName = handler.method.input.typeName;
  const remap = (err: ConnectError) => asInvalidArgument(err, typeName);
  const wrapped = async (req: Parameters<UniversalHandler>[0]) => {
    const res = await handler(req);
    const contentType = res.header?.get("content-type") ?? "";
    if (res.trailer) return grpcTrailers(res, res.trailer, remap);
    if (contentType.startsWith("application/grpc-web"))
      return mapFrames(res, trailerFlag, grpcWebTrailer(remap));
    if (contentType.startsWith("application/connect+"))
      return mapFrames(res, endStreamFlag, connectEndStream(remap));
    if (res.status === 500 && contentType.startsWith("application/json")) return connectUnary(res, remap);
    return res;
  };
  return Object.assign(wrapped, handler);
}

/**
 * gRPC: the status goes out in trailers, written once the body is done. Every status message is
 * re-encoded there too, so grpc-js clients read its punctuation (see grpc-message.ts).
 */
function grpcTrailers(
  res: UniversalServerResponse,
  trailer: Headers,
  remap: (err: ConnectError) => ConnectError,
): UniversalServerResponse {
  return mapBody(
    res,
    (chunk) => chunk,
    () => {
      const err = findTrailerError(trailer);
      if (isRequestDecodeError(err)) setTrailerStatus(trailer, remap(err));
      minimalGrpcMessage(trailer);
    },
  );
}

/**
 * gRPC-web and Connect streams: the status is the last frame of the body. Each body chunk is one
 * envelope (5-byte prefix: flags, big-endian length); a compressed frame is left alone (a status frame
 * is far below the compression threshold).
 */
function mapFrames(
  res: UniversalServerResponse,
  flag: number,
  rewrite: (data: Uint8Array) => Uint8Array | null,
): UniversalServerResponse {
  return mapBody(res, (chunk) => {
    const flags = chunk[0] ?? 0;
    if (chunk.byteLength < 5 || (flags & flag) !== flag || (flags & compressedFlag) !== 0) return chunk;
    const data = rewrite(chunk.subarray(5));
    return data === null ? chunk : encodeEnvelope(flags, data);
  });
}

/**
 * The body with each chunk mapped, and `done` called before the end is reported. The adapter reports a
 * write error with throw() and stops early with return(): both go straight to the handler's own body,
 * so it aborts its context exactly as it would unwrapped.
 */
function mapBody(
  res: UniversalServerResponse,
  map: (chunk: Uint8Array) => Uint8Array,
  done?: () => void,
): UniversalServerResponse {
  const body = res.body;
  if (body === undefined || !(Symbol.asyncIterator in body)) return res;
  const it = body[Symbol.asyncIterator]();
  const mapped: AsyncIterator<Uint8Array> = {
    async next() {
      const r = await it.next();
      if (r.done) done?.();
      return r.done ? r : { done: false, value: map(r.value) };
    },
    throw: (e?: unknown) => it.throw?.(e) ?? Promise.reject(e),
    return: (v?: unknown) => it.return?.(v) ?? Promise.resolve({ done: true, value: v }),
  };
  return { ...res, body: { [Symbol.asyncIterator]: () => mapped } };
}

function grpcWebTrailer(remap: (err: ConnectError) => ConnectError) {
  const serialization = createTrailerSerialization();
  return (data: Uint8Array): Uint8Array | null => {
    const trailer = serialization.parse(data);
    const err = findTrailerError(trailer);
    if (!isRequestDecodeError(err)) return null;
    setTrailerStatus(trailer, remap(err));
    return serialization.serialize(trailer);
  };
}

function connectEndStream(remap: (err: ConnectError) => ConnectError) {
  const serialization = createEndStreamSerialization(undefined);
  return (data: Uint8Array): Uint8Array | null => {
    const end = serialization.parse(data);
    if (!isRequestDecodeError(end.error)) return null;
    return serialization.serialize({ ...end, error: remap(end.error) });
  };
}

/** Connect unary: the error is the JSON body of a 500 (never compressed: far below the threshold). */
async function connectUnary(
  res: UniversalServerResponse,
  remap: (err: ConnectError) => ConnectError,
): Promise<UniversalServerResponse> {
  const body = res.body;
  if (res.header?.has("content-encoding") || body === undefined || !(Symbol.asyncIterator in body))
    return res;
  const chunks: Uint8Array[] = [];
  for await (const chunk of body as AsyncIterable<Uint8Array>) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  let err: ConnectError | undefined;
  try {
    err = errorFromJsonBytes(bytes, undefined, new ConnectError("", Code.Unknown));
  } catch {
    err = undefined;
  }
  if (!isRequestDecodeError(err)) return { ...res, body: oneChunk(bytes) };
  const fixed = errorToJsonBytes(remap(err), {});
  const header = new Headers(res.header);
  header.set("content-length", String(fixed.byteLength));
  return { ...res, status: codeToHttpStatus(Code.InvalidArgument), header, body: oneChunk(fixed) };
}

async function* oneChunk(bytes: Uint8Array) {
  yield bytes;
}
