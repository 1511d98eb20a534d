import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, BreakerState, JobState, ProducerService, ThrottleSource } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorRun } from "../testing/operator-run.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// End to end: the real CLI as a child process (as an operator runs it) against a real gateway, each
// command's effect checked through the gateway's own RPCs. Child processes take 1–4 s to start under
// tsx, so each test runs a handful, one after another.

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const cliPath = fileURLToPath(new URL("../cli.ts", import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let gateway: TestGateway;

beforeAll(async () => {
  // "fixed" has a throttle from the gateway's config file, which the API must refuse to change.
  gateway = await startTestGateway({
    config: { queues: { fixed: { throttle: { limit: 5, period_ms: 60_000 } } } },
  });
});

afterAll(async () => {
  await gateway?.stop();
});

/** The gateway's clients for checking effects, and `taskq` to run the CLI against it. */
function setup() {
  const transport = createTransport({ baseUrl: gateway.grpcUrl });
  const taskq = (...args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        ["--conditions=taskq-source", "--import", "tsx", cliPath, ...args],
        {
          cwd: repoRoot,
          env: { ...process.env, TASKQ_URL: gateway.grpcUrl, TASKQ_TOKEN: "" },
          timeout: 30_000,
        },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
          resolve({ code, stdout, stderr });
        },
      );
    });
  return {
    taskq,
    admin: createClient(AdminService, transport),
    producer: createClient(ProducerService, transport),
  };
}

