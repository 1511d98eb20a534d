import type { DescMethodBiDiStreaming } from "@bufbuild/protobuf";
import { createContextValues, type Interceptor } from "@connectrpc/connect";
import {
  createMethodSerializationLookup,
  createMethodUrl,
  encodeEnvelope,
  runStreamingCall,
  type UniversalClientFn,
} from "@connectrpc/connect/protocol";
import {
  requestHeader,
  validateResponseWithCompression,
  validateTrailer,
} from "@connectrpc/connect/protocol-grpc";
import type { OpenStream } from "../stream.js";
import {
  answerFromView,
  type ClaimResponseView,
  decodeClaimAnswer,
  encodeClaimRequest,
} from "./claim-codec.js";
import { EnvelopeSplitter } from "./envelopes.js";
import { mapAsync } from "./map-async.js";
import type { ClaimAnswer, ClaimAsk } from "./worker-rpc.js";
import { WorkerServiceViews } from "./worker-views.js";

/*
 * The worker's Claim stream on the transport's own HTTP/2 session, without connect-es's per-message
 * pipeline: connect passes each message through a chain of async generators on each side (serialize,
 * compress and join envelopes; split, decompress and parse them), a quarter of the worker's CPU for a
 * one-job poll (bench/README.md). The call itself is still connect's (runStreamingCall): the transport's
 * interceptors (the token, the version check), the abort and deadline plumbing, the errors. Each poll is
 * written by hand as one envelope (claim-codec.ts), each answer read by hand as its envelope arrives, and
 * the status checked as connect's gRPC transport checks it (response header, then trailers).
 *
 * Used only on transports createTransport built without compression (transport.ts): binary gRPC whose
 * answers come uncompressed.
 */

/** What a lean Claim call needs of its transport. */
export interface ClaimCallParts {
  baseUrl: string;
  interceptors: Interceptor[];
  /** connect-node's HTTP/2 client on the transport's session. */
  httpClient: UniversalClientFn;
}

const method = WorkerServiceViews.method.claim as DescMethodBiDiStreaming;
/** connect's reading of the same bytes: a ClaimResponse the hand reader leaves, read or refused as ever. */
const viaProtobufEs = createMethodSerializationLookup(method, undefined, undefined, {
  readMaxBytes: 0xffffffff,
  writeMaxBytes: 0xffffffff,
});

/** Opens Claim streams through `parts`' session. */
export function claimCall(parts: ClaimCallParts): OpenStream<ClaimAsk, ClaimAnswer> {
  const url = createMethodUrl(parts.baseUrl, method);
  return (asks, { signal }) => {
    const call = runStreamingCall({
      interceptors: parts.interceptors,
      signal,
      timeoutMs: undefined,
      req: {
        stream: true,
        service: method.parent,
        method,
        requestMethod: "POST",
        url,
        header: requestHeader(true, undefined, undefined),
        contextValues: createContextValues(),
        // Already messages to connect (which would otherwise build each through reflection).
        message: tagged(asks),
      },
      next: async (req) => {
        const uRes = await parts.httpClient({
          url: req.url,
          method: "POST",
          header: req.header,
          signal: req.signal,
          body: envelopes(req.message as AsyncIterable<ClaimAsk>),
        });
        // No compression was offered, so none is accepted, as connect's transport would judge.
        const { foundStatus, headerError } = validateResponseWithCompression([], uRes.status, uRes.header);
        if (headerError) throw headerError;
        return {
          ...req,
          header: uRes.header,
          trailer: uRes.trailer,
          message: answers(uRes.body, () => {
            if (!foundStatus) validateTrailer(uRes.trailer, uRes.header);
          }) as AsyncIterable<never>,
        };
      },
    } as Parameters<typeof runStreamingCall>[0]);
    return {
      [Symbol.asyncIterator]() {
        let it: AsyncIterator<ClaimAnswer> | undefined;
        return {
          async next() {
            it ??= ((await call).message as AsyncIterable<ClaimAnswer>)[Symbol.asyncIterator]();
            return it.next();
          },
        };
      },
    };
  };
}

/** Each poll marked as a ClaimRequestView message, so connect's normalizing passes it through. */
function tagged(asks: AsyncIterable<ClaimAsk>): AsyncIterable<ClaimAsk> {
  const $typeName = method.input.typeName;
  return mapAsync(asks, (ask) => Object.assign(ask, { $typeName }));
}

/** The polls as gRPC envelopes, one per poll. */
function envelopes(asks: AsyncIterable<ClaimAsk>): AsyncIterable<Uint8Array> {
  return mapAsync(asks, (ask) => encodeEnvelope(0, encodeClaimRequest(ask)));
}

/**
 * The answers in a response body: envelopes split as chunks arrive and each read by hand (protobuf-es
 * where the hand reader declines); `ended` checks the status once the body is done.
 */
function answers(body: AsyncIterable<Uint8Array>, ended: () => void): AsyncIterable<ClaimAnswer> {
  return {
    [Symbol.asyncIterator]() {
      const chunks = body[Symbol.asyncIterator]();
      const splitter = new EnvelopeSplitter(0xffffffff);
      const ready: ClaimAnswer[] = [];
      let done = false;
      return {
        async next(): Promise<IteratorResult<ClaimAnswer>> {
          for (;;) {
            const answer = ready.shift();
            if (answer) return { done: false, value: answer };
            if (done) return { done: true, value: undefined };
            const r = await chunks.next();
            if (r.done) {
              splitter.end();
              ended();
              done = true;
              continue;
            }
            for (const data of splitter.pushPlain(r.value))
              ready.push(decodeClaimAnswer(data) ?? viaProtobufEsAnswer(data));
          }
        },
        async return(): Promise<IteratorResult<ClaimAnswer>> {
          done = true;
          await chunks.return?.();
          return { done: true, value: undefined };
        },
      };
    },
  };
}

function viaProtobufEsAnswer(data: Uint8Array): ClaimAnswer {
  return answerFromView(viaProtobufEs.getO(true).parse(data) as unknown as ClaimResponseView);
}
