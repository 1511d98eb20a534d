import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorRun } from "../testing/operator-run.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// `--dry-run` on the limit verbs, in process against a real gateway with recorded history: the report
// for people and for scripts, usage errors, the gateway's own refusals, and nothing changed.
describe("taskq queue … --dry-run", () => {
  let gateway: TestGateway;
  const taskq = (...argv: string[]) => operatorRun(argv, { TASKQ_URL: gateway.grpcUrl });
  const sql = <T extends object = Record<string, unknown>>(text: string) =>
    gateway.store.db.query<T>({ name: "", text });
  const state = async () => ({
    queues: await sql("select * from taskq.queues order by name"),
    audit: await sql("select count(*)::int as n from taskq.queue_audit"),
    flowLimits: await sql("select * from taskq.flow_limits"),
  });

  beforeAll(async () => {
    gateway = await startTestGateway();
    // 12 jobs of 1 s each, 5 minutes ago, all at once; every third carries the flow key "acme".
    await sql("select taskq.note_queues(array['mail'])");
    await sql(
      `insert into taskq.jobs (queue, state, payload, max_attempts, attempt, run_at, enqueued_at, started_at,
         finished_at, flow_key)
       select 'mail', 'succeeded', '', 5, 1, t, t, t, t + interval '1 s', case when i % 3 = 0 then 'acme' end
       from (select i, now() - interval '5 min' as t from generate_series(0, 11) i) s`,
    );
  });
  afterAll(async () => {
    await gateway?.stop();
  });

  it("set-concurrency --dry-run prints what the cap would have done, and changes nothing", async () => {
    const before = await state();
    const r = await taskq("queue", "set-concurrency", "mail", "--max-running", "4", "--dry-run");
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^dry run: replaying the last 1 h of mail's jobs/);
    // Three rounds of 4: 8 jobs wait 1 s or 2 s more.
    expect(r.stdout).toMatch(/12 jobs replayed/);
    expect(r.stdout).toMatch(/^max_running\s+-\s+4$/m);
    expect(r.stdout).toMatch(/^peak backlog\s+0\s+8$/m);
    expect(r.stdout).toMatch(/^jobs delayed by 1 s or more:\s+8 of 12$/m);
    expect(r.stdout).toMatch(/^longest extra wait:\s+2 s$/m);
    expect(r.stdout).toMatch(/nothing was changed \(dry run\)/);
    expect(await state()).toEqual(before);
  });

  it("--json prints the response for scripts; the window and the delay threshold are flags", async () => {
    const r = await taskq(
      "queue",
      "set-throttle",
      "mail",
      "--limit",
      "6",
      "--period-ms",
      "60000",
      "--dry-run",
      "--window-seconds",
      "600",
      "--min-delay-ms",
      "20000",
      "--json",
    );
    expect(r.code).toBe(0);
    const res = JSON.parse(r.stdout) as Record<string, unknown>;
    // One claim per 10 s: the 3rd to 12th start 20 s to 110 s later.
    expect(res).toMatchObject({
      queue: "mail",
      jobs: 12,
      minDelayMs: 20_000,
      delayed: 10,
      longestExtraWaitMs: 110_000,
    });
    expect(res.proposed).toMatchObject({ limits: { throttle: { limit: 6, periodMs: 60_000 } } });
  });

  it("ensure --dry-run replays a claim rate; set-flow-limit --dry-run replays one queue's jobs of the key", async () => {
    const before = await state();
    const c = await taskq(
      "queue",
      "ensure",
      "mail",
      "--claim-rate-per-minute",
      "60",
      "--claim-burst",
      "6",
      "--dry-run",
    );
    expect(c.code).toBe(0);
    expect(c.stdout).toMatch(/^claim rate\s+-\s+60\/min, burst 6$/m);
    expect(c.stdout).toMatch(/^jobs delayed by 1 s or more:\s+6 of 12$/m);
    const f = await taskq(
      "queue",
      "set-flow-limit",
      "acme",
      "--rate-per-minute",
      "60",
      "--dry-run",
      "--queue",
      "mail",
    );
    expect(f.code).toBe(0);
    expect(f.stdout).toMatch(/^flow key acme\s+unlimited\s+60\/min, burst 1$/m);
    expect(f.stdout).toMatch(/^jobs delayed by 1 s or more:\s+3 of 12$/m);
    expect(await state()).toEqual(before);
  });

  it("refuses what makes no sense as a dry run (exit 2), and passes on the verb's refusals (exit 1)", async () => {
    const before = await state();
    const usage = [
      [
        ["queue", "set-concurrency", "mail", "--max-running", "4", "--window-seconds", "60"],
        /--window-seconds needs --dry-run/,
      ],
      [
        ["queue", "set-concurrency", "mail", "--max-running", "4", "--dry-run", "--create"],
        /--create changes something/,
      ],
      [["queue", "set-flow-limit", "acme", "--rate-per-minute", "6", "--dry-run"], /--dry-run needs --queue/],
      [
        ["queue", "set-flow-limit", "acme", "--rate-per-minute", "6", "--queue", "mail"],
        /--queue needs --dry-run/,
      ],
    ] as const;
    for (const [argv, message] of usage) {
      const r = await taskq(...argv);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(message);
    }
    const dry = await taskq(
      "queue",
      "set-throttle",
      "mail",
      "--limit",
      "6",
      "--period-ms",
      "999",
      "--dry-run",
    );
    const real = await taskq("queue", "set-throttle", "mail", "--limit", "6", "--period-ms", "999");
    expect(dry.code).toBe(1);
    expect(dry.stderr).toMatch(/period_ms must be from 1000 to 86400000 \(got 999\)/);
    expect(dry.stderr.split("\n").at(-2)).toBe(real.stderr.split("\n").at(-2));
    const window = await taskq(
      "queue",
      "set-concurrency",
      "mail",
      "--max-running",
      "4",
      "--dry-run",
      "--window-seconds",
      "30",
    );
    expect(window.code).toBe(1);
    expect(window.stderr).toMatch(/window_seconds must be from 60 to 86400 \(got 30\)/);
    expect(await state()).toEqual(before);
  });
});
