import { mkdirSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { AdminService } from "@taskq/sdk/proto";
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

  /** A fresh tab on `hash` (the Queues page by default); `before` runs first (to route requests, say). */
  async function open(
    hash = "#/",
    before?: (page: Page) => Promise<void>,
    timezoneId?: string,
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
