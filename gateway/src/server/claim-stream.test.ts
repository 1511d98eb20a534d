import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { ClaimRequestSchema, ClaimResponseSchema } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken, newToken } from "../auth/tokens.js";
import { newJob } from "../testing/new-job.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { isPlainGrpcClaim } from "./claim-stream.js";

// The Claim stream's own path (claim-stream.ts) against connect-es's, request for request: the same
// bytes in, the same status, messages and trailers out. A request that declares gzip request compression
// (its frames here are sent uncompressed, as the flag allows) goes to connect; a plain one takes the lean
// path, whatever compression it accepts for answers. Every answer here stays below connect's 1 KiB
// compression threshold, so connect sends it uncompressed too.

const CLAIM = "/taskq.v1.WorkerService/Claim";
const worker = newToken();
const producer = newToken();
const tokens = [
  { name: "w", roles: ["worker" as const], queues: null, sha256: hashToken(worker) },
  { name: "p", roles: ["producer" as const], queues: null, sha256: hashToken(producer) },
];

function frame(message: Uint8Array, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

const poll = (init: Parameters<typeof create<typeof ClaimRequestSchema>>[1]) =>
  frame(toBinary(ClaimRequestSchema, create(ClaimRequestSchema, init)));

interface Answer {
  status: number;
  contentType: string | undefined;
  /** Each response message: its flags and bytes. */
  messages: { flags: number; data: Buffer }[];
  trailers: Record<string, string | undefined>;
  /** The response's grpc-encoding: connect names the compression it negotiated, even unused. */
  encoding?: string | undefined;
}

type Path = "lean" | "connect";

/**
 * Sends `chunks` on a new Claim stream, half-closes (unless `open`: then it waits for the gateway to end
 * the stream, at most `openMs`), and collects the whole answer.
 */
async function exchange(
  url: string,
  path: Path,
  chunks: Buffer[],
  token = worker,
  headers: Record<string, string> = {},
  open = false,
): Promise<Answer> {
  const session = http2.connect(url);
  try {
    const req = session.request({
      ":method": "POST",
      ":path": CLAIM,
      "content-type": "application/grpc",
      te: "trailers",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      "grpc-accept-encoding": "identity,deflate,gzip",
      ...(path === "connect" ? { "grpc-encoding": "gzip" } : {}),
      ...headers,
    });
    const answer: Answer = { status: 0, contentType: undefined, messages: [], trailers: {} };
    const body: Buffer[] = [];
    req.on("response", (h) => {
      answer.status = Number(h[":status"]);
      answer.contentType = h["content-type"] as string | undefined;
      answer.encoding = h["grpc-encoding"] as string | undefined;
    });
    req.on("data", (d: Buffer) => body.push(d));
    req.on("trailers", (t) => {
      for (const k of ["grpc-status", "grpc-message", "grpc-status-details-bin"])
        answer.trailers[k] = t[k] as string | undefined;
    });
    for (const c of chunks) req.write(c);
    if (!open) req.end();
    await new Promise((resolve) => {
      req.on("close", resolve);
      if (open) setTimeout(resolve, 3_000);
    });
    req.close();
    const all = Buffer.concat(body);
    for (let at = 0; at + 5 <= all.length; ) {
      const len = all.readUInt32BE(at + 1);
      answer.messages.push({ flags: all[at] ?? 0, data: all.subarray(at + 5, at + 5 + len) });
      at += 5 + len;
    }
    return answer;
  } finally {
    session.close();
  }
}

describe("the Claim stream without connect's pipeline", () => {
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({ config: { tokens } });
  });
  afterAll(async () => {
    await gw?.stop();
  });

  /** The same exchange on both paths; answers equal, and returns the lean one. */
  async function same(
    chunks: Buffer[],
    token?: string,
    headers?: Record<string, string>,
    open?: boolean,
  ): Promise<Answer> {
    const { encoding: leanEncoding, ...lean } = await exchange(
      gw.grpcUrl,
      "lean",
      chunks,
      token,
      headers,
      open,
    );
    const { encoding: connectEncoding, ...connect } = await exchange(
      gw.grpcUrl,
      "connect",
      chunks,
      token,
      headers,
      open,
    );
    // Two paths indeed: connect negotiated gzip (and sent nothing compressed); the lean path offers none.
    expect([leanEncoding, connectEncoding]).toEqual([undefined, "gzip"]);
    expect(lean).toEqual(connect);
    return { ...lean };
  }

  const empty = { queues: ["cs-empty"], maxJobs: 5, maxWait: durationFromMs(0), workerId: "w1" };

  it("answers polls of an empty queue, then ends OK at the half-close", async () => {
    const a = await same([poll(empty), poll({ ...empty, concurrency: 4, prefetch: 2 })]);
    expect(a.status).toBe(200);
    expect(a.contentType).toBe("application/grpc+proto");
    expect(a.messages).toHaveLength(2);
    expect(a.trailers["grpc-status"]).toBe("0");
  });

  it("answers the settle results a poll carries", async () => {
    const settlement = {
      lease: { jobId: "123456", attempt: 1 },
      outcome: { case: "success" as const, value: {} },
    };
    const a = await same([poll({ ...empty, settlements: [settlement] })]);
    const res = fromBinary(ClaimResponseSchema, a.messages[0]?.data ?? new Uint8Array());
    expect(res.settleResults).toHaveLength(1);
  });

  it("hands out jobs the same way", async () => {
    const claimed: unknown[] = [];
    for (const path of ["lean", "connect"] as const) {
      await gw.store.jobsEnqueue(
        [1, 2].map((i) => newJob("cs-jobs", { payload: Buffer.from(`p${i}`), priority: i })),
      );
      const a = await exchange(gw.grpcUrl, path, [poll({ ...empty, queues: ["cs-jobs"] })]);
      expect(a.trailers["grpc-status"]).toBe("0");
      const res = fromBinary(ClaimResponseSchema, a.messages[0]?.data ?? new Uint8Array());
      // Ids, lease deadlines and enqueue times are each job's own.
      claimed.push(res.jobs.map(({ id: _, leaseDeadline: __, enqueuedAt: ___, ...job }) => job));
    }
    expect(claimed[0]).toHaveLength(2);
    expect(claimed[0]).toEqual(claimed[1]);
  });

  it("refuses bad input with the same status and message", async () => {
    const undecodable = frame(Buffer.from([0x0a, 0x05, 0x61]));
    expect((await same([undecodable])).trailers["grpc-status"]).toBe("3");
    expect((await same([poll({ ...empty, maxJobs: 0 })])).trailers["grpc-message"]).toContain("max_jobs");
    // A compressed frame on a stream that negotiated no compression: connect's INTERNAL, word for word
    // (the connect path of `same` declares gzip, so it would decompress this one).
    const compressed = await exchange(gw.grpcUrl, "lean", [frame(Buffer.from([]), 1)]);
    expect(compressed.trailers).toMatchObject({
      "grpc-status": "13",
      "grpc-message": "received compressed envelope, but do not know how to decompress",
    });
    const tooLong = Buffer.from([0, 0x7f, 0xff, 0xff, 0xff]);
    expect((await same([tooLong])).trailers["grpc-status"]).toBe("8");
    const cut = poll(empty).subarray(0, 7);
    expect((await same([cut])).trailers["grpc-message"]).toContain("incomplete envelope");
  });

  it("reads messages split anywhere across chunks", async () => {
    const bytes = Buffer.concat([poll(empty), poll(empty), poll(empty)]);
    const chunks = [...bytes].map((b) => Buffer.from([b]));
    expect((await same(chunks)).messages).toHaveLength(3);
  });

  it("keeps the deadline a worker sets (grpc-timeout) as connect does", async () => {
    const parked = poll({ ...empty, maxWait: durationFromMs(10_000) });
    // The poll parked for 10 s is answered (empty) at the 300 ms deadline; the stream itself stays
    // the worker's to end, as on connect's path.
    const a = await same([parked], worker, { "grpc-timeout": "300m" }, true);
    expect(a.messages).toHaveLength(1);
    expect(a.messages[0]?.data.length).toBe(0);
  });

  it("authenticates and authorizes as every other call", async () => {
    expect((await same([poll(empty)], "")).trailers["grpc-status"]).toBe("16");
    expect((await same([poll(empty)], newToken())).trailers["grpc-status"]).toBe("16");
    expect((await same([poll(empty)], producer)).trailers["grpc-status"]).toBe("7");
  });
});

