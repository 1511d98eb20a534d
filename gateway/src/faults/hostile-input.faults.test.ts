// Hostile input: property-based fuzzing (fast-check) of every unary RPC over the Connect protocol (JSON
// and binary), of the REST routes, plus oversized and malformed bodies, all with a token allowed to do
// everything, so requests get past auth to the validation behind it. Each answer must be a clear client
// error or a success — never a 5xx — the gateway must stay up, and an answer that is an error must
// leave every table as it was. A body sent as binary protobuf that does not decode is a client error
// like any other: HTTP 400 invalid_argument "parse binary: ..." (connect-es answers INTERNAL there; the
// gateway remaps it, gateway/src/rpc/decode-errors.ts), counted for the summary.
import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { AdminService } from "@taskq/sdk/proto";
import fc from "fast-check";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveService } from "../testing/services.js";
import { type FaultEnv, startFaultEnv } from "./fault-env.js";
import { type GatewayChild, startGatewayChild } from "./gateway-child.js";
import { FAULT_TOKEN } from "./token.js";

const RUNS = 400;
const TABLES = [
  "jobs",
  "job_attempts",
  "queues",
  "queue_audit",
  "schedules",
  "flow_limits",
  "job_events",
  "breaker_samples",
];

/** Every unary procedure of the contract, as its Connect path. */
async function unaryProcedures(): Promise<{ path: string; input: DescMessage }[]> {
  const { WorkerService, ProducerService } = await import("@taskq/sdk/proto");
  return [WorkerService, ProducerService, AdminService].flatMap((service) =>
    service.methods
      .filter((m) => m.methodKind === "unary")
      .map((m) => ({ path: `/${service.typeName}/${m.name}`, input: m.input })),
  );
}

/** Any JSON value, of the right shape or not. */
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string({ maxLength: 300 }),
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom("", "a", "0", "-1", "1e309", "NaN", "x".repeat(70_000), "../../etc", "a{b}", "\u0000"),
  fc.array(fc.string({ maxLength: 20 }), { maxLength: 5 }),
);

/** A JSON object with the message's own field names, each present or not, with values of any kind. */
function shaped(message: DescMessage, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const f of message.fields as DescField[]) {
    const nested = f.fieldKind === "message" && depth < 2 ? shaped(f.message, depth + 1) : anyValue;
    fields[f.jsonName] = fc.oneof(nested, anyValue);
  }
  return fc.record(fields, { requiredKeys: [] });
}

async function tableCounts(databaseUrl: string): Promise<string> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const r = await c.query<{ n: string }>(
      `select ${TABLES.map((t) => `(select count(*) from taskq.${t})`).join(" || ',' || ")} as n`,
    );
    return r.rows[0]?.n ?? "";
  } finally {
    await c.end();
  }
}

