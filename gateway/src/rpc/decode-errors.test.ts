import http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createRouterTransport } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { AdminService, ClaimRequestSchema, ProducerService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { decodeErrorsAsInvalidArgument } from "./decode-errors.js";

// Field 1, length-delimited, says 5 bytes and carries 1: no protobuf decoder can read it.
const UNDECODABLE = Buffer.from([0x0a, 0x05, 0x61]);
const ENQUEUE = "/taskq.v1.ProducerService/Enqueue";
const CLAIM = "/taskq.v1.WorkerService/Claim";
const SETTLE = "/taskq.v1.WorkerService/Settle";
const EnqueueRequestSchema = ProducerService.method.enqueue.input;

/** 1 flag byte, 4 bytes big-endian length, the message: gRPC, gRPC-web and Connect stream framing. */
function frame(message: Uint8Array, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/** Splits a framed body into its frames. */
function frames(body: Buffer): { flags: number; data: Buffer }[] {
  const out: { flags: number; data: Buffer }[] = [];
  for (let at = 0; at + 5 <= body.length; ) {
    const len = body.readUInt32BE(at + 1);
    out.push({ flags: body[at] ?? 0, data: body.subarray(at + 5, at + 5 + len) });
    at += 5 + len;
  }
  return out;
}

const identity = (b: Buffer) => b;
const RawClient = grpc.makeGenericClientConstructor(
  {
    Enqueue: {
      path: ENQUEUE,
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
    Claim: {
      path: CLAIM,
      requestStream: true,
      responseStream: true,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  },
  "Raw",
);

function rawUnary(client: grpc.Client, bytes: Buffer): Promise<{ code: number; details: string }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(ENQUEUE, identity, identity, bytes, (err) =>
      resolve({ code: err?.code ?? grpc.status.OK, details: err?.details ?? "" }),
    );
  });
}

/** Sends raw bytes on a bidi stream, half-closes, and resolves with the stream's end status. */
function rawStream(
  client: grpc.Client,
  bytes: Buffer,
  path = CLAIM,
): Promise<{ code: number; details: string }> {
  return new Promise((resolve) => {
    const call = client.makeBidiStreamRequest(path, identity, identity, new grpc.Metadata(), {
      deadline: Date.now() + 10_000,
    });
    call.on("data", () => {});
    call.on("error", () => {});
    call.on("status", (s: grpc.StatusObject) => resolve({ code: s.code, details: s.details }));
    call.write(bytes);
    call.end();
  });
}

/** One request over HTTP/2 with the given content type and framed body; the status, headers, trailers and body. */
function h2Request(
  url: string,
  path: string,
  contentType: string,
  body: Buffer,
): Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on("error", reject);
    const req = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": contentType,
      te: "trailers",
    });
    let headers: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    req.on("response", (h) => {
      headers = h;
    });
    req.on("trailers", (t) => {
      trailers = t;
    });
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      session.close();
      resolve({ headers, trailers, body: Buffer.concat(chunks) });
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("an undecodable binary request is INVALID_ARGUMENT on every protocol, not INTERNAL", () => {
  let gw: TestGateway;
  let raw: grpc.Client;
  const validEnqueue = Buffer.from(
    toBinary(EnqueueRequestSchema, create(EnqueueRequestSchema, { job: { queue: "decode-errors" } })),
  );

  beforeAll(async () => {
    gw = await startTestGateway();
    raw = new RawClient(gw.grpcUrl.replace(/^http:\/\//, ""), grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    raw?.close();
    await gw?.stop();
  });

  it("Connect unary (application/proto): HTTP 400 invalid_argument naming the parse failure and type", async () => {
    const res = await fetch(`${gw.httpUrl}${ENQUEUE}`, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body: UNDECODABLE,
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toMatch(/^parse binary: .+ \(request message taskq\.v1\.EnqueueRequest\)$/);
    expect(res.headers.get("content-length")).toBe(String(JSON.stringify(body).length));
  });

  it("Connect unary control: a valid binary request still succeeds", async () => {
    const res = await fetch(`${gw.httpUrl}${ENQUEUE}`, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body: validEnqueue,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/proto");
  });

  it("gRPC unary: status 3 with the parse failure", async () => {
    const out = await rawUnary(raw, UNDECODABLE);
    expect(out.code).toBe(grpc.status.INVALID_ARGUMENT);
    // The colon arrives as itself: grpc-message is re-encoded for grpc-js's decodeURI (grpc-message.ts).
    expect(out.details).toMatch(/^parse binary: .+ \(request message taskq\.v1\.EnqueueRequest\)$/);
  });

  it("gRPC unary control: valid bytes still succeed", async () => {
    expect(await rawUnary(raw, validEnqueue)).toEqual({ code: grpc.status.OK, details: "" });
  });

  it("gRPC bidi stream (Claim): the stream ends with status 3", async () => {
    const out = await rawStream(raw, UNDECODABLE);
    expect(out.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(out.details).toMatch(/^parse binary: .+ \(request message taskq\.v1\.ClaimRequest\)$/);
  });

  it("gRPC bidi stream control: a valid Claim request is served (the stream ends OK on half-close)", async () => {
    const claim = create(ClaimRequestSchema, { queues: ["decode-errors-empty"], maxJobs: 1 });
    const out = await rawStream(raw, Buffer.from(toBinary(ClaimRequestSchema, claim)));
    expect(out).toEqual({ code: grpc.status.OK, details: "" });
  });

  it("gRPC bidi stream (Settle, read by hand): the stream ends with status 3 naming the message", async () => {
    const out = await rawStream(raw, UNDECODABLE, SETTLE);
    expect(out.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(out.details).toMatch(/^parse binary: .+ \(request message taskq\.v1\.SettleRequest\)$/);
  });

  it("gRPC bidi stream (Settle): a settlement that does not parse is status 3 naming it", async () => {
    // settlements[0] holds UNDECODABLE: the request parses, the settlement inside it does not.
    const out = await rawStream(
      raw,
      Buffer.concat([Buffer.from([0x0a, UNDECODABLE.length]), UNDECODABLE]),
      SETTLE,
    );
    expect(out.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(out.details).toMatch(/^settlements\[0\] is not a taskq\.v1\.Settlement/);
  });

  it("gRPC-web unary: the trailer frame says grpc-status 3", async () => {
    const res = await fetch(`${gw.httpUrl}${ENQUEUE}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: new Uint8Array(frame(UNDECODABLE)),
    });
    expect(res.status).toBe(200);
    const trailer = frames(Buffer.from(await res.arrayBuffer())).find((f) => f.flags & 0x80);
    const text = trailer?.data.toString("latin1") ?? "";
    expect(text).toMatch(/grpc-status: 3\r\n/);
    expect(decodeURIComponent(/grpc-message: (.*)\r\n/.exec(text)?.[1] ?? "")).toMatch(
      /^parse binary: .+ \(request message taskq\.v1\.EnqueueRequest\)$/,
    );
  });

  it("gRPC-web bidi stream (Claim, over HTTP/2): the trailer frame says grpc-status 3", async () => {
    const res = await h2Request(gw.grpcUrl, CLAIM, "application/grpc-web+proto", frame(UNDECODABLE));
    const trailer = frames(res.body).find((f) => f.flags & 0x80);
    expect(trailer?.data.toString("latin1")).toMatch(/grpc-status: 3\r\n/);
  });

  it("Connect bidi stream (Claim, over HTTP/2): the end-of-stream frame says invalid_argument", async () => {
    const res = await h2Request(gw.grpcUrl, CLAIM, "application/connect+proto", frame(UNDECODABLE));
    expect(res.headers[":status"]).toBe(200);
    const end = frames(res.body).find((f) => f.flags & 0x02);
    const json = JSON.parse(end?.data.toString("utf8") ?? "{}") as {
      error?: { code: string; message: string };
    };
    expect(json.error?.code).toBe("invalid_argument");
    expect(json.error?.message).toMatch(/^parse binary: .+ \(request message taskq\.v1\.ClaimRequest\)$/);
  });

  it("gRPC over HTTP/2 by hand: grpc-status 3 arrives in the trailers", async () => {
    const res = await h2Request(gw.grpcUrl, ENQUEUE, "application/grpc", frame(UNDECODABLE));
    const status = res.trailers["grpc-status"] ?? res.headers["grpc-status"];
    expect(status).toBe("3");
  });
});

describe("a response that fails to serialize stays INTERNAL", () => {
  it("binary Connect: an invalid uint64 in a response is INTERNAL 'serialize binary: ...'", async () => {
    const transport = createRouterTransport((router) => {
      router.rpc(AdminService.method.clearQueue, async () => ({ cleared: -1n }));
      decodeErrorsAsInvalidArgument(router);
    });
    const err = await createClient(AdminService, transport)
      .clearQueue({ queue: "q" })
      .then(
        () => null,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.Internal);
    expect(err?.rawMessage).toMatch(/^serialize binary: /);
  });
});
