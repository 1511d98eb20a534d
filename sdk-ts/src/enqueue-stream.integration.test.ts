import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { freePort, startTestGateway, type TestGateway } from "@taskq/gateway/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "./client.js";

// A real gateway (embedded PGlite). The transport records which procedure each call used, so a test
// can tell a stream from unary calls; an interceptor can also stand in for a gateway that does not
// know EnqueueStream.
let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(() => gateway.stop());

/** An interceptor that records each call's procedure, and can refuse EnqueueStream as unknown. */
function recorder(refuseStream = false) {
  const calls: string[] = [];
  const record: Interceptor = (next) => async (req) => {
    calls.push(req.method.name);
    if (refuseStream && req.method.name === "EnqueueStream") {
      throw new ConnectError("unknown method", Code.Unimplemented);
    }
    return next(req);
  };
  return { calls, record };
}

function recordingClient(opts: { idleMs?: number; refuseStream?: boolean } = {}) {
  const { calls, record } = recorder(opts.refuseStream);
  const transport = createGrpcTransport({ baseUrl: gateway.grpcUrl, interceptors: [record] });
  // A transport createTransport did not build sends unary calls unless the stream is asked for.
  const client = new Client({ transport, enqueueStreamIdleMs: opts.idleMs ?? 500 });
  return { client, calls };
}