describe("taskq queue (child process)", () => {
  it("ensure sets profile keys from --profile and typed flags; null turns one off; pause, resume, concurrency", async () => {
    const { taskq, admin } = setup();

    const ensured = await taskq(
      "queue",
      "ensure",
      "mail",
      "--profile",
      '{"max_running": 8, "claim_rate_per_minute": 60}',
      "--claim-burst",
      "5",
      "--notify-mode",
      "on_idle_transition",
    );
    expect(ensured).toMatchObject({ code: 0, stderr: "" });
    expect(ensured.stdout).toMatch(/^max_running:\s+8$/m);
    let q = (await admin.getQueue({ queue: "mail" })).queue;
    expect(q).toMatchObject({
      maxRunning: 8,
      claimRatePerMinute: 60,
      claimBurst: 5,
      notifyMode: "on_idle_transition",
    });

    const off = await taskq(
      "queue",
      "ensure",
      "mail",
      "--profile",
      '{"claim_rate_per_minute": null, "claim_burst": null}',
      "--default-ttl-seconds",
      "3600",
    );
    expect(off.code).toBe(0);
    q = (await admin.getQueue({ queue: "mail" })).queue;
    expect(q?.claimRatePerMinute).toBeUndefined();
    expect(q?.claimBurst).toBeUndefined();
    expect(q).toMatchObject({ maxRunning: 8, defaultTtlSeconds: 3600 });

    expect(await taskq("queue", "pause", "mail")).toMatchObject({ code: 0, stdout: "paused mail\n" });
    const got = await taskq("queue", "get", "mail", "--json");
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ queue: { name: "mail", paused: true, maxRunning: 8 } });

    expect((await taskq("queue", "resume", "mail")).code).toBe(0);
    expect((await admin.getQueue({ queue: "mail" })).queue?.paused).toBe(false);

    expect((await taskq("queue", "set-concurrency", "mail", "--max-running", "3")).code).toBe(0);
    expect((await admin.getQueue({ queue: "mail" })).queue?.maxRunning).toBe(3);
    expect((await taskq("queue", "set-concurrency", "mail", "--off")).code).toBe(0);
    expect((await admin.getQueue({ queue: "mail" })).queue?.maxRunning).toBeUndefined();
  });

  it("set-throttle shows in ls with its source; unthrottle refuses a config throttle; the gateway's range errors exit 1", async () => {
    const { taskq, admin } = setup();

    expect(
      (await taskq("queue", "set-throttle", "emails", "--limit", "10", "--period-ms", "60000", "--create"))
        .code,
    ).toBe(0);
    const ls = await taskq("queue", "ls", "--json");
    expect(ls.code).toBe(0);
    const queues = JSON.parse(ls.stdout).queues as { name: string; throttle?: object }[];
    expect(queues.find((q) => q.name === "emails")?.throttle).toEqual({
      limit: 10,
      periodMs: 60000,
      source: "THROTTLE_SOURCE_CONSOLE",
    });
    expect(queues.find((q) => q.name === "fixed")?.throttle).toMatchObject({
      source: "THROTTLE_SOURCE_CONFIG",
    });

    await admin.setAdaptiveConcurrency({ queue: "emails", min: 3, max: 40, targetLatencyMs: 500 });
    const table = await taskq("queue", "ls");
    expect(table.stdout).toMatch(/^NAME\s+PAUSED\s+MAX_RUNNING\s+ADAPTIVE\s+THROTTLE\s+SOURCE\s+CLAIM_RATE/m);
    expect(table.stdout).toMatch(/^emails\s+no\s+3\s+3\.\.40\s+10\/60000ms\s+console\s/m);
    expect(table.stdout).toMatch(/^fixed\s+no\s+-\s+-\s+5\/60000ms\s+config\s/m);

    expect((await taskq("queue", "unthrottle", "emails")).code).toBe(0);
    expect((await admin.getQueue({ queue: "emails" })).queue?.throttle).toBeUndefined();

    const refused = await taskq("queue", "unthrottle", "fixed");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/failed_precondition: queue fixed has a throttle from the gateway config/);
    expect((await admin.getQueue({ queue: "fixed" })).queue?.throttle).toMatchObject({
      limit: 5,
      source: ThrottleSource.CONFIG,
    });

    const invalid = await taskq("queue", "set-throttle", "emails", "--limit", "10", "--period-ms", "999");
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/invalid_argument: period_ms must be from 1000 to 86400000/);
    expect((await admin.getQueue({ queue: "emails" })).queue?.throttle).toBeUndefined();

    // From 2^31 up: the CLI's own range check (--limit, exit 2) or the gateway's clear refusal
    // (period_ms, exit 1), each naming the field, never internal.
    const bigLimit = await taskq(
      "queue",
      "set-throttle",
      "emails",
      "--limit",
      "2147483648",
      "--period-ms",
      "60000",
    );
    expect(bigLimit.code).toBe(2);
    expect(bigLimit.stderr).toMatch(/--limit must be a whole number from 1 to 100,000/);
    const bigPeriod = await taskq(
      "queue",
      "set-throttle",
      "emails",
      "--limit",
      "10",
      "--period-ms",
      "2147483648",
    );
    expect(bigPeriod.code).toBe(1);
    expect(bigPeriod.stderr).toMatch(/invalid_argument: period_ms /);
    expect((await admin.getQueue({ queue: "emails" })).queue?.throttle).toBeUndefined();
  });

  it("set-flow-limit, flow-limits and set-aging, with --off", async () => {
    const { taskq, admin } = setup();

    const set = await taskq(
      "queue",
      "set-flow-limit",
      "provider.acme",
      "--rate-per-minute",
      "120",
      "--burst",
      "10",
    );
    expect(set).toMatchObject({ code: 0, stdout: "flow key provider.acme: 120 claims/min, burst 10\n" });
    expect((await admin.listFlowLimits({})).limits).toEqual([
      expect.objectContaining({ flowKey: "provider.acme", ratePerMinute: 120, burst: 10 }),
    ]);
    const listed = await taskq("queue", "flow-limits");
    expect(listed.stdout).toMatch(/^provider\.acme\s+120\s+10$/m);
    expect((await taskq("queue", "set-flow-limit", "provider.acme", "--off")).code).toBe(0);
    expect((await admin.listFlowLimits({})).limits).toEqual([]);

    expect((await taskq("queue", "set-aging", "render", "--aging-seconds", "60", "--create")).code).toBe(0);
    expect((await admin.getQueue({ queue: "render" })).queue?.priorityAgingSeconds).toBe(60);
    expect((await taskq("queue", "set-aging", "render", "--off")).code).toBe(0);
    expect((await admin.getQueue({ queue: "render" })).queue?.priorityAgingSeconds).toBeUndefined();
  });

  it("the breaker verbs, as the flow-control guide spells them", async () => {
    const { taskq, admin } = setup();
    const breaker = async () => (await admin.getQueue({ queue: "mail" })).queue?.breaker;
    const ok = async (line: string) => {
      const r = await taskq(...line.split(" ").slice(1));
      expect(r, line).toMatchObject({ code: 0, stderr: "" });
      return r;
    };

    const set = await ok(
      "taskq queue set-breaker mail --failure-threshold 5 --cooldown-seconds 30 --half-open-successes 1",
    );
    expect(set.stdout).toMatch(/^breaker:\s+closed$/m);
    expect(await breaker()).toMatchObject({
      failureThreshold: 5,
      cooldownSeconds: 30,
      halfOpenSuccesses: 1,
      state: BreakerState.CLOSED,
    });
    await ok("taskq queue set-breaker-rate mail --failure-ratio 0.5 --window-seconds 60 --min-volume 20");
    expect((await breaker())?.rate).toMatchObject({ failureRatio: 0.5, windowSeconds: 60, minVolume: 20 });
    await ok("taskq queue set-breaker-rate mail --off");
    expect((await breaker())?.rate).toBeUndefined();
    await ok("taskq queue set-breaker-latency mail --threshold-ms 2000 --window-seconds 60 --min-volume 10");
    expect((await breaker())?.latency).toMatchObject({ thresholdMs: 2000, windowSeconds: 60, minVolume: 10 });
    await ok("taskq queue set-breaker-latency mail --off");
    expect((await breaker())?.latency).toBeUndefined();
    const tripped = await ok("taskq queue trip-breaker mail");
    expect(tripped.stdout).toMatch(/^breaker:\s+open$/m);
    expect((await breaker())?.state).toBe(BreakerState.OPEN);
    await ok("taskq queue close-breaker mail");
    expect((await breaker())?.state).toBe(BreakerState.CLOSED);
    await ok("taskq queue set-breaker mail --off");
    expect(await breaker()).toBeUndefined();

    const badRatio = await taskq(
      "queue",
      "set-breaker-rate",
      "mail",
      "--failure-ratio",
      "1.5",
      "--window-seconds",
      "60",
      "--min-volume",
      "20",
    );
    expect(badRatio.code).toBe(1);
    expect(badRatio.stderr).toMatch(/invalid_argument: (breaker|failure_ratio) /);
    const both = await taskq("queue", "set-breaker", "mail", "--off", "--cooldown-seconds", "30");
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--off takes no other flags/);
  });

  it("bad command lines exit 2 naming the flag, and change nothing", async () => {
    const { taskq, admin } = setup();
    await admin.ensureQueue({ queue: "strict", profile: { max_running: 4 } });

    const bad = await taskq("queue", "set-concurrency", "strict", "--max-running", "lots");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--max-running must be a whole number/);
    const unknown = await taskq("queue", "pause", "strict", "--bogus");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--bogus/);
    expect((await admin.getQueue({ queue: "strict" })).queue).toMatchObject({ maxRunning: 4, paused: false });
  });
});

