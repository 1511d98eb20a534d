// taskq_open_streams{rpc}: a real gateway and plain grpc-js streams, opened, then ended normally
// (half-close), reset by the client (cancel, one group mid long poll), ended by an error, or cut by
// the gateway's own shutdown; the gauge reads what is open and comes back to 0.
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scrape } from "../faults/scrape.js";
import { type GrpcStubs, grpcStubs, seconds } from "../testing/grpc-stubs.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

const PER_WAY = 3;
const RPCS = ["claim", "settle", "heartbeat"] as const;
const METHOD = { claim: "Claim", settle: "Settle", heartbeat: "Heartbeat" } as const;
/** A request each handler refuses with INVALID_ARGUMENT (an empty list). */
const INVALID = { claim: { queues: [] }, settle: { settlements: [] }, heartbeat: { leases: [] } } as const;

type Way = "end" | "cancel" | "error";

interface Opened {
  rpc: (typeof RPCS)[number];
  way: Way;
  call: grpc.ClientDuplexStream<object, object>;
  status: Promise<number>;
}

/** Reads `read` until every rpc reads `n` (handlers start and end asynchronously), at most 10 s. */
async function until(read: () => Promise<Record<string, number | undefined>>, n: number) {
  const by = Date.now() + 10_000;
  let seen = await read();
  while (RPCS.some((r) => seen[r] !== n) && Date.now() < by) {
    await new Promise((r) => setTimeout(r, 50));
    seen = await read();
  }
  return seen;
}

describe("taskq_open_streams", () => {
  let gateway: TestGateway;
  let stubs: GrpcStubs;
  beforeAll(async () => {
    gateway = await startTestGateway();
    stubs = grpcStubs(gateway.grpcUrl);
  });
  afterAll(async () => {
    stubs?.close();
    await gateway?.stop();
  });

  const open = async () =>
    Object.fromEntries(
      await Promise.all(
        RPCS.map(async (rpc) => [rpc, await scrape(gateway.httpUrl, "taskq_open_streams", `rpc="${rpc}"`)]),
      ),
    ) as Record<(typeof RPCS)[number], number>;
  const settleAt = (n: number) => until(open, n);

  it("counts Claim, Settle and Heartbeat streams while open, and none once ended, reset or failed", async () => {
    expect(await open()).toEqual({ claim: 0, settle: 0, heartbeat: 0 });
    const calls: Opened[] = [];
    for (const rpc of RPCS)
      for (const way of ["end", "cancel", "error"] as const)
        for (let i = 0; i < PER_WAY; i++) {
          const call = stubs.worker[METHOD[rpc]]() as grpc.ClientDuplexStream<object, object>;
          call.on("data", () => {});
          call.on("error", () => {});
          const status = new Promise<number>((r) => call.on("status", (s: grpc.StatusObject) => r(s.code)));
          // The streams reset mid long poll: a poll on an empty queue, parked for 30 s.
          if (rpc === "claim" && way === "cancel")
            call.write({ queues: ["open-streams-empty"], max_jobs: 1, max_wait: seconds(30) });
          calls.push({ rpc, way, call, status });
        }
    const n = 3 * PER_WAY;
    expect(await settleAt(n)).toEqual({ claim: n, settle: n, heartbeat: n });

    for (const c of calls) {
      if (c.way === "end") c.call.end();
      else if (c.way === "cancel") c.call.cancel();
      else c.call.write(INVALID[c.rpc]);
    }
    const codes = await Promise.all(
      calls.map(async (c) => `${c.rpc} ${c.way} ${grpc.status[await c.status]}`),
    );
    expect(await settleAt(0)).toEqual({ claim: 0, settle: 0, heartbeat: 0 });
    expect(new Set(codes)).toEqual(
      new Set(
        RPCS.flatMap((rpc) => [`${rpc} end OK`, `${rpc} cancel CANCELLED`, `${rpc} error INVALID_ARGUMENT`]),
      ),
    );
  });

  it("counts none once the gateway has stopped under open streams", async () => {
    const other = await startTestGateway();
    const client = grpcStubs(other.grpcUrl);
    try {
      const gauge = async () =>
        Object.fromEntries(
          ((await other.metrics.openStreams.get()).values ?? []).map((v) => [v.labels.rpc, v.value]),
        );
      const statuses = RPCS.flatMap((rpc) =>
        Array.from({ length: PER_WAY }, () => {
          const call = client.worker[METHOD[rpc]]() as grpc.ClientDuplexStream<object, object>;
          call.on("data", () => {});
          call.on("error", () => {});
          if (rpc === "claim")
            call.write({ queues: ["open-streams-empty"], max_jobs: 1, max_wait: seconds(30) });
          return new Promise<void>((r) => call.on("status", () => r()));
        }),
      );
      expect(await until(gauge, PER_WAY)).toEqual({ claim: PER_WAY, settle: PER_WAY, heartbeat: PER_WAY });
      await other.stop();
      await Promise.all(statuses);
      expect(await until(gauge, 0)).toEqual({ claim: 0, settle: 0, heartbeat: 0 });
    } finally {
      client.close();
      await other.stop();
    }
  });
});
