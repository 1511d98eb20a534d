import { mkdirSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, JobState, ProducerService } from "@taskq/sdk/proto";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ARTIFACTS, CHROMIUM, haveChromium, soon, text } from "../testing/console-browser.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// What a first-time user of the console meets: pages that load, say what they show and in which
// units and time zone, and controls that do what their labels say. An open dev gateway: anyone acts.

describe.runIf(haveChromium())("the web console for a new user, in Chromium", () => {
  let gw: TestGateway;
  let browser: Browser;
  const admin = () => createClient(AdminService, createTransport({ baseUrl: gw.grpcUrl }));

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    [gw, browser] = await Promise.all([
      startTestGateway(),
      chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] }),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await gw?.stop();
  });

  /**
   * A fresh tab on `hash` (the Queues page by default) in the browser's time zone `timezoneId`;
   * `before` runs first (to route requests, say).
   */
  async function open(
    hash = "#/",
    { before, timezoneId }: { before?: (page: Page) => Promise<unknown>; timezoneId?: string } = {},
  ): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, timezoneId });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await before?.(page);
    await page.goto(`${gw.httpUrl}/console/${hash}`);
    return page;
  }
  const cell = (page: Page, queue: string, column: number) =>
    page.locator(`tr[data-queue="${queue}"] td`).nth(column);
  const RUNNING = 3;
  const sql = (text: string, params: unknown[] = []) => gw.store.db.query({ name: "", text }, params);
  /** Runs `n` jobs of `queue` to success. */
  async function finish(queue: string, n: number): Promise<void> {
    const producer = createClient(ProducerService, createTransport({ baseUrl: gw.grpcUrl }));
    for (let i = 0; i < n; i++) await producer.enqueue({ job: { queue } });
    const claimed = await gw.store.jobsClaim({ queues: [queue], limit: n, leaseMs: 60_000, workerId: "w" });
    await gw.store.jobsSettle(
      claimed.map((c) => ({
        jobId: c.id,
        attempt: c.attempt,
        kind: "success" as const,
        result: new Uint8Array(),
      })),
    );
  }

  it("says a queue that does not exist is not found and offers no action, until it exists", async () => {
    const page = await open("#/queue/nosuch");
    await expect
      .poll(() => text(page.locator("#queue-missing")), soon)
      .toBe(
        "Queue nosuch not found: it has no settings and no jobs. Enqueuing a job or ensuring the queue (taskq queue ensure) creates it.",
      );
    expect(await text(page.locator(".queue-page .verdict"))).toBe("not found");
    expect(await page.locator(".queue-page button:visible").count()).toBe(0);
    expect(await page.getByRole("heading", { name: "Flow state" }).isVisible()).toBe(false);
    await page.screenshot({ path: new URL("queue-not-found.png", ARTIFACTS).pathname });

    // Created meanwhile: the next poll shows it, actions and all.
    await admin().ensureQueue({ queue: "nosuch" });
    await page.getByRole("button", { name: "Pause" }).waitFor();
    expect(await page.locator("#queue-missing").isVisible()).toBe(false);
    expect(await text(page.locator(".queue-page .verdict"))).toBe("idle");

    // A queue whose only jobs finished over an hour ago has no settings and no live counters, but
    // exists (the API's verbs act on it): idle, not "not found".
    await finish("long-done", 1);
    await sql("update taskq.jobs set finished_at = now() - interval '2 hours' where queue = 'long-done'");
    const old = await open("#/queue/long-done");
    await old.getByRole("button", { name: "Pause" }).waitFor();
    expect(await text(old.locator(".queue-page .verdict"))).toBe("idle");
    expect(await old.locator("#queue-missing").isVisible()).toBe(false);
  });

  it("shows Loading… until the queues' first answer, and why it failed until one arrives", async () => {
    await admin().ensureQueue({ queue: "listed" });
    const loading = () => text(page.locator("table.queues tbody"));
    // The first QueueFlow answer is held back until the test lets it through.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let page = await open("#/", {
      before: (p) =>
        p.route("**/taskq.v1.AdminService/QueueFlow", async (route) => {
          await held;
          await route.continue();
        }),
    });
    await expect.poll(loading, soon).toBe("Loading…");
    await page.screenshot({ path: new URL("queues-loading.png", ARTIFACTS).pathname });
    release();
    await page.locator('tr[data-queue="listed"]').waitFor();
    expect(await page.getByText("Loading…").count()).toBe(0);

    // The first two reads fail: the table says why (the gateway's own words), then lists the queues.
    let failures = 2;
    page = await open("#/", {
      before: (p) =>
        p.route("**/taskq.v1.AdminService/QueueFlow", (route) =>
          failures-- > 0
            ? route.fulfill({
                status: 503,
                contentType: "application/json",
                body: JSON.stringify({ code: "unavailable", message: "database unreachable" }),
              })
            : route.continue(),
        ),
    });
    await expect
      .poll(() => text(page.getByRole("alert")), soon)
      .toBe("Could not load the queues: database unreachable. Trying again every 2 s.");
    await page.screenshot({ path: new URL("queues-load-failed.png", ARTIFACTS).pathname });
    await page.locator('tr[data-queue="listed"]').waitFor();
    expect(await page.getByRole("alert").count()).toBe(0);
  });

  it("headlines each per-minute chart with the last full minute, and labels every axis with its unit", async () => {
    // The jobs land in the minute before this one: leave the page time to read it in this one.
    const second = new Date().getUTCSeconds();
    if (second >= 45) await new Promise((r) => setTimeout(r, (61 - second) * 1000));
    await finish("charted", 6);
    const minuteAgo = "date_trunc('minute', now()) - interval '1 minute'";
    await sql(`update taskq.jobs set started_at = ${minuteAgo} + interval '10 s',
      finished_at = ${minuteAgo} + interval '10.25 s' where queue = 'charted'`);
    await sql(`insert into taskq.queue_throttled (queue, minute, reason, count)
      values ('charted', ${minuteAgo}, 'THROTTLE', 7)`);

    const page = await open("#/queue/charted");
    const captions = () => page.locator("figcaption").allTextContents();
    // The current minute has no claim, no settle and no verdict: a headline of it would read 0.
    await expect
      .poll(async () => (await captions()).slice(0, 4), soon)
      .toEqual([
        "Claims per second, last full minute: claims/s 0.1 ",
        "Throttled verdicts per minute, last full minute: THROTTLE 7 ",
        "Settled per minute, last full minute: succeeded 6 failed 0 cancelled 0 ",
        "Run time, last full minute: avg 250 max 250 ",
      ]);
    expect(await page.locator("svg.chart").first().getAttribute("aria-label")).toBe(
      "Claims per second, last full minute: claims/s 0.1 claims/s",
    );
    await page.screenshot({ path: new URL("queue-charts.png", ARTIFACTS).pathname, fullPage: true });

    // Every chart names its values' unit and its time axis' zone, inside the chart, clear of the ticks.
    const titles = await page.locator("svg.chart").evaluateAll((svgs) =>
      svgs.map((svg) => {
        const box = svg.getBoundingClientRect();
        const rect = (sel: string) => svg.querySelector(sel)?.getBoundingClientRect();
        const unit = rect(".value-unit");
        const zone = rect(".time-title");
        const ticks = [...svg.querySelectorAll(".value-axis text, .time-axis text")].map((t) =>
          t.getBoundingClientRect(),
        );
        const clear = (r: DOMRect | undefined) =>
          !!r &&
          r.left >= box.left &&
          r.right <= box.right &&
          r.top >= box.top &&
          r.bottom <= box.bottom &&
          ticks.every(
            (t) => t.right <= r.left || t.left >= r.right || t.bottom <= r.top || t.top >= r.bottom,
          );
        return [
          svg.querySelector(".value-unit")?.textContent,
          svg.querySelector(".time-title")?.textContent,
          clear(unit) && clear(zone),
        ];
      }),
    );
    expect(titles).toEqual([
      ["claims/s", "time (UTC)", true],
      ["verdicts/min", "time (UTC)", true],
      ["jobs/min", "time (UTC)", true],
      ["ms", "time (UTC)", true],
      ["jobs", "time (UTC)", true],
      ["jobs", "time (UTC)", true],
    ]);
  });

  it("shows every time in 24-hour UTC, saying so, in a browser half an hour off whole hours", async () => {
    const a = admin();
    await a.ensureQueue({ queue: "timed" });
    await a.setBreakerConfig({ queue: "timed", failureThreshold: 5, cooldownSeconds: 3600 });
    await a.tripBreaker({ queue: "timed" });
    const producer = createClient(ProducerService, createTransport({ baseUrl: gw.grpcUrl }));
    const { jobId } = await producer.enqueue({ job: { queue: "timed" } });
    /** What the console should show for a timestamp: its ISO 8601 form, to the second, as "… UTC". */
    const utc = (t: { seconds: bigint; nanos: number } | undefined) =>
      `${new Date(Number(t?.seconds ?? 0n) * 1000).toISOString().slice(0, 19).replace("T", " ")} UTC`;
    const [audit] = (await a.listQueueAudit({ queue: "timed" })).entries;
    const [event] = (await a.listBreakerEvents({ queue: "timed" })).events;
    const tripped = (await a.getQueue({ queue: "timed" })).queue?.breaker?.trippedAt;
    const [job] = (await a.listJobs({ queue: "timed", state: JobState.QUEUED })).jobs;

    const page = await open("#/queue/timed", { timezoneId: "Asia/Kolkata" });
    // The browser's own zone is not UTC here: a local time would be 5:30 off.
    expect(await page.evaluate(() => new Date(0).getTimezoneOffset())).toBe(-330);
    await expect
      .poll(() => text(page.locator("table.audit tbody tr td").first()), soon)
      .toBe(utc(audit?.createdAt));
    expect(await text(page.locator("table.breaker-events tbody tr td").first())).toBe(utc(event?.createdAt));
    expect(await text(page.locator(".flow-state"))).toContain(`last at ${utc(tripped)}`);
    expect(await text(page.locator(`tr[data-job="${jobId}"] td`).nth(2))).toBe(utc(job?.enqueuedAt));
    const near = (label: string) => {
      // A clock label ("HH:MM" or "HH:MM:SS") within the last 20 minutes, read as UTC.
      const [h = 0, m = 0, sec = 0] = label.split(/[: ]/).map(Number);
      const day = Date.now() - (Date.now() % 86_400_000);
      const at = [day - 86_400_000, day].map((d) => d + ((h * 60 + m) * 60 + sec) * 1000);
      return at.some((t) => t <= Date.now() + 5000 && t >= Date.now() - 20 * 60_000);
    };
    const updated = await text(page.locator(".queue-page .updated"));
    expect(updated).toMatch(/^updated \d\d:\d\d:\d\d UTC$/);
    expect(near(updated.slice("updated ".length)), updated).toBe(true);
    const ticks = await page.locator("svg.chart .time-axis text").allTextContents();
    expect(ticks.length).toBeGreaterThan(0);
    expect(ticks.filter((t) => !near(t))).toEqual([]);

    await page.getByRole("link", { name: `Job ${jobId}` }).click();
    await expect
      .poll(() => text(page.locator(".job-facts")), soon)
      .toContain(`Enqueued${utc(job?.enqueuedAt)}`);
    expect(await text(page.locator(".job-page .updated"))).toMatch(/^updated \d\d:\d\d:\d\d UTC$/);
    await page.screenshot({ path: new URL("job-utc.png", ARTIFACTS).pathname, fullPage: true });
  });

  it("previews what a cap would have done over the last hour in its dialog, changing nothing until Set cap", async () => {
    // Six jobs of 1 s each, all at once, five minutes ago.
    await sql("select taskq.note_queues(array['previewed'])");
    await sql(
      `insert into taskq.jobs (queue, state, payload, max_attempts, attempt, run_at, enqueued_at, started_at, finished_at)
       select 'previewed', 'succeeded', '', 5, 1, t, t, t, t + interval '1 s'
       from (select now() - interval '5 min' as t from generate_series(1, 6)) s`,
    );
    const page = await open();
    await page.getByRole("button", { name: "Concurrency cap of previewed" }).click();
    await page.getByLabel("Max running jobs (1 to 1,000,000)").fill("2");
    await page.getByRole("button", { name: "Preview on the last hour" }).click();
    await expect
      .poll(() => text(page.locator("#dry-run-preview .dry-run-summary")), soon)
      .toBe("4 of 6 jobs would have started 1 s or more later, the longest by 2 s.");
    expect(await text(page.locator("#dry-run-preview tbody tr").first())).toBe("Peak backlog04");
    await page.screenshot({ path: new URL("dry-run-preview.png", ARTIFACTS).pathname });
    expect((await admin().getQueue({ queue: "previewed" })).queue?.maxRunning).toBeUndefined();
    // A value out of range is refused in the dialog, before any call.
    await page.getByLabel("Max running jobs (1 to 1,000,000)").fill("0");
    await page.getByRole("button", { name: "Preview on the last hour" }).click();
    await expect
      .poll(() => text(page.locator("dialog .error")), soon)
      .toMatch(/must be a whole number from 1/);
    await page.getByLabel("Max running jobs (1 to 1,000,000)").fill("2");
    await page.getByRole("button", { name: "Set cap" }).click();
    await expect.poll(() => text(cell(page, "previewed", RUNNING)), soon).toBe("0 / 2");
  });

  it("previews an adaptive limit in its dialog, then turns it on and off from the queue's page", async () => {
    // Six jobs of 1 s each, all at once, five minutes ago; a fixed cap of 3 set before.
    await sql("select taskq.note_queues(array['adapted'])");
    await sql(
      `insert into taskq.jobs (queue, state, payload, max_attempts, attempt, run_at, enqueued_at, started_at, finished_at)
       select 'adapted', 'succeeded', '', 5, 1, t, t, t, t + interval '1 s'
       from (select now() - interval '5 min' as t from generate_series(1, 6)) s`,
    );
    await admin().setQueueConcurrency({ queue: "adapted", maxRunning: 3 });
    const page = await open("#/queue/adapted");
    await page.getByRole("button", { name: "Adaptive limit…" }).click();
    await expect
      .poll(() => text(page.locator("#adaptive-now")), soon)
      .toBe(
        "Now: off; the fixed cap of 3 is kept aside while it is on and comes back when it is turned off.",
      );
    expect(await page.getByRole("button", { name: "Turn off" }).count()).toBe(0);
    const fill = async (min: string, max: string, target: string) => {
      await page.getByLabel("Lowest limit (1 to 1,000,000)").fill(min);
      await page.getByLabel("Highest limit (lowest to 1,000,000)").fill(max);
      await page.getByLabel("Target average run time, ms (1 to 3,600,000)").fill(target);
    };
    // Bounds the form refuses, before any call.
    await fill("5", "4", "500");
    await page.getByRole("button", { name: "Preview on the last hour" }).click();
    await expect
      .poll(() => text(page.locator("dialog .error")), soon)
      .toBe("Highest limit must be at least the lowest limit.");
    // Held at 2 by its bounds, the limit replays as a cap of 2 would: against the cap of 3 (starts at
    // 0, 0, 0, 1, 1, 1 s) the jobs start at 0, 0, 1, 1, 2, 2 s, so three start a second later.
    await fill("2", "2", "5000");
    await page.getByRole("button", { name: "Preview on the last hour" }).click();
    await expect
      .poll(() => text(page.locator("#dry-run-preview .dry-run-summary")), soon)
      .toBe("3 of 6 jobs would have started 1 s or more later, the longest by 1 s.");
    expect((await admin().getQueue({ queue: "adapted" })).queue?.adaptive).toBeUndefined();

    await fill("2", "50", "500");
    await page.getByRole("button", { name: "Turn on" }).click();
    await expect
      .poll(() => text(page.getByRole("status")), soon)
      .toBe("adapted: max_running now moves between 2 and 50, keeping the average run time under 500 ms.");
    const on = (await admin().getQueue({ queue: "adapted" })).queue;
    expect(on?.adaptive).toMatchObject({ min: 2, max: 50, targetLatencyMs: 500, fixedMaxRunning: 3 });
    expect(on?.maxRunning).toBe(2);
    await expect.poll(() => text(page.locator(".flow-state")), soon).toContain("Adaptive2 to 50");

    await page.getByRole("button", { name: "Adaptive limit…" }).click();
    await expect
      .poll(() => text(page.locator("#adaptive-now")), soon)
      .toBe("Now: at most 2 running, moving between 2 and 50; target 500 ms.");
    await page.getByRole("button", { name: "Turn off" }).click();
    await expect
      .poll(() => text(page.getByRole("status")), soon)
      .toBe("adapted: the adaptive limit is off; max_running is the cap set before it.");
    const off = (await admin().getQueue({ queue: "adapted" })).queue;
    expect(off?.adaptive).toBeUndefined();
    expect(off?.maxRunning).toBe(3);
  });

  it("sets a concurrency cap from the Queues page and removes it from the queue's page", async () => {
    await admin().ensureQueue({ queue: "capped" });
    const page = await open();
    await page.getByRole("button", { name: "Concurrency cap of capped" }).click();
    await expect.poll(() => text(page.locator("#concurrency-now")), soon).toBe("Now: no cap.");
    expect(await page.getByRole("button", { name: "Remove cap" }).count()).toBe(0);
    await page.getByLabel("Max running jobs (1 to 1,000,000)").fill("4");
    await page.getByRole("button", { name: "Set cap" }).click();
    await expect.poll(() => text(cell(page, "capped", RUNNING)), soon).toBe("0 / 4");
    expect((await admin().getQueue({ queue: "capped" })).queue?.maxRunning).toBe(4);

    await page.getByRole("link", { name: "capped" }).click();
    await page.getByRole("button", { name: "Concurrency cap…" }).click();
    await expect
      .poll(() => text(page.locator("#concurrency-now")), soon)
      .toBe("Now: at most 4 running. Remove cap lets any number run.");
    await page.getByRole("button", { name: "Remove cap" }).click();
    await expect
      .poll(() => text(page.getByRole("status")), soon)
      .toBe("capped: running jobs are no longer capped.");
    expect((await admin().getQueue({ queue: "capped" })).queue?.maxRunning).toBeUndefined();
    await expect.poll(() => text(page.locator(".flow-state")), soon).toContain("Max runningoff");
  });
});
