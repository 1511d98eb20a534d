import { mkdtempSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { type ClaimRequest, ClaimRequestSchema, WorkerService } from "@taskq/sdk/proto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { duplex, grpcStubs, seconds, unary } from "../testing/grpc-stubs.js";
import { haveService } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { hashToken, newToken } from "./tokens.js";

// Removing a token from the tokens file ends its calls in progress within a second, with
// UNAUTHENTICATED: parked polls (Claim streams and ClaimOnce), idle streams (Settle, Heartbeat,
// EnqueueStream), a claim already in Postgres and a poll an enqueue took to hand jobs to, whose jobs go
// back instead of to the revoked worker. No job reaches the revoked token once the reload is in force;
// other workers claim them at once. A token that loses a role is refused the same way.

const dir = mkdtempSync(join(tmpdir(), "taskq-revoke-"));
const path = join(dir, "tokens.json");
const tokens = new Map(["alice", "ann", "amy", "carl", "ray", "bob"].map((name) => [name, newToken()]));
const token = (name: string) => tokens.get(name) ?? "";
/** Roles other than worker and producer. */
const roles = new Map<string, string[]>();
/** Replaces the file as a deploy would (write beside it, rename over it), with the tokens left. */
function writeTokens(): void {
  const entries = [...tokens].map(([name, t]) => ({
    name,
    roles: roles.get(name) ?? ["worker", "producer"],
    sha256: hashToken(t),
  }));
  writeFileSync(`${path}.new`, JSON.stringify(entries));
  renameSync(`${path}.new`, path);
}
/** Removes the token from the file; resolves once the gateway refuses new calls with it. */
async function revoke(name: string): Promise<number> {
  const stubs = grpcStubs(gw.grpcUrl, token(name));
  tokens.delete(name);
  const start = Date.now();
  writeTokens();
  try {
    for (;;) {
      const refused = await unary(stubs.admin, "WhoAmI", {}).then(
        () => false,
        (err) => err.code === 16,
      );
      if (refused) return Date.now() - start;
      if (Date.now() - start > 5000) throw new Error(`token ${name} still accepted after 5 s`);
      await sleep(20);
    }
  } finally {
    stubs.close();
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** `p`'s outcome, or "pending" after `ms`. */
const within = <T>(p: Promise<T>, ms: number) => Promise.race([p, sleep(ms).then(() => "pending" as const)]);

const services = haveService("postgres") && haveService("redis");
let gw: TestGateway;
let db: pg.Client;
beforeAll(async () => {
  if (!services) return;
  writeTokens();
  gw = await startTestGateway({ engine: "postgres", config: { tokensFile: path } });
  db = new pg.Client({ connectionString: gw.databaseUrl ?? "" });
  await db.connect();
});
afterAll(async () => {
  await db?.end();
  await gw?.stop();
});

/** A job on `queue` enqueued by bob, a token nobody revokes. */
async function enqueueAsBob(queue: string, payload: string): Promise<string> {
  const bob = grpcStubs(gw.grpcUrl, token("bob"));
  try {
    const res = await unary(bob.producer, "Enqueue", { job: { queue, payload: Buffer.from(payload) } });
    return res.job_id;
  } finally {
    bob.close();
  }
}

/** What bob's ClaimOnce on `queue` gets within 5 s: the job's id and payload. */
async function claimAsBob(queue: string): Promise<{ id: string; payload: string } | undefined> {
  const bob = grpcStubs(gw.grpcUrl, token("bob"));
  try {
    const res = await unary(bob.worker, "ClaimOnce", { queues: [queue], max_jobs: 1, max_wait: seconds(5) });
    const job = res.jobs[0];
    return job && { id: job.id, payload: Buffer.from(job.payload).toString() };
  } finally {
    bob.close();
  }
}

const openStreams = async () =>
  (await gw.metrics.openStreams.get()).values.reduce((sum, v) => sum + v.value, 0);

describe.skipIf(!services)("revoking a token", () => {
  it("ends its parked polls and idle streams within a second with UNAUTHENTICATED, and hands them no job enqueued after", async () => {
    const alice = grpcStubs(gw.grpcUrl, token("alice"));
    try {
      const queue = "revoke-parked";
      const poll = { queues: [queue], max_jobs: 10, max_wait: seconds(30), lease_duration: seconds(60) };
      const claim = duplex(alice.worker, "Claim");
      const received: unknown[] = [];
      const parked = claim.send(poll).then(
        (res) => received.push(res),
        (err) => err,
      );
      const claimOnce = unary(alice.worker, "ClaimOnce", poll).then(
        (res) => received.push(res),
        (err) => err,
      );
      // Idle streams, each answered once before the revocation.
      const settle = duplex(alice.worker, "Settle");
      await settle.send({ settlements: [{ lease: { job_id: "999999", attempt: 1 }, success: {} }] });
      const heartbeat = duplex(alice.worker, "Heartbeat");
      await heartbeat.send({ leases: [{ job_id: "999999", attempt: 1 }] });
      const enqueueStream = duplex(alice.producer, "EnqueueStream");
      await enqueueStream.send({ jobs: [{ queue: "revoke-other", payload: Buffer.from("x") }] });
      await sleep(300); // both polls parked

      const start = Date.now();
      await revoke("alice");
      const [claimErr, onceErr] = await Promise.all([within(parked, 3000), within(claimOnce, 3000)]);
      const ms = Date.now() - start;
      expect(claimErr).toMatchObject({ code: 16, details: "token alice has been revoked" });
      expect(onceErr).toMatchObject({ code: 16, details: "token alice has been revoked" });
      expect(ms).toBeLessThan(2000); // promised within 1 s; the margin is the shared machine's
      for (const stream of [settle, heartbeat, enqueueStream]) {
        expect(await within(stream.status, 1000)).toMatchObject({
          code: 16,
          details: "token alice has been revoked",
        });
      }

      // A job enqueued now goes to no poll of alice's, and a valid worker claims it.
      const id = await enqueueAsBob(queue, "for bob only");
      expect(await claimAsBob(queue)).toEqual({ id, payload: "for bob only" });
      expect(received).toEqual([]);
      // Nothing of alice's is left running in the gateway.
      const deadline = Date.now() + 2000;
      while ((await openStreams()) > 0 && Date.now() < deadline) await sleep(20);
      expect(await openStreams()).toBe(0);
    } finally {
      alice.close();
    }
  });

  it("puts back the jobs of a claim that was in Postgres when the token was revoked, instead of handing them over", async () => {
    const queue = "revoke-in-flight";
    const id = await enqueueAsBob(queue, "claimed while revoked");
    // Hold the queue's row, as a pause would: the claim below waits for it, inside Postgres.
    const holder = new pg.Client({ connectionString: gw.databaseUrl ?? "" });
    await holder.connect();
    const ann = grpcStubs(gw.grpcUrl, token("ann"));
    try {
      await holder.query("select taskq.add_queue($1)", [queue]);
      await holder.query("begin");
      await holder.query("select 1 from taskq.queues where name = $1 for update", [queue]);
      const claim = duplex(ann.worker, "Claim");
      const answer = claim.send({
        queues: [queue],
        max_jobs: 1,
        max_wait: seconds(30),
        lease_duration: seconds(60),
      });
      answer.catch(() => {});
      await waitForLockWaiter();

      await revoke("ann");
      await holder.query("commit"); // the claim takes the job now, for a token revoked meanwhile
      await expect(within(answer, 3000)).rejects.toMatchObject({
        code: 16,
        details: "token ann has been revoked",
      });
      // Back at once, not when its 60 s lease runs out.
      expect(await claimAsBob(queue)).toEqual({ id, payload: "claimed while revoked" });
    } finally {
      await holder.query("rollback").catch(() => {});
      await holder.end();
      ann.close();
    }
  });

  it("ends a poll that an enqueue took to hand a job to, and the job goes back", async () => {
    const queue = "revoke-handed";
    const holder = new pg.Client({ connectionString: gw.databaseUrl ?? "" });
    await holder.connect();
    const carl = grpcStubs(gw.grpcUrl, token("carl"));
    try {
      await holder.query("select taskq.add_queue($1)", [queue]);
      const claim = duplex(carl.worker, "Claim");
      const answer = claim.send({
        queues: [queue],
        max_jobs: 1,
        max_wait: seconds(30),
        lease_duration: seconds(60),
      });
      answer.catch(() => {});
      await sleep(300); // parked
      // The enqueue takes carl's parked poll and claims for it in its own statement, held up here.
      await holder.query("begin");
      await holder.query("select 1 from taskq.queues where name = $1 for update", [queue]);
      const enqueued = enqueueAsBob(queue, "taken for carl");
      await waitForLockWaiter();

      const start = Date.now();
      await revoke("carl");
      await expect(within(answer, 3000)).rejects.toMatchObject({
        code: 16,
        details: "token carl has been revoked",
      });
      expect(Date.now() - start).toBeLessThan(2000);
      await holder.query("commit");
      const id = await enqueued;
      expect(await claimAsBob(queue)).toEqual({ id, payload: "taken for carl" });
    } finally {
      await holder.query("rollback").catch(() => {});
      await holder.end();
      carl.close();
    }
  });

  it("ends a parked poll with PERMISSION_DENIED when its token loses the worker role", async () => {
    const ray = grpcStubs(gw.grpcUrl, token("ray"));
    try {
      const queue = "revoke-role";
      const claim = duplex(ray.worker, "Claim");
      const answer = claim.send({ queues: [queue], max_jobs: 1, max_wait: seconds(30) });
      answer.catch(() => {});
      await sleep(300);
      const start = Date.now();
      roles.set("ray", ["producer"]);
      writeTokens();
      await expect(within(answer, 3000)).rejects.toMatchObject({
        code: 7, // PERMISSION_DENIED
        details: "token ray (producer) may not call WorkerService.Claim: it needs worker",
      });
      expect(Date.now() - start).toBeLessThan(2000);
      const id = await enqueueAsBob(queue, "for a worker");
      expect(await claimAsBob(queue)).toEqual({ id, payload: "for a worker" });
    } finally {
      ray.close();
    }
  });

  it("ends a parked Claim stream of a Connect client (the SDK's transport) the same way", async () => {
    const worker = createClient(WorkerService, createTransport({ baseUrl: gw.grpcUrl, token: token("amy") }));
    const queue = "revoke-connect";
    const stop = new AbortController();
    async function* polls(): AsyncGenerator<ClaimRequest> {
      yield create(ClaimRequestSchema, {
        queues: [queue],
        maxJobs: 1,
        maxWait: { seconds: 30n, nanos: 0 },
      });
      await new Promise((r) => stop.signal.addEventListener("abort", r));
    }
    const received: unknown[] = [];
    const ended = (async () => {
      try {
        for await (const res of worker.claim(polls())) received.push(res);
        return "ended without an error";
      } catch (err) {
        return ConnectError.from(err);
      }
    })();
    try {
      await sleep(300);
      const start = Date.now();
      await revoke("amy");
      const err = await within(ended, 3000);
      expect(Date.now() - start).toBeLessThan(2000);
      expect(err).toMatchObject({ code: Code.Unauthenticated, rawMessage: "token amy has been revoked" });
      const id = await enqueueAsBob(queue, "not amy's");
      expect(await claimAsBob(queue)).toEqual({ id, payload: "not amy's" });
      expect(received).toEqual([]);
    } finally {
      stop.abort();
    }
  });
});

/** Resolves once a statement of the gateway waits for a lock (the claim behind the held row). */
async function waitForLockWaiter(): Promise<void> {
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    const { rows } = await db.query(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
    );
    if (rows[0].n > 0) return;
    await sleep(20);
  }
  throw new Error("no claim waited for the held queue row within 5 s");
}
