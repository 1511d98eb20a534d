import type http from "node:http";
import type http2 from "node:http2";
import { create, isMessage } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createHandlerContext,
  type HandlerContext,
  type Interceptor,
  type StreamRequest,
  type StreamResponse,
} from "@connectrpc/connect";
import {
  createMethodSerializationLookup,
  encodeEnvelope,
  type UniversalServerRequest,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import {
  contentTypeProto,
  grpcStatusOk,
  parseTimeout,
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { ClaimRequestView, EnvelopeSplitter } from "@taskq/sdk/internal";
import { ClaimResponseSchema, WorkerService } from "@taskq/sdk/proto";
import type { Logger } from "../log.js";
import { type ClaimFields, decodeClaimRequest } from "../rpc/claim-request-bytes.js";
import { asInvalidArgument, isRequestDecodeError } from "../rpc/decode-errors.js";
import { minimalGrpcMessage } from "../rpc/grpc-message.js";

/*
 * The Claim stream of a worker on plain binary gRPC, served without connect-es's message pipeline.
 * Connect passes each message through a chain of async generators on each side (split, decompress and
 * parse the envelope; serialize, compress and join; the adapter's reader and writer): with protobuf-es's
 * reading of the request, a fifth of the gateway's CPU for a one-job poll (bench/README.md). This path reads envelopes from the
 * HTTP/2 stream as they arrive and writes each answer as one envelope, and keeps everything else as
 * connect does it: the same interceptors (authentication, authorization, revocation), the handler
 * context with its deadline, the same message (de)serialization and size limits, the adapter's
 * response writer (headers with the first message, trailers, write errors back to the handler), and the
 * status in the trailers with its message as every other gRPC call sends it.
 *
 * It takes what it serves as connect would: POST of the Claim path over HTTP/2, content type
 * application/grpc or application/grpc+proto, no request compression and a parsable grpc-timeout: the
 * TS SDK, grpc-js, grpc-go and grpcio alike. Anything else (gRPC-Web, Connect, JSON, a compressed
 * request) goes to connect unchanged. Its answers are never compressed, whatever the client accepts
 * (identity is always allowed): connect would gzip an answer over 1 KiB for a client that accepts it,
 * at a CPU cost on the path every poll takes, and its pipeline holds a parked stream at about twice the
 * memory (bench parked).
 */

const METHOD = WorkerService.method.claim;
const PATH = `/${WorkerService.typeName}/${METHOD.name}`;
/** Requests buffered ahead of the handler before the stream's reading pauses. */
const READ_AHEAD = 8;

type ClaimImpl = (requests: AsyncIterable<ClaimFields>, ctx: HandlerContext) => AsyncIterable<unknown>;
type AnyFn = Parameters<Interceptor>[0];

export interface ClaimStreamOptions {
  /** WorkerService's claim, as registered with connect (reads settlements as bytes: by-bytes.ts). */
  impl: ClaimImpl;
  /** The interceptors connect applies to every call. */
  interceptors: readonly Interceptor[];
  readMaxBytes: number;
  writeMaxBytes: number;
  log: Logger;
}

/** True for a request this path serves exactly as connect would (see above). */
export function isPlainGrpcClaim(
  req: http.IncomingMessage | http2.Http2ServerRequest,
): req is http2.Http2ServerRequest {
  if (req.httpVersionMajor !== 2 || req.method !== "POST" || req.url !== PATH) return false;
  const h = req.headers;
  const type = h["content-type"];
  if (type !== "application/grpc" && type !== "application/grpc+proto") return false;
  const encoding = h["grpc-encoding"];
  if (encoding !== undefined && encoding !== "identity") return false;
  const timeout = h["grpc-timeout"];
  return (
    timeout === undefined ||
    (typeof timeout === "string" && parseTimeout(timeout, Number.MAX_SAFE_INTEGER).error === undefined)
  );
}

/** Serves Claim streams that isPlainGrpcClaim accepts. */
export function claimStreamHandler(
  opts: ClaimStreamOptions,
): (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void {
  const { method, parse, toBytes } = claimCodec(opts);
  // Interceptors wrap the call as connect's applyInterceptors does: the first listed is outermost.
  const intercepted = (handler: AnyFn) =>
    [...opts.interceptors].reverse().reduce((next, interceptor) => interceptor(next), handler);

  return (req, res) => {
    const uReq = universalRequestFromNodeRequest(req, res, undefined, undefined);
    const context = handlerContext(uReq, method);
    // The handler as connect calls it, with the request as each interceptor passed it on.
    const next = intercepted(async (r) => ({
      stream: true,
      service: WorkerService,
      method,
      header: context.responseHeader,
      trailer: context.responseTrailer,
      message: opts.impl((r as StreamRequest).message as AsyncIterable<ClaimFields>, {
        ...context,
        service: r.service,
        requestHeader: r.header,
        signal: r.signal,
        values: r.contextValues,
      }) as AsyncIterable<never>,
    }));
    const request = {
      stream: true,
      service: WorkerService,
      method,
      requestMethod: "POST",
      url: uReq.url,
      signal: context.signal,
      header: context.requestHeader,
      contextValues: context.values,
      message: new RequestMessages(req, opts.readMaxBytes, parse),
    } as StreamRequest;
    async function* answers(): AsyncGenerator<unknown> {
      yield* ((await next(request)) as StreamResponse).message;
    }
    const response: UniversalServerResponse = {
      status: 200,
      header: context.responseHeader,
      trailer: context.responseTrailer,
      body: envelopes(answers(), context, toBytes),
    };
    universalResponseToNodeResponse(response, res).catch((reason: unknown) => {
      // A worker that goes away mid-answer is not news (its jobs go back: rpc/worker.ts).
      const code = ConnectError.from(reason).code;
      if (code === Code.Aborted || code === Code.Canceled) return;
      opts.log.warn({ err: reason }, "claim stream: writing the response failed");
    });
  };
}

/** Claim's (de)serialization as connect would do it, with the same size limits. */
function claimCodec(opts: ClaimStreamOptions) {
  const method = { ...METHOD, input: ClaimRequestView } as unknown as typeof METHOD;
  const limits = { readMaxBytes: opts.readMaxBytes, writeMaxBytes: opts.writeMaxBytes };
  const serialization = createMethodSerializationLookup(method, undefined, undefined, limits);
  const viaProtobufEs = serialization.getI(true) as unknown as { parse(data: Uint8Array): ClaimFields };
  // By hand where the bytes are plain, as the SDK and every protobuf library write them.
  const parse = (data: Uint8Array) => decodeClaimRequest(data) ?? viaProtobufEs.parse(data);
  const serialize = serialization.getO(true);
  // As connect normalizes an answer: a message as it is, an init object made into one.
  const toBytes = (m: unknown) =>
    serialize.serialize(isMessage(m, ClaimResponseSchema) ? m : create(ClaimResponseSchema, m as object));
  return { method, parse, toBytes };
}

/** The call's context as connect makes it for a gRPC request: its deadline, headers and trailers. */
function handlerContext(uReq: UniversalServerRequest, method: typeof METHOD) {
  return createHandlerContext({
    service: WorkerService,
    method,
    protocolName: "grpc",
    requestMethod: "POST",
    url: uReq.url,
    timeoutMs: parseTimeout(uReq.header.get("grpc-timeout"), Number.MAX_SAFE_INTEGER).timeoutMs,
    requestSignal: uReq.signal,
    requestHeader: uReq.header,
    responseHeader: { "content-type": contentTypeProto },
    responseTrailer: { "grpc-status": grpcStatusOk },
    contextValues: uReq.contextValues,
  });
}

/**
 * The request's messages as the handler reads them: envelopes split as chunks arrive and parsed at
 * once. A message that does not parse fails the stream with INVALID_ARGUMENT, as decode-errors.ts
 * answers it on connect's path; a compressed one (no request compression was negotiated) with connect's
 * INTERNAL. Reading pauses while READ_AHEAD requests wait for the handler.
 */
class RequestMessages implements AsyncIterable<ClaimFields> {
  private readonly splitter: EnvelopeSplitter;
  private readonly ready: ClaimFields[] = [];
  private ended = false;
  private failure: unknown;
  private wake: (() => void) | undefined;

  constructor(
    private readonly req: http2.Http2ServerRequest,
    readMaxBytes: number,
    private readonly parse: (data: Uint8Array) => ClaimFields,
  ) {
    this.splitter = new EnvelopeSplitter(readMaxBytes);
    req.on("data", this.onData);
    req.once("end", this.onEnd);
    req.once("close", () => {
      if (!this.ended) this.fail(new ConnectError("the client closed the stream", Code.Canceled));
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<ClaimFields> {
    return { next: () => this.next(), return: () => this.stop() };
  }

  private async next(): Promise<IteratorResult<ClaimFields>> {
    for (;;) {
      const value = this.ready.shift();
      if (value !== undefined) {
        if (this.ready.length < READ_AHEAD && this.req.isPaused()) this.req.resume();
        return { done: false, value };
      }
      if (this.failure !== undefined) throw this.failure;
      if (this.ended) return { done: true, value: undefined };
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }

  private async stop(): Promise<IteratorResult<ClaimFields>> {
    this.req.off("data", this.onData);
    this.req.resume();
    return { done: true, value: undefined };
  }

  private readonly onData = (chunk: Buffer) => {
    try {
      for (const data of this.splitter.pushPlain(chunk)) this.ready.push(parseRequest(this.parse, data));
    } catch (err) {
      return this.fail(err);
    }
    if (this.ready.length >= READ_AHEAD) this.req.pause();
    this.settle();
  };

  private readonly onEnd = () => {
    try {
      this.splitter.end();
    } catch (err) {
      return this.fail(err);
    }
    this.ended = true;
    this.settle();
  };

  private fail(err: unknown): void {
    if (this.ended || this.failure !== undefined) return;
    this.failure = err;
    this.req.off("data", this.onData);
    this.settle();
  }

  private settle(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

function parseRequest(parse: (data: Uint8Array) => ClaimFields, data: Uint8Array): ClaimFields {
  try {
    return parse(data);
  } catch (err) {
    if (err instanceof ConnectError && isRequestDecodeError(err))
      throw asInvalidArgument(err, METHOD.input.typeName);
    throw err;
  }
}

/**
 * The handler's answers as gRPC envelopes, for the adapter's writer. As connect's output pipeline: an
 * error ends the body and goes into the trailers (a non-ConnectError as INTERNAL), the call's context
 * aborts when the body ends however it ends, and a write error or an early stop reaches the handler.
 */
function envelopes(
  answers: AsyncGenerator<unknown>,
  context: HandlerContext & { abort(reason?: unknown): void },
  serialize: (message: unknown) => Uint8Array,
): AsyncIterable<Uint8Array> {
  let finished = false;
  const it: AsyncIterator<Uint8Array> = {
    async next() {
      if (!finished) {
        try {
          const r = await answers.next();
          if (!r.done) return { done: false, value: encodeEnvelope(0, serialize(r.value)) };
          context.abort();
        } catch (err) {
          context.abort(err);
          setTrailerStatus(
            context.responseTrailer,
            err instanceof ConnectError
              ? err
              : new ConnectError("internal error", Code.Internal, undefined, undefined, err),
          );
        }
        finished = true;
        minimalGrpcMessage(context.responseTrailer);
      }
      return { done: true, value: undefined };
    },
    async throw(err?: unknown) {
      context.abort(err);
      await answers.throw(err);
      return { done: true, value: undefined };
    },
    async return() {
      context.abort();
      await answers.return(undefined);
      return { done: true, value: undefined };
    },
  };
  return { [Symbol.asyncIterator]: () => it };
}