describe.skipIf(!haveService("postgres") || !haveService("redis"))("hostile input", () => {
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

  it("answers every RPC and REST route with a client error or a success, never a 5xx, a crash or an errant write", {
    timeout: 300_000,
  }, async () => {
    const procedures = await unaryProcedures();
    const statuses = new Map<number, number>();
    const serverErrors: string[] = [];
    const errantWrites: string[] = [];
    let undecodableBinary = 0;
    const send = async (path: string, init: RequestInit, what: string) => {
      const before = await tableCounts(env.databaseUrl);
      let status: number;
      let answer = "";
      try {
        const res = await fetch(`${gateway.httpUrl}${path}`, {
          ...init,
          signal: AbortSignal.timeout(15_000),
        });
        status = res.status;
        answer = (await res.text()).slice(0, 200);
      } catch (err) {
        status = 0;
        serverErrors.push(`${what}: ${(err as Error).message}`);
      }
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status === 400 && /"code":"invalid_argument","message":"parse binary: /.test(answer))
        undecodableBinary++;
      if (status >= 500) serverErrors.push(`${what}: HTTP ${status} ${answer}`);
      if (status >= 400 && (await tableCounts(env.databaseUrl)) !== before)
        errantWrites.push(`${what}: HTTP ${status}`);
      return status;
    };
    const auth = { authorization: `Bearer ${FAULT_TOKEN}` };

    const rpc = fc.constantFrom(...procedures).chain((p) =>
      fc.record({
        path: fc.constant(p.path),
        body: fc.oneof(
          shaped(p.input).map((o) => JSON.stringify(o)),
          fc.jsonValue().map((v) => JSON.stringify(v)),
          fc.string({ maxLength: 200 }),
        ),
        contentType: fc.constantFrom(
          "application/json",
          "application/json",
          "application/proto",
          "text/plain",
        ),
      }),
    );
    await fc.assert(
      fc.asyncProperty(rpc, async ({ path, body, contentType }) => {
        await send(
          path,
          { method: "POST", headers: { ...auth, "content-type": contentType }, body },
          `${path} ${body.slice(0, 120)}`,
        );
      }),
      { numRuns: RUNS },
    );

    const queueName = fc.oneof(
      fc.constantFrom("q1", "a.b-c_d", "x".repeat(129), "..", "%2F", ""),
      fc.string({ maxLength: 40 }),
    );
    const rest = fc.record({
      method: fc.constantFrom("GET", "POST", "PUT", "DELETE", "PATCH"),
      path: fc.oneof(
        fc
          .tuple(queueName, fc.constantFrom("pause", "resume", "clear", "concurrency", "throttle", "nothing"))
          .map(([q, verb]) => `/api/v1/queues/${encodeURIComponent(q)}/${verb}`),
        fc.string({ maxLength: 60 }).map((s) => `/${s.replace(/[^\x21-\x7e]/g, "")}`),
      ),
      body: fc.oneof(
        fc.jsonValue().map((v) => JSON.stringify(v)),
        fc.string({ maxLength: 200 }),
      ),
    });
    await fc.assert(
      fc.asyncProperty(rest, async ({ method, path, body }) => {
        const init: RequestInit = { method, headers: { ...auth, "content-type": "application/json" } };
        if (method !== "GET") init.body = body;
        await send(path, init, `${method} ${path} ${body.slice(0, 120)}`);
      }),
      { numRuns: RUNS },
    );

    // Oversized and malformed bodies.
    const enqueue = "/taskq.v1.ProducerService/Enqueue";
    const huge = JSON.stringify({
      job: { queue: "big", payload: Buffer.alloc(20 * 1024 * 1024, 1).toString("base64") },
    });
    const hugeStatus = await send(
      enqueue,
      { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: huge },
      "20 MiB enqueue",
    );
    await send(
      enqueue,
      {
        method: "POST",
        headers: { ...auth, "content-type": "application/proto" },
        body: Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]),
      },
      "truncated protobuf",
    );
    await send(
      enqueue,
      { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: "{".repeat(100_000) },
      "deeply nested JSON",
    );

    const alive = gateway.child.proc.exitCode === null && gateway.child.proc.signalCode === null;
    const healthz = await fetch(`${gateway.httpUrl}/healthz`).then(
      (r) => r.status,
      () => 0,
    );
    if (serverErrors.length > 0 || !alive) {
      console.log(
        `[faults] hostile input failures:\n${serverErrors.slice(0, 10).join("\n")}\n${gateway.child.output().slice(-3000)}`,
      );
    }
    console.log(
      `[faults] hostile input: ${RUNS} RPC + ${RUNS} REST cases + 3 malformed; answers by HTTP status ${JSON.stringify(Object.fromEntries([...statuses].sort()))}; 20 MiB body ${hugeStatus}; other 5xx/crashes ${serverErrors.length}; undecodable binary answered 400 invalid_argument ${undecodableBinary}; errant writes ${errantWrites.length}; gateway alive ${alive}, healthz ${healthz}`,
    );
    expect(serverErrors).toEqual([]);
    expect(statuses.get(500) ?? 0).toBe(0);
    // At least the truncated protobuf above.
    expect(undecodableBinary).toBeGreaterThan(0);
    expect(errantWrites).toEqual([]);
    expect(alive).toBe(true);
    expect(healthz).toBe(200);
  });
});