describe("Client enqueues over one stream", () => {
  it("pipelines concurrent batches on one call, each answered with its own jobs in order", async () => {
    const { client, calls } = recordingClient({ idleMs: 60_000 });
    try {
      const batches = await Promise.all(
        Array.from({ length: 20 }, (_, b) =>
          client.enqueueBatch([
            { queue: `es-a-${b}`, payload: { b, i: 0 } },
            { queue: `es-b-${b}`, payload: { b, i: 1 } },
          ]),
        ),
      );
      expect(calls).toEqual(["EnqueueStream"]);
      for (const [b, results] of batches.entries()) {
        expect(results).toHaveLength(2);
        const jobs = await Promise.all(results.map((r) => client.getJob(r.jobId)));
        expect(jobs.map((j) => j.queue)).toEqual([`es-a-${b}`, `es-b-${b}`]);
      }
      const one = await client.enqueue({ queue: "es-one", idempotencyKey: "k1" });
      const again = await client.enqueue({ queue: "es-one", idempotencyKey: "k1" });
      expect(again).toEqual({ jobId: one.jobId, duplicate: true });
      expect(calls.filter((c) => c.startsWith("Enqueue"))).toEqual(["EnqueueStream"]);
    } finally {
      client.close();
    }
  });

  it("answers a refused batch with its error and keeps the stream for the next", async () => {
    const { client, calls } = recordingClient({ idleMs: 60_000 });
    try {
      const refused = client.enqueueBatch([{ queue: "es-ok" }, { queue: "bad name!" }]);
      const next = client.enqueue({ queue: "es-after-refusal" });
      const err = await refused.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.InvalidArgument);
      expect((err as ConnectError).rawMessage).toMatch(/^jobs\[1\]\.queue /);
      expect((await client.getJob((await next).jobId)).queue).toBe("es-after-refusal");
      expect(calls).toEqual(["EnqueueStream", "GetJob"]);
      // Nothing of the refused batch was written.
      const listed = await fetch(`${gateway.httpUrl}/taskq.v1.AdminService/ListJobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ queue: "es-ok" }),
      }).then((r) => r.json() as Promise<{ jobs?: unknown[] }>);
      expect(listed.jobs ?? []).toEqual([]);
    } finally {
      client.close();
    }
  });

  it("names a one-job enqueue's bad field as the unary Enqueue does", async () => {
    const { client, calls } = recordingClient({ idleMs: 60_000 });
    try {
      const err = await client.enqueue({ queue: "bad name!" }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.InvalidArgument);
      expect((err as ConnectError).rawMessage).toMatch(/^job\.queue /);
      expect(calls).toEqual(["EnqueueStream"]);
    } finally {
      client.close();
    }
  });

  it("closes the stream once idle and opens a new one for the next enqueue", async () => {
    const { client, calls } = recordingClient({ idleMs: 200 });
    try {
      await client.enqueue({ queue: "es-idle" });
      await client.enqueue({ queue: "es-idle" });
      expect(calls).toEqual(["EnqueueStream"]);
      await new Promise((r) => setTimeout(r, 800));
      await client.enqueue({ queue: "es-idle" });
      expect(calls).toEqual(["EnqueueStream", "EnqueueStream"]);
    } finally {
      client.close();
    }
  });

  it("falls back to unary calls, for good, when the gateway does not know EnqueueStream", async () => {
    // Both enqueues go out on the stream before its UNIMPLEMENTED comes back: both go again as Enqueue.
    const { client, calls } = recordingClient({ refuseStream: true });
    const [a, b] = await Promise.all([
      client.enqueue({ queue: "es-old-gateway" }),
      client.enqueue({ queue: "es-old-gateway" }),
    ]);
    const c = await client.enqueue({ queue: "es-old-gateway" });
    expect(new Set([a?.jobId, b?.jobId, c.jobId]).size).toBe(3);
    const [d] = await client.enqueueBatch([{ queue: "es-old-gateway" }]);
    expect(new Set([a?.jobId, b?.jobId, c.jobId, d?.jobId]).size).toBe(4);
    expect(calls).toEqual(["EnqueueStream", "Enqueue", "Enqueue", "Enqueue", "EnqueueBatch"]);
    expect((await client.getJob(c.jobId)).queue).toBe("es-old-gateway");
  });

  it("sends unary calls with enqueueStreamIdleMs 0, and refuses a bad value", async () => {
    const { client, calls } = recordingClient({ idleMs: 0 });
    await client.enqueue({ queue: "es-unary" });
    await client.enqueueBatch([{ queue: "es-unary" }]);
    expect(calls).toEqual(["Enqueue", "EnqueueBatch"]);
    for (const bad of [-1, Number.NaN]) {
      // As the Worker's options: a TypeError that names the class and the option.
      const make = () => new Client({ baseUrl: gateway.grpcUrl, enqueueStreamIdleMs: bad });
      expect(make).toThrow(TypeError);
      expect(make).toThrow(`Client: enqueueStreamIdleMs must be a number of ms ≥ 0, got ${bad}`);
    }
  });
});

describe("Client's enqueue stream across a gateway restart", () => {
  it("opens a new stream to the gateway that came back", async () => {
    const port = await freePort();
    let gw = await startTestGateway({ config: { grpcPort: port } });
    const client = new Client({ baseUrl: gw.grpcUrl, enqueueStreamIdleMs: 60_000 });
    try {
      await client.enqueue({ queue: "es-restart" });
      await gw.stop();
      gw = await startTestGateway({ config: { grpcPort: port } });
      const { jobId } = await client.enqueue({ queue: "es-restart" });
      expect((await client.getJob(jobId)).queue).toBe("es-restart");
    } finally {
      client.close();
      await gw.stop();
    }
  });
});

describe("Client's enqueue stream and its transport", () => {
  it("is on for a transport createTransport built, off for another unless asked for", async () => {
    // An HTTP/1.1 Connect transport cannot carry a bidi stream: unary calls, and they work.
    const { calls, record } = recorder();
    const h1 = new Client({
      transport: createConnectTransport({
        baseUrl: gateway.httpUrl,
        httpVersion: "1.1",
        interceptors: [record],
      }),
    });
    await h1.enqueue({ queue: "es-h1" });
    expect(calls).toEqual(["Enqueue"]);
    const own = new Client({ baseUrl: gateway.grpcUrl });
    try {
      const { jobId } = await own.enqueue({ queue: "es-own" });
      expect((await own.getJob(jobId)).queue).toBe("es-own");
    } finally {
      own.close();
    }
  });
});
