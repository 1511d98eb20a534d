// Hostile input on the bidi streams (Claim, Settle, Heartbeat), over plain @grpc/grpc-js stubs as a
// worker in another language would send it: property-based fuzzing (fast-check) of malformed and
// out-of-range messages, then a storm of streams opened and reset at once — before any message, in the
// middle of one (a frame cut short), during a long poll, and with the whole connection torn down.
// Each answer must be a success or a clear client error, never INTERNAL/UNKNOWN — undecodable protobuf
// bytes included: the stream ends INVALID_ARGUMENT "parse binary: ..." (connect-es answers INTERNAL
// there; the gateway remaps it, gateway/src/rpc/decode-errors.ts), counted for the summary. The gateway
// must stay up, no job may change state, and its sockets and memory must come back to where they were.
import { once } from "node:events";
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import { connect, type Socket } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { ClaimRequestSchema, HeartbeatRequestSchema, SettleRequestSchema } from "@taskq/sdk/proto";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcStubs, seconds, unary } from "../testing/grpc-stubs.js";
import { haveService } from "../testing/services.js";
import { enqueueJobs, scenarioQueue } from "./drive.js";
import { type FaultEnv, startFaultEnv } from "./fault-env.js";
import { type GatewayChild, startGatewayChild } from "./gateway-child.js";
import { openStreams, openStreamsUntil } from "./scrape.js";
import { FAULT_TOKEN } from "./token.js";

const CASES = 300;
const RAW_CASES = 60;
const STORM = 600;
/** Codes a client can act on. INTERNAL, UNKNOWN, UNAVAILABLE and DEADLINE_EXCEEDED (a hang) are not. */
const CLIENT_ERRORS = new Set([
  grpc.status.INVALID_ARGUMENT,
  grpc.status.NOT_FOUND,
  grpc.status.PERMISSION_DENIED,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.OUT_OF_RANGE,
  grpc.status.UNAUTHENTICATED,
]);

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : 0;
}

/** Established TCP connections to a local port (the gateway's HTTP/2 connections), from /proc/net. */
function connectionsTo(port: number): number {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  let n = 0;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (local?.endsWith(hex) && state === "01") n++;
    }
  }
  return n;
}

/** Every job's state, attempt and lease, as one string: any write by a refused request changes it. */
async function jobsFingerprint(databaseUrl: string): Promise<string> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const r = await c.query<{ f: string | null }>(
      `select md5(string_agg(id || ':' || state || ':' || attempt || ':' || coalesce(lease_deadline::text, '-')
         || ':' || coalesce(settled_attempt::text, '-'), ',' order by id)) as f from taskq.jobs`,
    );
    return r.rows[0]?.f ?? "";
  } finally {
    await c.end();
  }
}