describe("taskq enqueue, job and queue clear (child process)", () => {
  it("enqueue prints the id; job get/cancel; clear needs --yes and reports the count", async () => {
    const { taskq, producer } = setup();

    const enq = await taskq(
      "enqueue",
      "jobsq",
      "--payload",
      '{"to":"a@example.com"}',
      "--priority",
      "5",
      "--flow-key",
      "provider.acme",
      "--max-attempts",
      "3",
      "--idempotency-key",
      "k1",
    );
    expect(enq.code).toBe(0);
    const id = enq.stdout.trim();
    expect(id).toMatch(/^\d+$/);
    const job = (await producer.getJob({ jobId: id })).job;
    expect(job).toMatchObject({ queue: "jobsq", priority: 5, flowKey: "provider.acme", maxAttempts: 3 });
    expect(job?.contentType).toBe("application/json");
    expect(new TextDecoder().decode(job?.payload)).toBe('{"to":"a@example.com"}');
    const waiting = (await producer.enqueue({ job: { queue: "jobsq" } })).jobId;

    const refused = await taskq("queue", "clear", "jobsq");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/without --yes/);
    expect((await producer.getJob({ jobId: waiting })).job?.state).toBe(JobState.QUEUED);

    const cancelled = await taskq("job", "cancel", id, "--reason", "not needed");
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toMatch(/^state:\s+cancelled$/m);
    expect((await producer.getJob({ jobId: id })).job?.state).toBe(JobState.CANCELLED);

    const cleared = await taskq("queue", "clear", "jobsq", "--yes");
    expect(cleared).toMatchObject({ code: 0, stdout: "cleared 1 waiting job from jobsq\n" });
    await expect(producer.getJob({ jobId: waiting })).rejects.toSatisfy(
      (e) => e instanceof ConnectError && e.code === Code.NotFound,
    );

    const shown = await taskq("job", "get", id, "--json");
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      job: { id, state: "JOB_STATE_CANCELLED", priority: 5 },
    });
    const missing = await taskq("job", "get", "999999");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/not_found: job 999999 not found/);
  });
});

