import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newJob } from "../testing/new-job.js";
import { operatorRun } from "../testing/operator-run.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// `taskq schedule …` and `taskq queue redrive` end to end: the real CLI as a child process against a
// real gateway, each effect checked through the gateway's RPCs.

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const cliPath = fileURLToPath(new URL("../cli.ts", import.meta.url));

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startTestGateway();
});
afterAll(async () => {
  await gateway?.stop();
});

const taskq = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
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
        resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
      },
    );
  });

const admin = () => createClient(AdminService, createTransport({ baseUrl: gateway.grpcUrl }));

describe("taskq schedule (child process)", () => {
  it("create, set-smear as the guide spells it, ls, pause; delete needs --yes; bad cron exits 1 naming the field", async () => {
    const created = await taskq(
      "schedule",
      "create",
      "nightly-report",
      "--cron",
      "0 3 * * *",
      "--time-zone",
      "Europe/Berlin",
      "--queue",
      "reports",
      "--payload",
      '{"kind": "nightly"}',
      "--missed-policy",
      "fire_once",
    );
    expect(created).toMatchObject({ code: 0, stderr: "" });
    expect(created.stdout).toMatch(/^cron:\s+0 3 \* \* \*$/m);
    expect(created.stdout).toMatch(/^next_run_at:\s+\d{4}-\d\d-\d\dT0[12]:00:00\.000Z$/m);

    expect((await taskq("schedule", "set-smear", "nightly-report", "--smear-seconds", "300")).code).toBe(0);
    const got = (await admin().getSchedule({ name: "nightly-report" })).schedule;
    expect(got).toMatchObject({
      queue: "reports",
      timeZone: "Europe/Berlin",
      missedPolicy: "fire_once",
      smearSeconds: 300,
    });
    expect(got?.smearOffsetMs).toBeLessThan(300_000);

    const ls = await taskq("schedule", "ls", "--json");
    expect(JSON.parse(ls.stdout).schedules.map((s: { name: string }) => s.name)).toEqual(["nightly-report"]);
    const table = await taskq("schedule", "ls");
    expect(table.stdout).toMatch(/^NAME\s+CRON\s+TIME_ZONE\s+QUEUE\s+SMEAR/m);
    expect(table.stdout).toMatch(/^nightly-report\s+0 3 \* \* \*\s+Europe\/Berlin\s+reports\s+300s/m);

    const bad = await taskq("schedule", "create", "x", "--cron", "61 * * * *", "--queue", "q");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/invalid_argument: schedule\.cron /);
    expect((await admin().listSchedules({})).schedules).toHaveLength(1);

    expect(await taskq("schedule", "pause", "nightly-report")).toMatchObject({ code: 0 });
    expect((await admin().getSchedule({ name: "nightly-report" })).schedule?.paused).toBe(true);
    const refused = await taskq("schedule", "delete", "nightly-report");
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/without --yes/);
    expect((await taskq("schedule", "delete", "nightly-report", "--yes")).code).toBe(0);
    expect((await admin().listSchedules({})).schedules).toEqual([]);
    const audit = await admin().listQueueAudit({ queue: "schedule:nightly-report" });
    expect(audit.entries.map((e) => e.eventType)).toEqual([
      "schedule.delete",
      "schedule.pause",
      "schedule.set_smear",
      "schedule.create",
    ]);
  });

  it("queue redrive moves failed jobs back, as many as --limit", async () => {
    const store = gateway.store;
    await store.jobsEnqueue(Array.from({ length: 3 }, () => newJob("rq", { maxAttempts: 1 })));
    const claimed = await store.jobsClaim({ queues: ["rq"], limit: 3, leaseMs: 60_000, workerId: "w" });
    await store.jobsSettle(
      claimed.map((c) => ({
        jobId: c.id,
        attempt: c.attempt,
        kind: "failure" as const,
        error: { type: "E", message: "m", retryable: false },
        delayMs: null,
      })),
    );
    const r = await taskq("queue", "redrive", "rq", "--limit", "2", "--smear-seconds", "0");
    expect(r).toMatchObject({ code: 0, stdout: "redrove 2 failed jobs of rq\n" });
    const counters = await admin().queueCounters({ queue: "rq" });
    expect(counters.rows[0]?.queued).toBe(2n);
  });
});

describe("taskq schedule (in process): usage errors exit 2", () => {
  const run = (...argv: string[]) => operatorRun(argv, { TASKQ_URL: "http://127.0.0.1:1" });

  it.each([
    [["schedule", "create", "n", "--queue", "q"], /missing --cron/],
    [["schedule", "create", "n", "--cron", "* * * * *"], /missing --queue/],
    [
      ["schedule", "create", "n", "--cron", "* * * * *", "--queue", "q", "--headers", "[1]"],
      /--headers must be/,
    ],
    [["schedule", "set-smear", "n"], /missing --smear-seconds/],
    [["schedule", "set-smear", "n", "--smear-seconds=-5"], /--smear-seconds must be a whole number/],
    [["schedule", "delete", "n"], /refusing to delete schedule n without --yes/],
    [["queue", "redrive", "q"], /missing --limit/],
  ])("%j exits 2: %s", async (argv, message) => {
    const r = await run(...argv);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it("--help lists the schedule verbs and set-smear's flag", async () => {
    const group = await run("schedule", "--help");
    for (const c of ["ls", "get", "create", "update", "delete", "pause", "resume", "set-smear"]) {
      expect(group.stdout).toMatch(new RegExp(`^  ${c}\\s`, "m"));
    }
    expect((await run("schedule", "set-smear", "--help")).stdout).toMatch(/--smear-seconds N/);
  });
});