/** gRPC framing: 1 byte compressed flag, 4 bytes length, the message. */
function frame(message: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

interface Outcome {
  code: number;
  details: string;
  responses: number;
}

/** Opens `method` on a stub, sends each request in turn (one response each), ends, and reports. */
function converse(client: grpc.Client, method: string, requests: object[]): Promise<Outcome> {
  return new Promise((resolve) => {
    // biome-ignore lint/suspicious/noExplicitAny: dynamic stubs are untyped by nature.
    const call = (client as any)[method]({ deadline: Date.now() + 5000 }) as grpc.ClientDuplexStream<
      object,
      object
    >;
    let responses = 0;
    let code = -1;
    let details = "";
    const pending = [...requests];
    const next = () => {
      const req = pending.shift();
      if (req === undefined) call.end();
      else call.write(req);
    };
    call.on("data", () => {
      responses++;
      next();
    });
    call.on("error", (err: grpc.ServiceError) => {
      code = err.code;
      details = err.details;
    });
    call.on("status", (s: grpc.StatusObject) => {
      if (code === -1) {
        code = s.code;
        details = s.details;
      }
      resolve({ code, details, responses });
    });
    next();
  });
}

// Arbitraries: the wire types are respected (so the client can serialize them), the values are not.
const int64 = fc.constantFrom("0", "1", "-1", "61", "3601", "9223372036854775807", "-9223372036854775808");
const duration = fc.option(
  fc.record({
    seconds: int64,
    nanos: fc.constantFrom(0, 1, -1, 999_999_999, 1_000_000_000, 2 ** 31 - 1, -(2 ** 31)),
  }),
  { nil: undefined },
);
const text = (max: number) =>
  fc.oneof(
    fc.string({ maxLength: 300 }),
    fc.constantFrom("", "..", "a b", "\u0000", "%2F", "é".repeat(200), "x".repeat(max + 1)),
  );
const uint32 = fc.constantFrom(0, 1, 2, 1000, 1001, 1_000_001, 2 ** 31, 2 ** 32 - 1);

describe.skipIf(!haveService("postgres") || !haveService("redis"))("hostile input on the streams", () => {
  let env: FaultEnv;
  let gateway: GatewayChild;
  beforeAll(async () => {
    env = await startFaultEnv();
    gateway = await startGatewayChild({ ...env.gateway });
  });
  afterAll(async () => {
    await gateway?.child.stop();
    await env?.close();
  });

  it("answers fuzzed Claim, Settle and Heartbeat streams and survives a storm of resets, with no write", {
    timeout: 120_000,
  }, async () => {
    // Running jobs with hour-long leases (nothing expires during the test) and an empty queue: every
    // fuzzed request is one the gateway must refuse or answer with nothing, so no job may change.
    const queue = scenarioQueue("streams");
    const ids = await enqueueJobs(gateway.grpcUrl, queue, 10);
    const stubs = grpcStubs(gateway.grpcUrl, FAULT_TOKEN);
    const claimed = await unary<{ jobs: { id: string }[] }>(stubs.worker, "ClaimOnce", {
      queues: [queue],
      max_jobs: 10,
      lease_duration: seconds(3600),
    });
    expect(claimed.jobs).toHaveLength(10);
    const jobId = fc.oneof(
      fc.constantFrom(...ids),
      fc.constantFrom("", "0", "-1", "abc", "99999999999999999999", "1e3", " 1"),
      fc.string({ maxLength: 30 }),
    );
    // Never attempt 1: that is the live lease, which may legitimately settle or extend.
    const lease = fc.option(fc.record({ job_id: jobId, attempt: uint32.filter((a) => a !== 1) }), {
      nil: undefined,
    });
    const claimReq = fc.record({
      queues: fc.array(fc.oneof(text(200), fc.constant(queue)), { maxLength: 70 }),
      max_jobs: uint32,
      max_wait: fc.option(fc.constantFrom(seconds(0), seconds(1), { seconds: "-1", nanos: 0 }), {
        nil: undefined,
      }),
      worker_id: text(255),
      lease_duration: duration,
    });
    const outcome = fc.oneof(
      fc.record({
        success: fc.record({ result: fc.uint8Array({ maxLength: 100 }).map((b) => Buffer.from(b)) }),
      }),
      fc.record({
        failure: fc.record({
          type: text(255),
          message: text(16_384),
          retryable: fc.boolean(),
          retry_after: duration,
        }),
      }),
      fc.record({ cancelled: fc.record({ reason: text(4096) }) }),
      fc.constant({}),
    );
    const settleReq = fc.record({
      settlements: fc.oneof(
        fc.array(
          fc.tuple(lease, outcome, duration).map(([l, o, d]) => ({ lease: l, duration: d, ...o })),
          { maxLength: 4 },
        ),
        fc.constant(
          Array.from({ length: 1001 }, () => ({ lease: { job_id: "1", attempt: 2 }, success: {} })),
        ),
      ),
    });
    const heartbeatReq = fc.record({
      leases: fc.oneof(
        fc.array(
          lease.map((l) => l ?? {}),
          { maxLength: 5 },
        ),
        fc.constant(Array.from({ length: 1001 }, () => ({ job_id: "1", attempt: 2 }))),
      ),
      extend_by: duration,
    });
    const cases = fc.oneof(
      fc.record({
        method: fc.constant("Claim"),
        requests: fc.array(claimReq, { minLength: 1, maxLength: 3 }),
      }),
      fc.record({
        method: fc.constant("Settle"),
        requests: fc.array(settleReq, { minLength: 1, maxLength: 3 }),
      }),
      fc.record({
        method: fc.constant("Heartbeat"),
        requests: fc.array(heartbeatReq, { minLength: 1, maxLength: 3 }),
      }),
    );

    const codes: Record<string, number> = {};
    const serverErrors: string[] = [];
    const errantWrites: string[] = [];
    let serializationRefused = 0;
    const before = await jobsFingerprint(env.databaseUrl);
    await fc.assert(
      fc.asyncProperty(cases, async ({ method, requests }) => {
        const out = await converse(stubs.worker, method, requests);
        const key = `${method} ${grpc.status[out.code] ?? out.code}`;
        codes[key] = (codes[key] ?? 0) + 1;
        const what = `${method} ${JSON.stringify(requests).slice(0, 200)}: ${grpc.status[out.code]} ${out.details}`;
        if (out.code === grpc.status.INTERNAL && /serialization failure/.test(out.details))
          serializationRefused++;
        else if (out.code !== grpc.status.OK && !CLIENT_ERRORS.has(out.code)) serverErrors.push(what);
        if ((await jobsFingerprint(env.databaseUrl)) !== before) errantWrites.push(what);
      }),
      { numRuns: CASES },
    );

    // Raw bytes that are not the message they claim to be.
    const raw = new grpc.Client(gateway.grpcUrl.replace(/^http:\/\//, ""), grpc.credentials.createInsecure());
    let undecodable = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("Claim", "Settle", "Heartbeat"),
        fc.uint8Array({ minLength: 1, maxLength: 64 }),
        async (method, bytes) => {
          const md = new grpc.Metadata();
          md.set("authorization", `Bearer ${FAULT_TOKEN}`);
          const call = raw.makeBidiStreamRequest(
            `/taskq.v1.WorkerService/${method}`,
            (b: Buffer) => b,
            (b: Buffer) => b,
            md,
            { deadline: Date.now() + 5000 },
          );
          call.on("data", () => {});
          call.on("error", () => {});
          const status = new Promise<grpc.StatusObject>((r) => call.on("status", r));
          call.write(Buffer.from(bytes));
          call.end();
          const s = await status;
          const key = `raw ${method} ${grpc.status[s.code]}`;
          codes[key] = (codes[key] ?? 0) + 1;
          if (s.code === grpc.status.INVALID_ARGUMENT && /^parse binary/.test(s.details)) undecodable++;
          if (s.code !== grpc.status.OK && !CLIENT_ERRORS.has(s.code))
            serverErrors.push(
              `raw ${method} ${Buffer.from(bytes).toString("hex")}: ${grpc.status[s.code]} ${s.details}`,
            );
          if ((await jobsFingerprint(env.databaseUrl)) !== before)
            errantWrites.push(`raw ${method} ${Buffer.from(bytes).toString("hex")}`);
        },
      ),
      // One sure to be undecodable (field 1 says 5 bytes and carries 1) besides the random ones.
      { numRuns: RAW_CASES, examples: [["Claim", Uint8Array.of(0x0a, 0x05, 0x61)]] },
    );
    raw.close();
    stubs.close();

    // The storm: STORM streams over 10 HTTP/2 connections, each reset at once in one of five ways.
    await new Promise((r) => setTimeout(r, 1000));
    const baseSockets = connectionsTo(gateway.grpcPort);
    const baseRss = rssMb(gateway.child.pid);
    let peakRss = baseRss;
    const baseStreams = await openStreams(gateway.httpUrl);
    let peakStreams = baseStreams;
    let sampling = true;
    const streamSampler = (async () => {
      while (sampling) {
        peakStreams = Math.max(peakStreams, await openStreams(gateway.httpUrl).catch(() => 0));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const empty = scenarioQueue("streams-empty");
    const messages = {
      Claim: toBinary(
        ClaimRequestSchema,
        create(ClaimRequestSchema, { queues: [empty], maxJobs: 10, maxWait: { seconds: 5n } }),
      ),
      Settle: toBinary(
        SettleRequestSchema,
        create(SettleRequestSchema, {
          settlements: [{ lease: { jobId: ids[0], attempt: 7 }, outcome: { case: "success", value: {} } }],
        }),
      ),
      Heartbeat: toBinary(
        HeartbeatRequestSchema,
        create(HeartbeatRequestSchema, {
          leases: [{ jobId: ids[0], attempt: 7 }],
          extendBy: { seconds: 60n },
        }),
      ),
    } as const;
    const ways = { beforeMessage: 0, midMessage: 0, afterMessage: 0, duringPoll: 0, connectionTorn: 0 };
    const started = Date.now();
    let tornSocket: Socket | undefined;
    const sessions = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const s = http2.connect(gateway.grpcUrl, {
          createConnection: () => {
            const socket = connect(gateway.grpcPort, "127.0.0.1");
            if (i === 9) tornSocket = socket;
            return socket;
          },
        });
        s.on("error", () => {});
        await once(s, "connect");
        return s;
      }),
    );
    const sample = setInterval(() => {
      peakRss = Math.max(peakRss, rssMb(gateway.child.pid));
    }, 100);
    await Promise.all(
      Array.from({ length: STORM }, async (_, i) => {
        const session = sessions[i % 9] as http2.ClientHttp2Session; // 9 is torn down below
        const method = (["Claim", "Settle", "Heartbeat"] as const)[i % 3] ?? "Claim";
        const way =
          (["beforeMessage", "midMessage", "afterMessage", "duringPoll"] as const)[Math.floor(i / 3) % 4] ??
          "beforeMessage";
        ways[way]++;
        if (session.destroyed || session.closed) return;
        const stream = session.request({
          ":method": "POST",
          ":path": `/taskq.v1.WorkerService/${method}`,
          "content-type": "application/grpc",
          te: "trailers",
          authorization: `Bearer ${FAULT_TOKEN}`,
        });
        stream.on("error", () => {});
        stream.on("data", () => {});
        const message = frame(messages[way === "duringPoll" ? "Claim" : method]);
        if (way === "midMessage") stream.write(message.subarray(0, 5 + Math.floor(message.length / 3)));
        if (way === "afterMessage" || way === "duringPoll") stream.write(message);
        if (way === "duringPoll") await new Promise((r) => setTimeout(r, 50 + (i % 200)));
        stream.close(http2.constants.NGHTTP2_CANCEL);
      }),
    );
    // Connection 9: every stream on it open, then the socket destroyed under them.
    const torn = sessions[9] as http2.ClientHttp2Session;
    for (let i = 0; i < 30; i++) {
      const stream = torn.request({
        ":method": "POST",
        ":path": "/taskq.v1.WorkerService/Claim",
        "content-type": "application/grpc",
        te: "trailers",
        authorization: `Bearer ${FAULT_TOKEN}`,
      });
      stream.on("error", () => {});
      stream.write(frame(messages.Claim));
      ways.connectionTorn++;
    }
    await new Promise((r) => setTimeout(r, 100));
    tornSocket?.destroy();
    const stormMs = Date.now() - started;
    await Promise.all(
      // Every stream was reset or its connection torn, so a graceful close is immediate; else destroy.
      sessions.map(
        (s) =>
          new Promise<void>((r) => {
            if (s.destroyed) return r();
            const t = setTimeout(() => {
              s.destroy();
              r();
            }, 3000);
            s.close(() => {
              clearTimeout(t);
              r();
            });
          }),
      ),
    );

    const closedAt = Date.now();

    // Back to baseline: sockets, memory; the gateway serves a fresh claim; nothing was written.
    let afterSockets = connectionsTo(gateway.grpcPort);
    const settleBy = Date.now() + 10_000;
    while (afterSockets > baseSockets && Date.now() < settleBy) {
      await new Promise((r) => setTimeout(r, 200));
      afterSockets = connectionsTo(gateway.grpcPort);
    }
    clearInterval(sample);
    // The gateway's open streams back to the pre-storm count: every reset stream's handler ended.
    const afterStreams = await openStreamsUntil(gateway.httpUrl, (n) => n <= baseStreams, 5000);
    const streamsMs = Date.now() - closedAt;
    sampling = false;
    await streamSampler;
    const afterRss = rssMb(gateway.child.pid);
    const stormWrites = (await jobsFingerprint(env.databaseUrl)) !== before;
    const fresh = scenarioQueue("streams-fresh");
    await enqueueJobs(gateway.grpcUrl, fresh, 1);
    const probe = grpcStubs(gateway.grpcUrl, FAULT_TOKEN);
    const served = await unary<{ jobs: unknown[] }>(probe.worker, "ClaimOnce", {
      queues: [fresh],
      max_jobs: 1,
      max_wait: seconds(5),
    });
    probe.close();
    const alive = gateway.child.proc.exitCode === null && gateway.child.proc.signalCode === null;
    const healthz = await fetch(`${gateway.httpUrl}/healthz`).then(
      (r) => r.status,
      () => 0,
    );
    const logged = gateway.child
      .output()
      .split("\n")
      .filter((l) => /"level":(50|60)|Unhandled|uncaught/i.test(l));
    if (serverErrors.length > 0 || errantWrites.length > 0 || !alive || logged.length > 0) {
      console.log(
        `[faults] hostile streams failures:\n${[...serverErrors, ...errantWrites].slice(0, 10).join("\n")}\n${logged.slice(0, 10).join("\n")}\n${gateway.child.output().slice(-2000)}`,
      );
    }
    console.log(
      `[faults] hostile streams: ${CASES} fuzzed stream cases + ${RAW_CASES} raw-byte cases, answers ${JSON.stringify(Object.fromEntries(Object.entries(codes).sort()))}; INTERNAL/UNKNOWN/other ${serverErrors.length}; undecodable bytes answered INVALID_ARGUMENT ${undecodable}; refused by the client's own serializer ${serializationRefused}; errant writes ${errantWrites.length}; storm of ${STORM + 30} resets ${JSON.stringify(ways)} in ${stormMs} ms: HTTP/2 connections to the gateway ${baseSockets} before, ${afterSockets} after; open streams ${baseStreams} before, ${peakStreams} peak, ${afterStreams.n} after (${streamsMs} ms after the connections closed); RSS ${baseRss.toFixed(0)} MB before, ${peakRss.toFixed(0)} MB peak, ${afterRss.toFixed(0)} MB after; fresh claim served ${served.jobs.length}; writes by the storm ${stormWrites}; error logs ${logged.length}; gateway alive ${alive}, healthz ${healthz}`,
    );
    expect(serverErrors).toEqual([]);
    expect(undecodable).toBeGreaterThan(0);
    expect(errantWrites).toEqual([]);
    expect(stormWrites).toBe(false);
    expect(logged).toEqual([]);
    expect(afterSockets).toBeLessThanOrEqual(baseSockets);
    expect(afterStreams.n).toBe(baseStreams);
    expect(afterRss).toBeLessThanOrEqual(baseRss + 128);
    expect(served.jobs).toHaveLength(1);
    expect(alive).toBe(true);
    expect(healthz).toBe(200);
  });
});