describe("taskq queue audit/health/counters/flow and maintenance prune-audit (child process)", () => {
  it("audit pages newest first as the guide spells it; prune-audit needs --yes and reports the count", async () => {
    const { taskq, admin } = setup();
    for (let i = 1; i <= 51; i++) await admin.setPriorityAging({ queue: "mail", agingSeconds: i });
    const all = (await admin.listQueueAudit({ queue: "mail", limit: 1000 })).entries;
    expect(all.length).toBeGreaterThan(50);

    const page = await taskq("queue", "audit", "mail");
    expect(page).toMatchObject({ code: 0, stderr: "" });
    const lines = page.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+AT\s+EVENT\s+ACTOR\s+CHANGE$/);
    expect(lines[1]).toMatch(
      new RegExp(`^${all[0]?.id}\\s+\\S+Z\\s+queue\\.set_aging\\s+\\S+\\s+priority_aging_seconds: 50 -> 51$`),
    );
    expect(lines).toHaveLength(52);
    expect(lines[51]).toBe(`next page: taskq queue audit mail --before-id ${all[49]?.id}`);

    const seed = await taskq("queue", "audit", "mail", "--before-id", "1234", "--json");
    expect(seed.code).toBe(0);
    const seedIds = (JSON.parse(seed.stdout).entries as { id: string }[]).map((e) => e.id);
    expect(seedIds).toEqual(
      all
        .filter((e) => e.id < 1234n)
        .slice(0, 50)
        .map((e) => String(e.id)),
    );

    const next = await taskq("queue", "audit", "mail", "--before-id", String(all[9]?.id), "--json");
    expect(next.code).toBe(0);
    const nextEntries = JSON.parse(next.stdout).entries as { id: string; eventType: string }[];
    expect(nextEntries[0]).toMatchObject({ id: String(all[10]?.id), eventType: all[10]?.eventType });

    const refused = await taskq("maintenance", "prune-audit", "--older-than-hours", "2160");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/refusing to prune the audit log without --yes/);
    const pruned = await taskq("maintenance", "prune-audit", "--older-than-hours", "2160", "--yes");
    expect(pruned).toMatchObject({
      code: 0,
      stderr: "",
      stdout: "removed 0 audit entries older than 2160 hours\n",
    });
    expect((await admin.listQueueAudit({ queue: "mail", limit: 1000 })).entries).toHaveLength(all.length);
    const zero = await taskq("maintenance", "prune-audit", "--older-than-hours", "0", "--yes");
    expect(zero.code).toBe(1);
    expect(zero.stderr).toMatch(/invalid_argument: older_than_hours must be from 1/);
  });

  it("health, counters and flow: tables, one queue or all, and --json", async () => {
    const { taskq, admin, producer } = setup();
    await producer.enqueue({ job: { queue: "watched", payload: new Uint8Array(0) } });
    await admin.setBreakerConfig({ queue: "watched", failureThreshold: 3, cooldownSeconds: 60 });
    await admin.tripBreaker({ queue: "watched" });

    const health = await taskq("queue", "health");
    expect(health).toMatchObject({ code: 0, stderr: "" });
    expect(health.stdout).toMatch(
      /^QUEUE\s+VERDICT\s+QUEUED\s+SCHEDULED\s+RUNNING\s+OLDEST_READY\s+BREAKER$/m,
    );
    expect(health.stdout).toMatch(/^watched\s+breaker_open\s+1\s+0\s+0\s+\S+s\s+open until \S+$/m);
    expect(health.stdout).toMatch(/^mail\s/m);
    const one = await taskq("queue", "health", "watched", "--json");
    expect(JSON.parse(one.stdout)).toEqual({
      rows: [
        expect.objectContaining({
          queue: "watched",
          verdict: "breaker_open",
          detail: expect.objectContaining({ levels: { queued: 1, scheduled: 0, running: 0 } }),
        }),
      ],
    });

    const counters = await taskq("queue", "counters", "watched");
    expect(counters).toMatchObject({ code: 0, stderr: "" });
    expect(counters.stdout).toMatch(
      /^QUEUE\s+QUEUED\s+SCHEDULED\s+RUNNING\s+SUCCEEDED_1M\s+FAILED_1M\s+SUCCEEDED_1H\s+FAILED_1H\s+OLDEST_READY\s+THROTTLED_1H$/m,
    );
    expect(counters.stdout).toMatch(/^watched\s+1\s+0\s+0\s+0\s+0\s+0\s+0\s+\S+s\s+-$/m);
    const all = await taskq("queue", "counters", "--json");
    expect((JSON.parse(all.stdout).rows as { queue: string }[]).map((r) => r.queue)).toContain("watched");

    const flow = await taskq("queue", "flow", "watched");
    expect(flow).toMatchObject({ code: 0, stderr: "" });
    expect(flow.stdout).toMatch(/^breaker_state:\s+open$/m);
    expect(flow.stdout).toMatch(/^breaker_opened_total:\s+1$/m);
    expect(flow.stdout).toMatch(/^breaker_tripped_at:\s+\S+Z$/m);
    const table = await taskq("queue", "flow");
    expect(table.stdout).toMatch(/^QUEUE\s+PAUSED\s+BREAKER_STATE\s/m);
    expect(table.stdout).toMatch(/^watched\s+no\s+open\s+0\s+1\s/m);
    const missing = await taskq("queue", "flow", "never-configured");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/not_found/);
  });
});

