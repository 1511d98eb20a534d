import { mkdirSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, JobState, ProducerService, ThrottleReason, WorkerService } from "@taskq/sdk/proto";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken, newToken } from "../auth/tokens.js";
import { QueueStore } from "../store/queue-store.js";
import { ARTIFACTS, CHROMIUM, haveChromium, soon, text } from "../testing/console-browser.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// The console end to end in Debian's headless Chromium: everything a person does through the page,
// checked both on the page and where it lands (a worker's verdict, the audit log).

const secret = { alice: newToken(), watcher: newToken(), worker: newToken() };
const tokens = [
  { name: "ops-alice", roles: ["operator" as const], queues: null, sha256: hashToken(secret.alice) },
  { name: "watcher", roles: ["observer" as const], queues: null, sha256: hashToken(secret.watcher) },
  { name: "worker-bob", roles: ["worker" as const], queues: null, sha256: hashToken(secret.worker) },
];

describe.runIf(haveChromium())("the web console in Chromium", () => {
  let gw: TestGateway;
  /** A dev gateway without tokens, started alongside. */
  let open: TestGateway;
  let browser: Browser;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    [gw, open, browser] = await Promise.all([
      startTestGateway({
        config: { tokens, queues: { fixed: { throttle: { limit: 5, period_ms: 60_000 } } } },
      }),
      startTestGateway(),
      chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] }),
    ]);
    const producer = createClient(
      ProducerService,
      createTransport({ baseUrl: gw.grpcUrl, token: secret.alice }),
    );
    for (let i = 0; i < 3; i++) await producer.enqueue({ job: { queue: "emails" } });
    // Three reports that failed for good, for the jobs list, the job page and redrive.
    for (let i = 1; i <= 3; i++) {
      const payload = new TextEncoder().encode(JSON.stringify({ report: i }));
      await producer.enqueue({
        job: { queue: "reports", payload, contentType: "application/json", maxAttempts: 1 },
      });
    }
    const claimed = await gw.store.jobsClaim({
      queues: ["reports"],
      limit: 3,
      leaseMs: 60_000,
      workerId: "w",
    });
    await gw.store.jobsSettle(
      claimed.map((c) => ({
        jobId: c.id,
        attempt: c.attempt,
        kind: "failure" as const,
        error: { type: "ReportError", message: "renderer down", retryable: false },
        delayMs: null,
      })),
    );
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([gw?.stop(), open?.stop()]);
  });

  /** A fresh tab (its own sessionStorage) signed in with `token`. */
  async function signIn(token: string, before?: (page: Page) => void): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    page.setDefaultTimeout(10_000);
    before?.(page);
    await page.goto(`${gw.httpUrl}/`);
    await page.getByLabel("Bearer token").fill(token);
    await page.getByRole("button", { name: "Sign in" }).click();
    return page;
  }
  const row = (page: Page, queue: string) => page.locator(`tr[data-queue="${queue}"]`);
  const cell = (page: Page, queue: string, column: number) => row(page, queue).locator("td").nth(column);
  const COL = { verdict: 0, queued: 1, running: 3, throttled: 6, throttle: 8 } as const;

  it("lets an operator pause, throttle, cap and clear a queue, each audited as the token's name", async () => {
    const page = await signIn(secret.alice);
    await page.getByText("Signed in as ops-alice (operator)").waitFor();
    await expect.poll(() => text(cell(page, "emails", COL.queued)), soon).toMatch(/^3/);
    await expect.poll(() => text(cell(page, "fixed", COL.throttle)), soon).toBe("5 / 1 min config");
    await page.screenshot({ path: new URL("queues-operator.png", ARTIFACTS).pathname, fullPage: true });

    // Pause: the page shows it, and a worker polling the queue gets PAUSED (no worker polled emails
    // before, so the gateway reads its settings fresh).
    await page.getByRole("button", { name: "Pause emails" }).click();
    await expect.poll(() => text(cell(page, "emails", COL.verdict)), soon).toBe("paused");
    const worker = createClient(
      WorkerService,
      createTransport({ baseUrl: gw.grpcUrl, token: secret.worker }),
    );
    const poll = await worker.claimOnce({ queues: ["emails"], maxJobs: 1 });
    expect(poll.jobs).toEqual([]);
    expect(poll.throttled.map((t) => [t.queue, ThrottleReason[t.reason]])).toEqual([["emails", "PAUSED"]]);

    // Throttle: set, then remove.
    await page.getByRole("button", { name: "Throttle of emails" }).click();
    await page.getByLabel("Claims (1 to 100,000)").fill("10");
    await page.getByLabel("Per seconds (1 to 86,400)").fill("60");
    await page.getByRole("button", { name: "Set throttle" }).click();
    await expect.poll(() => text(cell(page, "emails", COL.throttle)), soon).toBe("10 / 1 min console");
    await page.getByRole("button", { name: "Throttle of emails" }).click();
    await page.getByRole("button", { name: "Remove throttle" }).click();
    await expect.poll(() => text(cell(page, "emails", COL.throttle)), soon).toBe("—");

    // A config throttle: the dialog says why, and the API's 409 is shown explained.
    await page.getByRole("button", { name: "Throttle of fixed" }).click();
    await expect.poll(() => text(page.locator("#config-throttle-notice")), soon).toContain("change it there");
    await page.getByRole("button", { name: "Set throttle" }).click();
    await expect
      .poll(() => text(page.getByRole("alert")), soon)
      .toMatch(
        /^Refused \(409 failed_precondition\): queue fixed has a throttle from the gateway config.*config file owns this setting/,
      );
    await page.screenshot({ path: new URL("config-throttle-409.png", ARTIFACTS).pathname });
    await page.getByRole("button", { name: "Cancel" }).click();
    await expect.poll(() => text(cell(page, "fixed", COL.throttle)), soon).toBe("5 / 1 min config");

    // Concurrency, resume, then clear after a confirmation naming the count.
    await page.getByRole("button", { name: "Concurrency cap of emails" }).click();
    await page.getByLabel("Max running jobs (1 to 1,000,000)").fill("4");
    await page.getByRole("button", { name: "Set cap" }).click();
    await expect.poll(() => text(cell(page, "emails", COL.running)), soon).toBe("0 / 4");
    await page.getByRole("button", { name: "Resume emails" }).click();
    await page.getByRole("button", { name: "Pause emails" }).waitFor();
    await page.getByRole("button", { name: "Clear emails" }).click();
    await expect
      .poll(() => text(page.getByRole("dialog")), soon)
      .toContain("This deletes the 3 waiting jobs of emails");
    await page.getByRole("button", { name: "Delete 3 waiting jobs" }).click();
    await expect
      .poll(() => text(page.getByRole("status")), soon)
      .toBe("Cleared emails: 3 waiting jobs deleted.");
    await expect.poll(() => text(cell(page, "emails", COL.queued)), soon).toBe("0");

    const admin = createClient(AdminService, createTransport({ baseUrl: gw.grpcUrl, token: secret.alice }));
    const audit = await admin.listQueueAudit({ queue: "emails" });
    expect(audit.entries.map((e) => [e.eventType, e.actor]).reverse()).toEqual([
      ["queue.pause", "ops-alice"],
      ["queue.throttle", "ops-alice"],
      ["queue.unthrottle", "ops-alice"],
      ["queue.concurrency", "ops-alice"],
      ["queue.resume", "ops-alice"],
      ["queue.clear", "ops-alice"],
    ]);
    // The refused change to the config throttle wrote nothing: only the config's own rows.
    const fixed = await admin.listQueueAudit({ queue: "fixed" });
    expect(fixed.entries.map((e) => [e.eventType, e.actor]).reverse()).toEqual([
      ["queue.ensure", "config"],
      ["queue.throttle", "config"],
    ]);

    // The queue's own page: its flow state, live charts and the same audit log, newest first.
    await page.getByRole("link", { name: "emails" }).click();
    await page.getByRole("heading", { name: "emails" }).waitFor();
    await expect.poll(() => text(page.locator(".flow-state")), soon).toContain("Max running4");
    await expect.poll(() => page.locator("table.audit tbody tr").count(), soon).toBe(6);
    expect(await page.locator("table.audit tbody tr").first().locator("td").allTextContents()).toEqual([
      expect.any(String),
      "ops-alice",
      "queue.clear",
      "waiting: 3 → 0",
    ]);
    expect(
      await page.getByRole("img", { name: /^Running vs max, latest: running 0 jobs, max 4 jobs/ }).count(),
    ).toBe(1);
    await page.screenshot({ path: new URL("queue-operator.png", ARTIFACTS).pathname, fullPage: true });
  });

  it("lists a queue's jobs by state, opens a job, and redrives the failed ones with a smear", async () => {
    // A breaker tripped and closed by hand, for the breaker events.
    const admin = createClient(AdminService, createTransport({ baseUrl: gw.grpcUrl, token: secret.alice }));
    await admin.setBreakerConfig({ queue: "reports", failureThreshold: 5, cooldownSeconds: 60 });
    await admin.tripBreaker({ queue: "reports" });
    await admin.closeBreaker({ queue: "reports" });
    const page = await signIn(secret.alice);
    await page.getByText("Signed in as ops-alice (operator)").waitFor();
    await page.goto(`${gw.httpUrl}/console/#/queue/reports`);
    await page.getByRole("heading", { name: "reports" }).waitFor();
    await expect.poll(() => text(page.locator("#jobs-total")), soon).toBe("0 queued jobs");
    await page.getByRole("group", { name: "Job state" }).getByRole("button", { name: "failed" }).click();
    await expect.poll(() => text(page.locator("#jobs-total")), soon).toBe("3 failed jobs");
    const rows = page.locator("table.jobs tbody tr");
    expect(await rows.count()).toBe(3);
    expect(await rows.first().locator("td").nth(6).textContent()).toBe("ReportError: renderer down");
    const breakerRows = () =>
      page
        .locator("table.breaker-events tbody tr")
        .evaluateAll((trs) =>
          trs.map((tr) => [...tr.querySelectorAll("td")].slice(1, 4).map((td) => td.textContent)),
        );
    await expect.poll(breakerRows, soon).toEqual([
      ["closed by hand", "", "ops-alice"],
      ["tripped by hand", "", "ops-alice"],
    ]);
    expect(
      await page.getByRole("img", { name: /^Claims per second, last full minute: claims\/s / }).count(),
    ).toBe(1);
    expect(await page.getByRole("img", { name: /^Settled per minute, last full minute: / }).count()).toBe(1);
    // The three failures finished in one minute: its run time is a dot per line, between gaps.
    expect(
      await page
        .getByRole("img", { name: /^Run time, last full minute: / })
        .locator("circle.dot")
        .count(),
    ).toBe(2);
    // Every chart has a time axis of clock times and a value axis from 0, each label inside the chart,
    // clear of its neighbours and big enough to read.
    const axes = await page.locator("svg.chart").evaluateAll((svgs) =>
      svgs.map((svg) => {
        const box = svg.getBoundingClientRect();
        const labels = (axis: string) =>
          [...svg.querySelectorAll(`.${axis} text`)].map((t) => ({
            text: t.textContent ?? "",
            r: t.getBoundingClientRect(),
          }));
        const times = labels("time-axis");
        const values = labels("value-axis");
        const all = [...times, ...values];
        return {
          chart: svg.getAttribute("aria-label")?.split(":")[0],
          times: times.map((l) => l.text),
          values: values.map((l) => l.text),
          inside: all.every(
            ({ r }) =>
              r.left >= box.left && r.right <= box.right && r.top >= box.top && r.bottom <= box.bottom,
          ),
          apart:
            times.every((l, i) => i === 0 || (times[i - 1]?.r.right ?? 0) < l.r.left) &&
            values.every((l, i) => i === 0 || (values[i - 1]?.r.top ?? 0) > l.r.bottom),
          readable: all.every(({ r }) => r.height >= 10),
        };
      }),
    );
    expect(axes).toHaveLength(6);
    for (const a of axes) {
      expect(a.times.length, `${a.chart}: time labels`).toBeGreaterThanOrEqual(2);
      for (const t of a.times) expect(t, `${a.chart}: a time label`).toMatch(/^\d\d:\d\d(:\d\d)?$/);
      expect(a.values[0], `${a.chart}: the value axis starts at 0`).toBe("0");
      expect(a.values.length, `${a.chart}: value labels`).toBeGreaterThanOrEqual(2);
      expect([a.chart, a.inside, a.apart, a.readable]).toEqual([a.chart, true, true, true]);
    }
    await page.screenshot({ path: new URL("queue-jobs.png", ARTIFACTS).pathname, fullPage: true });

    // The newest failed job's page: attempts, error and payload.
    const newest = (await rows.first().getAttribute("data-job")) ?? "";
    await page.getByRole("link", { name: `Job ${newest}` }).click();
    await page.getByRole("heading", { name: `Job ${newest}` }).waitFor();
    await expect.poll(() => text(page.locator(".job-facts")), soon).toContain("Attempts1 of 1");
    expect(await text(page.locator(".job-facts"))).toContain("Last errorReportError: renderer down");
    expect(await text(page.getByLabel("payload preview"))).toBe('{\n  "report": 3\n}');
    await page.screenshot({ path: new URL("job.png", ARTIFACTS).pathname, fullPage: true });

    // Redrive: the confirmation names the count; the jobs come back waiting, spread over the smear.
    await page.getByRole("link", { name: "← Queue reports" }).click();
    await expect.poll(() => text(page.locator("#jobs-total")), soon).toBe("3 failed jobs");
    await page.getByRole("button", { name: "Redrive 3 failed…" }).click();
    await expect.poll(() => text(page.getByRole("dialog")), soon).toContain("reports has 3 failed jobs");
    await page.getByLabel("Smear over seconds (0 to 86,400)").fill("30");
    const before = Date.now();
    await page.getByRole("button", { name: "Redrive failed jobs" }).click();
    await expect
      .poll(() => text(page.getByRole("status")), soon)
      .toBe("Redrove 3 failed jobs of reports, spread over 30 s.");
    // Back from the job's page the list still shows the failed jobs: none now.
    await expect.poll(() => text(page.locator("#jobs-total")), soon).toBe("0 failed jobs");
    await page.getByRole("button", { name: "Redrive 0 failed…" }).waitFor();

    const waiting = [
      ...(await admin.listJobs({ queue: "reports", state: JobState.SCHEDULED })).jobs,
      ...(await admin.listJobs({ queue: "reports", state: JobState.QUEUED })).jobs,
    ];
    expect(waiting).toHaveLength(3);
    for (const j of waiting) {
      const runAt = Number(j.runAt?.seconds ?? 0n) * 1000;
      expect(runAt).toBeGreaterThanOrEqual(before - 2000);
      expect(runAt).toBeLessThanOrEqual(Date.now() + 30_000);
    }
    const audit = await admin.listQueueAudit({ queue: "reports" });
    expect(audit.entries.map((e) => [e.eventType, e.actor])[0]).toEqual([
      "queue.redrive_failed",
      "ops-alice",
    ]);
    await page.getByRole("group", { name: "Job state" }).getByRole("button", { name: "scheduled" }).click();
    await expect.poll(() => text(page.locator("#jobs-total")), soon).toMatch(/^\d scheduled jobs?$/);
    await page.screenshot({ path: new URL("queue-redriven.png", ARTIFACTS).pathname, fullPage: true });
  });

  it("trips and closes a breaker from the queue page, asking first; the page has its icon", async () => {
    const admin = createClient(AdminService, createTransport({ baseUrl: gw.grpcUrl, token: secret.alice }));
    await admin.ensureQueue({ queue: "payments" });
    await admin.setBreakerConfig({ queue: "payments", failureThreshold: 1, cooldownSeconds: 3600 });
    const notFound: string[] = [];
    const page = await signIn(secret.alice, (p) =>
      p.on("response", (r) => {
        if (r.status() === 404) notFound.push(r.url());
      }),
    );
    await page.getByText("Signed in as ops-alice (operator)").waitFor();
    await page.goto(`${gw.httpUrl}/console/#/queue/payments`);
    await page.getByRole("heading", { name: "payments" }).waitFor();
    await expect.poll(() => text(page.locator(".flow-state")), soon).toContain("Opened0 times");
    expect(await text(page.locator(".flow-state"))).toContain("1 failure in a row");
    expect(await text(page.locator(".flow-state"))).toContain("1 probe success closes it");
    expect(await page.getByRole("button", { name: "Close breaker…" }).count()).toBe(0);

    await page.getByRole("button", { name: "Trip breaker…" }).click();
    await expect.poll(() => text(page.getByRole("dialog")), soon).toContain("Every worker gets BREAKER_OPEN");
    await page.getByRole("button", { name: "Trip breaker", exact: true }).click();
    await expect
      .poll(() => text(page.getByRole("status")), soon)
      .toBe("Tripped the breaker of payments: workers get BREAKER_OPEN until it closes.");
    await expect.poll(() => text(page.locator(".flow-state")), soon).toMatch(/Opened1 time, last at/);
    const worker = createClient(
      WorkerService,
      createTransport({ baseUrl: gw.grpcUrl, token: secret.worker }),
    );
    const poll = await worker.claimOnce({ queues: ["payments"], maxJobs: 1 });
    expect(poll.throttled.map((t) => ThrottleReason[t.reason])).toEqual(["BREAKER_OPEN"]);
    await page.screenshot({ path: new URL("queue-breaker-open.png", ARTIFACTS).pathname, fullPage: true });

    // Open with an hour's cooldown: only a close by hand lets workers back in.
    expect(await page.getByRole("button", { name: "Trip breaker…" }).count()).toBe(0);
    await page.getByRole("button", { name: "Close breaker…" }).click();
    await page.getByRole("button", { name: "Close breaker", exact: true }).click();
    await expect.poll(() => text(page.getByRole("status")), soon).toBe("Closed the breaker of payments.");
    await page.getByRole("button", { name: "Trip breaker…" }).waitFor();
    expect((await worker.claimOnce({ queues: ["payments"], maxJobs: 1 })).throttled).toEqual([]);

    const audit = await admin.listQueueAudit({ queue: "payments" });
    expect(audit.entries.map((e) => [e.eventType, e.actor]).slice(0, 2)).toEqual([
      ["queue.close_breaker", "ops-alice"],
      ["queue.trip_breaker", "ops-alice"],
    ]);

    // The audit log names each changed field on a line of its own, and stays inside its column: at
    // 1440 px and at 900, where long lines are cut (their full text on hover), no cell and no table
    // overflows.
    await expect.poll(() => page.locator("table.audit tbody tr").count(), soon).toBe(4);
    const overflowing = () =>
      page
        .locator("table.audit td, .table-wrap:has(table.audit)")
        .evaluateAll((els) => els.filter((el) => el.scrollWidth > el.clientWidth).map((el) => el.className));
    expect(await overflowing()).toEqual([]);
    expect(
      await page.locator("table.audit tbody tr").nth(1).locator("td.diff li").allTextContents(),
    ).toContain("breaker.state: closed → open");
    await page.setViewportSize({ width: 900, height: 900 });
    expect(await overflowing()).toEqual([]);
    const cut = await page
      .locator("table.audit td.diff li")
      .evaluateAll((lis) =>
        lis
          .filter((li) => li.scrollWidth > li.clientWidth)
          .map((li) => li.getAttribute("title") === li.textContent),
      );
    expect(cut.length).toBeGreaterThan(0);
    expect(cut.every(Boolean)).toBe(true);
    await page.screenshot({ path: new URL("queue-audit-900.png", ARTIFACTS).pathname, fullPage: true });

    // The page's icon is there, and the page asked for nothing that is not.
    const icon = await page.evaluate(async () => {
      const href = document.querySelector<HTMLLinkElement>('link[rel="icon"]')?.href ?? "";
      const res = await fetch(href);
      return [res.status, res.headers.get("content-type")];
    });
    expect(icon).toEqual([200, "image/svg+xml"]);
    expect(notFound).toEqual([]);
  });

  it("keeps every action of the widest queue row in view at 1440 px, and while the table scrolls narrower", async () => {
    // A queue with every column at its longest: a long name, paused (Resume), every gate on, a
    // breaker, failures, and throttled verdicts of four reasons.
    const name = "invoices-reconciliation.eu-west-1.priority-high";
    const admin = createClient(AdminService, createTransport({ baseUrl: gw.grpcUrl, token: secret.alice }));
    const producer = createClient(
      ProducerService,
      createTransport({ baseUrl: gw.grpcUrl, token: secret.alice }),
    );
    for (let i = 0; i < 3; i++) await producer.enqueue({ job: { queue: name, maxAttempts: 1 } });
    const [claimed] = await gw.store.jobsClaim({ queues: [name], limit: 1, leaseMs: 60_000, workerId: "w" });
    if (!claimed) throw new Error("nothing claimed");
    await gw.store.jobsSettle([
      {
        jobId: claimed.id,
        attempt: claimed.attempt,
        kind: "failure" as const,
        error: { type: "E", message: "down", retryable: false },
        delayMs: null,
      },
    ]);
    await admin.ensureQueue({
      queue: name,
      profile: { max_running: 1_000_000, claim_rate_per_minute: 600_000, claim_burst: 10_000 },
    });
    await admin.setQueueThrottle({ queue: name, limit: 100_000, periodMs: 86_400_000 });
    await admin.setBreakerConfig({ queue: name, failureThreshold: 1000, cooldownSeconds: 60 });
    await admin.pauseQueue({ queue: name });
    await new QueueStore(gw.store.db).throttledAdd(
      ["THROTTLE", "MAX_RUNNING", "PAUSED", "BREAKER_OPEN"].map((reason, i) => ({
        queue: name,
        reason,
        count: Math.floor(12_345 / 10 ** i),
      })),
    );

    const page = await signIn(secret.alice);
    await page.getByText("Signed in as ops-alice (operator)").waitFor();
    await expect.poll(() => text(cell(page, name, COL.throttle)), soon).toBe("100,000 / 24 h console");
    await expect.poll(() => text(cell(page, name, COL.throttled)), soon).toContain("BREAKER_OPEN 12");
    await page.getByRole("button", { name: `Resume ${name}` }).waitFor();
    /** Where the queues table's action buttons are, against its scrolling wrap and the page. */
    const layout = () =>
      page.locator(".table-wrap:has(tr[data-queue])").evaluate((wrap) => {
        const box = wrap.getBoundingClientRect();
        const buttons = [...wrap.querySelectorAll("tbody button")].map((b) => b.getBoundingClientRect());
        return {
          tableScrolls: wrap.scrollWidth > wrap.clientWidth,
          pageScrolls: document.documentElement.scrollWidth > document.documentElement.clientWidth,
          buttons: buttons.length > 0,
          outOfView: buttons.filter((r) => r.width === 0 || r.left < box.left || r.right > box.right).length,
        };
      });
    expect(await layout()).toEqual({ tableScrolls: false, pageScrolls: false, buttons: true, outOfView: 0 });
    await page.screenshot({ path: new URL("queues-wide-row.png", ARTIFACTS).pathname, fullPage: true });
    // Narrower than the table, the table scrolls inside its frame (never the page) and the actions
    // stay pinned in view at its right edge.
    await page.setViewportSize({ width: 900, height: 900 });
    expect(await layout()).toEqual({ tableScrolls: true, pageScrolls: false, buttons: true, outOfView: 0 });
    await page.screenshot({ path: new URL("queues-900.png", ARTIFACTS).pathname, fullPage: true });
  });

  it("shows an observer every queue and no action, and sends a refused token back to sign-in", async () => {
    const page = await signIn(secret.watcher);
    await page.getByText("Signed in as watcher (observer) — read only").waitFor();
    await row(page, "fixed").waitFor();
    expect(await page.getByRole("columnheader").count()).toBe(11);
    expect(await page.locator("table button").count()).toBe(0);
    await page.screenshot({ path: new URL("queues-observer.png", ARTIFACTS).pathname, fullPage: true });
    await page.getByRole("link", { name: "fixed" }).click();
    await expect.poll(() => text(page.locator(".flow-state")), soon).toContain("5 per 1 min (config file)");
    await expect.poll(() => text(page.locator("#jobs-total")), soon).toBe("0 queued jobs");
    expect(
      await page.getByRole("button", { name: /Pause|Resume|Clear|cap|Throttle|Redrive|breaker/ }).count(),
    ).toBe(0);
    await page.screenshot({ path: new URL("queue-observer.png", ARTIFACTS).pathname, fullPage: true });
    // A job's page is a read too: GetJob and ListJobEvents.
    const producer = createClient(
      ProducerService,
      createTransport({ baseUrl: gw.grpcUrl, token: secret.alice }),
    );
    const { jobId } = await producer.enqueue({
      job: { queue: "fixed", payload: new Uint8Array([0xff, 0x01]) },
    });
    await page.goto(`${gw.httpUrl}/console/#/queue/fixed/job/${jobId}`);
    await expect.poll(() => text(page.locator(".job-facts")), soon).toContain("Statequeued");
    expect(await text(page.getByLabel("payload preview"))).toBe("ff 01");
    expect(await text(page.locator("table.job-events tbody"))).toBe(
      "No breaker events on this job: it opened or closed no breaker.",
    );

    await page.evaluate(() => sessionStorage.setItem("taskq.console.token", "not-a-known-token"));
    await page.reload();
    await expect
      .poll(() => text(page.getByRole("alert")), soon)
      .toBe("The gateway no longer accepts your token: sign in again.");
    await page.getByLabel("Bearer token").waitFor();
  });

  it("says so on an open dev gateway, and lets anyone act", async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${open.httpUrl}/console/`);
    await expect
      .poll(() => text(page.getByRole("note")), soon)
      .toBe("Open gateway: no tokens are configured, anyone may act");
    await page.getByText("0 queues").waitFor();
    expect(await page.getByRole("columnheader", { name: "Actions" }).count()).toBe(1);
  });
});
