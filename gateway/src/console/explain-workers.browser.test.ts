import { mkdirSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService, ProducerService } from "@taskq/sdk/proto";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { ARTIFACTS, CHROMIUM, haveChromium, soon, text } from "../testing/console-browser.js";
import { idleWorker } from "../testing/idle-worker.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// The job page's "Why is it not running?" panel and the Workers page, in Debian's headless Chromium
// against an open dev gateway.

describe.runIf(haveChromium())("explain and workers in the console, in Chromium", () => {
  let gw: TestGateway;
  let browser: Browser;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    [gw, browser] = await Promise.all([
      startTestGateway({ config: { workerRecordsFlushMs: 100 } }),
      chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] }),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await gw?.stop();
  });

  async function open(hash: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    onTestFinished(() => context.close());
    await page.goto(`${gw.httpUrl}/console/${hash}`);
    return page;
  }

  it("the job page says why a job waits, blocking reasons first-class, and follows it as it changes", async () => {
    const transport = createTransport({ baseUrl: gw.grpcUrl });
    const admin = createClient(AdminService, transport);
    const producer = createClient(ProducerService, transport);
    await admin.ensureQueue({ queue: "ui-explain" });
    await admin.pauseQueue({ queue: "ui-explain" });
    const { jobId } = await producer.enqueue({ job: { queue: "ui-explain" } });
    const page = await open(`#/queue/ui-explain/job/${jobId}`);
    const summary = page.locator(".explain-summary");
    await expect.poll(() => text(summary), soon).toMatch(/^no estimate: .*first blocking: paused/);
    const paused = page.locator('.explain-reasons tr[data-gate="paused"]');
    await expect.poll(() => paused.getAttribute("class"), soon).toBe("blocking");
    expect(await text(paused)).toMatch(/PAUSED.*Blocking: paused since .* by anonymous/);
    await page.screenshot({ path: new URL("explain-panel.png", ARTIFACTS).pathname, fullPage: true });
    // The queue's page asks the same of its next job: "why is this queue stuck?".
    const queuePage = await open("#/queue/ui-explain");
    await expect
      .poll(() => text(queuePage.locator(".explain-summary")), soon)
      .toMatch(/first blocking: paused: paused since/);
    expect(await text(queuePage.locator("#explain-title"))).toBe("Why is this queue stuck?");
    // Resumed, with no worker: the next poll of the page says nothing claims the queue.
    await admin.resumeQueue({ queue: "ui-explain" });
    await expect.poll(() => text(summary), soon).toMatch(/^no estimate: nothing is claiming this queue/);
  });

  it("the Workers page lists each connected worker with its queues, slots and last poll", async () => {
    await idleWorker({
      baseUrl: gw.grpcUrl,
      workerId: "ui-worker",
      queues: ["ui-a", "ui-b"],
      concurrency: 3,
      prefetch: 1,
    });
    const page = await open("#/");
    await page.getByRole("link", { name: "Workers" }).click();
    const row = page.locator('table.workers tr[data-worker="ui-worker"]');
    await expect.poll(() => text(row), soon).toMatch(/^ui-worker.*ui-a, ui-b.*0 of 3 \+ 1 prefetch/);
    await page.screenshot({ path: new URL("workers-page.png", ARTIFACTS).pathname, fullPage: true });
    await row.getByRole("link", { name: "ui-b" }).click();
    await expect.poll(() => page.url(), soon).toMatch(/#\/queue\/ui-b$/);
  });
});