describe("runOperator (in process): help and usage errors need no gateway", () => {
  const run = (...argv: string[]) => operatorRun(argv, { TASKQ_URL: "http://127.0.0.1:1" });

  it("--help lists a group's commands and a command's flags, exit 0", async () => {
    const group = await run("queue", "--help");
    expect(group.code).toBe(0);
    for (const c of ["ls", "ensure", "clear", "set-throttle", "unthrottle", "set-flow-limit", "set-aging"]) {
      expect(group.stdout).toMatch(new RegExp(`^  ${c}\\s`, "m"));
    }
    const cmd = await run("queue", "set-throttle", "--help");
    expect(cmd).toMatchObject({ code: 0, stderr: "" });
    expect(cmd.stdout).toMatch(/Usage: taskq queue set-throttle <queue> \[flags\]/);
    expect(cmd.stdout).toMatch(/--period-ms N/);
    expect((await run("enqueue", "--help")).stdout).toMatch(/--idempotency-key KEY/);
  });

  it.each([
    [["queue"], /missing command/],
    [["queue", "frobnicate"], /unknown command "frobnicate"/],
    [["queue", "get"], /missing argument <queue>/],
    [["queue", "get", "a", "b"], /unexpected argument "b"/],
    [["queue", "set-throttle", "q", "--limit", "5"], /missing --period-ms/],
    [["queue", "set-throttle", "q", "--limit", "-1", "--period-ms", "1000"], /--limit/],
    [["queue", "set-throttle", "q", "--limit=1.5", "--period-ms", "1000"], /--limit must be a whole number/],
    [["queue", "set-concurrency", "q"], /exactly one of --max-running and --off/],
    [
      ["queue", "set-concurrency", "q", "--max-running", "2", "--off"],
      /exactly one of --max-running and --off/,
    ],
    [["queue", "set-aging", "q"], /exactly one of --aging-seconds and --off/],
    [["queue", "set-flow-limit", "k", "--off", "--burst", "3"], /--burst/],
    [["queue", "ensure", "q", "--profile", "[1]"], /--profile must be a JSON object/],
    [["queue", "ensure", "q", "--profile", "{nope"], /--profile is not valid JSON/],
    [["queue", "clear", "q"], /refusing to clear q without --yes/],
    [["queue", "audit"], /missing argument <queue>/],
    [["queue", "audit", "mail", "--before-id", "x"], /--before-id must be an audit entry id/],
    [["queue", "health", "a", "b"], /unexpected argument "b"/],
    [
      ["maintenance", "prune-audit", "--older-than-hours", "2160"],
      /refusing to prune the audit log without --yes/,
    ],
    [["maintenance", "prune-audit", "--yes"], /missing --older-than-hours/],
    [["enqueue", "q", "--priority", "high"], /--priority must be a whole number/],
    [["enqueue", "q", "--delay-ms"], /--delay-ms/],
    [["job", "cancel", "1", "--why"], /Unknown option '--why'/],
  ])("%j exits 2: %s", async (argv, message) => {
    const r = await run(...argv);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(message);
  });

  it("an unreachable gateway exits 1 naming the address", async () => {
    const r = await run("queue", "ls");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/taskq queue ls: unavailable: .*\(gateway http:\/\/127\.0\.0\.1:1\)/);
  });
});