describe("isPlainGrpcClaim", () => {
  const req = (headers: Record<string, string>, over: object = {}) =>
    ({ httpVersionMajor: 2, method: "POST", url: CLAIM, headers, ...over }) as never;
  const grpc = { "content-type": "application/grpc" };

  it("takes binary gRPC Claim streams without request compression, as every gRPC library sends them", () => {
    expect(isPlainGrpcClaim(req(grpc))).toBe(true);
    expect(isPlainGrpcClaim(req({ ...grpc, "grpc-accept-encoding": "identity,deflate,gzip" }))).toBe(true);
    expect(isPlainGrpcClaim(req({ "content-type": "application/grpc+proto", "grpc-timeout": "5S" }))).toBe(
      true,
    );
    expect(isPlainGrpcClaim(req({ ...grpc, "grpc-encoding": "identity" }))).toBe(true);
  });

  it("leaves everything else to connect", () => {
    expect(isPlainGrpcClaim(req({ ...grpc, "grpc-encoding": "gzip" }))).toBe(false);
    expect(isPlainGrpcClaim(req({ ...grpc, "grpc-timeout": "soon" }))).toBe(false);
    expect(isPlainGrpcClaim(req({ "content-type": "application/grpc+json" }))).toBe(false);
    expect(isPlainGrpcClaim(req({ "content-type": "application/grpc-web+proto" }))).toBe(false);
    expect(isPlainGrpcClaim(req(grpc, { httpVersionMajor: 1 }))).toBe(false);
    expect(isPlainGrpcClaim(req(grpc, { url: "/taskq.v1.WorkerService/Settle" }))).toBe(false);
    expect(isPlainGrpcClaim(req(grpc, { url: `${CLAIM}?x=1` }))).toBe(false);
  });
});
