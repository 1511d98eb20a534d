import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Role } from "./auth/roles.js";
import { hashToken, newToken } from "./auth/tokens.js";
import { newJob } from "./testing/new-job.js";
import { startTestGateway, type TestGateway } from "./testing/test-gateway.js";

describe("REST routes of the console API", () => {
  let gw: TestGateway;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gw.httpUrl}/api/v1/queues/${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return {
      status: res.status,
      body: (await res.json()) as Record<string, unknown> & { error?: { message: string } },
    };
  };
  const audit = async (queue: string) =>
    (
      await gw.store.db.query<{ event_type: string }>(
        {
          name: "",
          text: "select event_type from taskq.queue_audit where queue = $1 order by id",
        },
        [queue],
      )
    ).map((r) => r.event_type);

  beforeAll(async () => {
    gw = await startTestGateway({
      config: { queues: { "from-config": { throttle: { limit: 5, period_ms: 60_000 } } } },
    });
    // Queues the tests act on exist (a verb refuses a queue never seen), with no audit rows yet.
    await gw.store.db.query({ name: "", text: "insert into taskq.queues (name) select unnest($1::text[])" }, [
      ["emails", "long-gone", "work", "capped"],
    ]);
  });
  afterAll(() => gw.stop());

  it.each([
    [{ limit: 0, period_ms: 60_000 }, "limit"],
    [{ limit: 100_001, period_ms: 60_000 }, "limit"],
    [{ limit: 10, period_ms: 999 }, "period_ms"],
    [{ limit: 10, period_ms: 86_400_001 }, "period_ms"],
    [{ period_ms: 1000 }, "limit"],
    [{ limit: 10 }, "period_ms"],
  ])("PUT throttle %j -> 400 naming %s, nothing written", async (body, field) => {
    const r = await call("PUT", "emails/throttle", body);
    expect(r.status).toBe(400);
    expect(r.body.error?.message.startsWith(`${field} `)).toBe(true);
    expect(await audit("emails")).toEqual([]);
  });

  it("sets and removes a throttle, audited as queue.throttle / queue.unthrottle", async () => {
    const set = await call("PUT", "emails/throttle", { limit: 10, period_ms: 60_000 });
    expect(set).toMatchObject({
      status: 200,
      body: { settings: { throttle: { limit: 10, period_ms: 60_000, source: "console" } } },
    });
    const del = await call("DELETE", "emails/throttle");
    expect(del).toMatchObject({ status: 200, body: { settings: { throttle: null } } });
    expect(await audit("emails")).toEqual(["queue.throttle", "queue.unthrottle"]);
  });

  it("refuses to change a config-sourced throttle with 409", async () => {
    const put = await call("PUT", "from-config/throttle", { limit: 1, period_ms: 1000 });
    expect(put.status).toBe(409);
    expect(put.body.error?.message).toContain("config");
    expect((await call("DELETE", "from-config/throttle")).status).toBe(409);
  });

  it("removes a throttle of a queue no worker serves any more", async () => {
    expect((await call("DELETE", "long-gone/throttle")).status).toBe(200);
  });

  it("pauses, resumes, sets concurrency and clears waiting jobs", async () => {
    expect((await call("POST", "work/pause")).body).toMatchObject({ settings: { paused: true } });
    expect((await call("POST", "work/resume")).body).toMatchObject({ settings: { paused: false } });
    expect((await call("PUT", "work/concurrency", { concurrency: 8 })).body).toMatchObject({
      settings: { max_running: 8 },
    });
    expect((await call("PUT", "work/concurrency", { concurrency: 0 })).status).toBe(400);
    await gw.store.jobsEnqueue(Array.from({ length: 3 }, () => newJob("work", { maxAttempts: 1 })));
    expect((await call("POST", "work/clear")).body).toMatchObject({ cleared: 3 });
    expect(await audit("work")).toEqual(["queue.pause", "queue.resume", "queue.concurrency", "queue.clear"]);
  });

  it("answers 404 naming a queue never seen, and creates nothing", async () => {
    for (const [method, action, body] of [
      ["POST", "pause"],
      ["POST", "resume"],
      ["POST", "clear"],
      ["PUT", "concurrency", { concurrency: 2 }],
      ["PUT", "throttle", { limit: 1, period_ms: 1000 }],
      ["DELETE", "throttle"],
    ] as const) {
      expect(await call(method, `mial/${action}`, body)).toEqual({
        status: 404,
        body: {
          error: {
            code: "not_found",
            message: "queue mial not found (no jobs, no settings): ensure_queue creates it",
          },
        },
      });
    }
    expect(await audit("mial")).toEqual([]);
    expect(
      (await gw.store.db.query({ name: "", text: "select name from taskq.queues where name = 'mial'" }))
        .length,
    ).toBe(0);
  });

  it("removes the cap with concurrency: null, like max_running: null", async () => {
    const put = (body: unknown) => call("PUT", "capped/concurrency", body);
    expect((await put({ concurrency: 4 })).body).toMatchObject({ settings: { max_running: 4 } });
    expect(await put({ concurrency: null })).toMatchObject({
      status: 200,
      body: { settings: { max_running: null } },
    });
    expect((await put({ max_running: 6 })).body).toMatchObject({ settings: { max_running: 6 } });
    expect(await put({ max_running: null })).toMatchObject({
      status: 200,
      body: { settings: { max_running: null } },
    });
    expect((await put({})).status).toBe(400);
  });

  // Regression: both threw inside the request handler and took the gateway down (found by fuzzing).
  it("refuses a request target that is no URL and a name that is bad percent-encoding, and stays up", async () => {
    expect((await fetch(`${gw.httpUrl}//4r%3E`)).status).toBe(400);
    const bad = await call("POST", "%E0%A4%A/pause");
    expect(bad).toEqual({
      status: 400,
      body: { error: { code: "invalid_argument", message: "queue name: bad percent-encoding" } },
    });
    expect((await fetch(`${gw.httpUrl}/healthz`)).status).toBe(200);
  });

  it("GET /api/v1/queues lists every known queue, GET /api/v1/queues/:name one, as queue ls and queue get", async () => {
    await gw.store.jobsEnqueue([newJob("only-enqueued")]);
    const list = await fetch(`${gw.httpUrl}/api/v1/queues`);
    expect(list.status).toBe(200);
    const { queues } = (await list.json()) as { queues: { queue: string; settings: unknown }[] };
    const names = queues.map((q) => q.queue);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(["emails", "from-config", "only-enqueued", "work"]));
    // The same settings the verbs answer with; a queue only enqueued to has every gate off.
    expect(queues.find((q) => q.queue === "from-config")?.settings).toMatchObject({
      paused: false,
      throttle: { limit: 5, period_ms: 60_000, source: "config" },
    });
    const one = await call("GET", "only-enqueued");
    expect(one).toEqual({
      status: 200,
      body: { queue: "only-enqueued", settings: queues.find((q) => q.queue === "only-enqueued")?.settings },
    });
    expect(one.body.settings).toMatchObject({
      paused: false,
      max_running: null,
      throttle: null,
      breaker: null,
    });
  });

  it("GET of a queue never seen is 404 in the REST error shape; other methods are 405", async () => {
    expect(await call("GET", "mial")).toEqual({
      status: 404,
      body: {
        error: { code: "not_found", message: "queue mial not found (never enqueued to, no settings)" },
      },
    });
    expect((await call("GET", "bad%20name")).body.error?.message).toMatch(/^name /);
    expect((await fetch(`${gw.httpUrl}/api/v1/queues`, { method: "POST" })).status).toBe(405);
    expect((await call("DELETE", "work")).status).toBe(405);
  });

  it("reads need a reader's token and writes an operator's, as the AdminService procedures do", async () => {
    const token = (name: string, role: Role) => {
      const secret = newToken();
      return { secret, entry: { name, roles: [role], queues: null, sha256: hashToken(secret) } };
    };
    const observer = token("grafana", "observer");
    const worker = token("mailer", "worker");
    const guarded = await startTestGateway({ config: { tokens: [observer.entry, worker.entry] } });
    try {
      const as = (secret: string | null, path: string, method = "GET") =>
        fetch(`${guarded.httpUrl}/api/v1/queues${path}`, {
          method,
          headers: secret ? { authorization: `Bearer ${secret}` } : {},
        });
      await guarded.store.jobsEnqueue([newJob("mail")]);
      expect((await as(null, "")).status).toBe(401);
      expect((await as(observer.secret, "")).status).toBe(200);
      expect((await as(observer.secret, "/mail")).status).toBe(200);
      expect((await as(worker.secret, "")).status).toBe(403);
      expect(await (await as(worker.secret, "/mail")).json()).toMatchObject({
        error: { code: "permission_denied" },
      });
      expect((await as(observer.secret, "/mail/pause", "POST")).status).toBe(403);
    } finally {
      await guarded.stop();
    }
  });

  it.each([
    [
      "throttle",
      { limit: "10", period_ms: 60_000 },
      'limit must be a number, not a string (got "10"): send 10 without quotes',
    ],
    ["throttle", { limit: 10, period_ms: "1m" }, 'period_ms must be a number, not a string (got "1m")'],
    ["throttle", { limit: true, period_ms: 60_000 }, "limit must be a whole number, not a boolean"],
    ["throttle", { limit: 10, period_ms: null }, "period_ms must be a whole number, not null"],
    ["throttle", { limit: 1.5, period_ms: 60_000 }, "limit must be a whole number (got 1.5)"],
    ["throttle", { limit: [10], period_ms: 60_000 }, "limit must be a whole number, not an array"],
    ["throttle", { period_ms: 60_000 }, "limit is required (a whole number)"],
    [
      "concurrency",
      { concurrency: "8" },
      'concurrency must be a number, not a string (got "8"): send 8 without quotes',
    ],
    [
      "concurrency",
      { max_running: { n: 8 } },
      "max_running must be a whole number from 1 to 1000000, or null to remove the cap, not an object",
    ],
  ])("PUT %s %j: a value of the wrong JSON type is named as such", async (action, body, message) => {
    expect(await call("PUT", `capped/${action}`, body)).toEqual({
      status: 400,
      body: { error: { code: "invalid_argument", message } },
    });
  });

  it("answers bad methods, names and bodies with clear JSON errors", async () => {
    expect((await call("GET", "work/pause")).status).toBe(405);
    expect((await call("POST", "bad%20name/pause")).body.error?.message).toMatch(/^name /);
    const res = await fetch(`${gw.httpUrl}/api/v1/queues/work/throttle`, { method: "PUT", body: "{oops" });
    expect(res.status).toBe(400);
  });
});
