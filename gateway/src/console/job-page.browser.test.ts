import { mkdirSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createTransport } from "@taskq/sdk";
import { JobState, ProducerService } from "@taskq/sdk/proto";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken, newToken } from "../auth/tokens.js";
import { ARTIFACTS, CHROMIUM, haveChromium, soon, text } from "../testing/console-browser.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// A job's page in Debian's headless Chromium: its attempts (a job that failed twice, then succeeded),
// finding a job by id from the header, cancelling a waiting or a running job and retrying a failed one
// now, which only an operator is offered. Each action is checked where it lands too (GetJob).

const secret = { alice: newToken(), watcher: newToken() };
const tokens = [
  { name: "ops-alice", roles: ["operator" as const], queues: null, sha256: hashToken(secret.alice) },
  { name: "watcher", roles: ["observer" as const], queues: null, sha256: hashToken(secret.watcher) },
];

describe.runIf(haveChromium())("a job's page in Chromium", () => {
  let gw: TestGateway;
  let browser: Browser;
  let producer: ReturnType<typeof createClient<typeof ProducerService>>;
  /** A job that failed twice and then succeeded. */
  let retried: string;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    [gw, browser] = await Promise.all([
      startTestGateway({ config: { tokens } }),
      chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] }),
    ]);
    producer = createClient(ProducerService, createTransport({ baseUrl: gw.grpcUrl, token: secret.alice }));
    retried = (await producer.enqueue({ job: { queue: "billing", maxAttempts: 5 } })).jobId;
    const claim = async (workerId: string) => {
      const [j] = await gw.store.jobsClaim({ queues: ["billing"], limit: 1, leaseMs: 60_000, workerId });
      if (!j) throw new Error("nothing claimed");
      return j;
    };
    for (const [worker, message] of [
      ["worker-1", "card declined"],
      ["worker-2", "gateway timeout"],
    ] as const) {
      const j = await claim(worker);
      await gw.store.jobsSettle([
        {
          jobId: j.id,
          attempt: j.attempt,
          kind: "failure",
          error: { type: "PaymentError", message, retryable: true },
          delayMs: 0,
          durationMs: 1500,
        },
      ]);
    }
    const last = await claim("worker-3");
    await gw.store.jobsSettle([
      { jobId: last.id, attempt: last.attempt, kind: "success", result: new Uint8Array() },
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await gw?.stop();
  });

  /** A fresh tab signed in with `token`. */
  async function signIn(token: string): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${gw.httpUrl}/`);
    await page.getByLabel("Bearer token").fill(token);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText(/^Signed in as/).waitFor();
    return page;
  }
  const find = async (page: Page, id: string) => {
    await page.getByLabel("Find job").fill(id);
    await page.getByRole("button", { name: "Open" }).click();
  };
  const attemptRows = (page: Page) =>
    page
      .locator("table.job-attempts tbody tr")
      .evaluateAll((rows) =>
        rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent ?? "")),
      );
  const state = async (id: string) => (await producer.getJob({ jobId: id })).job;

  it("finds a job by id and shows its two failed attempts with their errors, in order, then the success", async () => {
    const page = await signIn(secret.alice);
    await find(page, retried);
    await page.waitForURL(new RegExp(`#/queue/billing/job/${retried}$`));
    await expect.poll(() => attemptRows(page).then((r) => r.length), soon).toBe(3);
    const rows = await attemptRows(page);
    // Attempt, worker, duration, outcome, error (the times are the database's).
    expect(rows.map((r) => [r[0], r[1], r[4], r[5], r[6]])).toEqual([
      ["1", "worker-1", "1.5 s", "failed", "PaymentError: card declined (retryable)"],
      ["2", "worker-2", "1.5 s", "failed", "PaymentError: gateway timeout (retryable)"],
      ["3", "worker-3", expect.stringMatching(/ms$|s$/), "succeeded", ""],
    ]);
    expect(await page.getByRole("columnheader").allTextContents()).toEqual(
      expect.arrayContaining(["Attempt", "Worker", "Claimed", "Finished", "Duration", "Outcome", "Error"]),
    );
    // Finished: nothing to cancel.
    expect(await page.getByRole("button", { name: "Cancel job…" }).count()).toBe(0);
    await page.screenshot({ path: new URL("job-attempts.png", ARTIFACTS).pathname, fullPage: true });

    await find(page, "999999");
    await expect
      .poll(() => text(page.locator("#find-result")), soon)
      .toBe("No job 999999: never enqueued, or deleted after its retention.");
    await find(page, "12ab");
    await expect
      .poll(() => text(page.locator("#find-result")), soon)
      .toBe("A job id is a whole number, e.g. 1234.");
    expect(page.url()).toMatch(new RegExp(`#/queue/billing/job/${retried}$`));
  });

  it("lets an operator cancel a waiting job at once and ask a running one to stop", async () => {
    const waiting = (await producer.enqueue({ job: { queue: "exports" } })).jobId;
    const page = await signIn(secret.alice);
    await find(page, waiting);
    await expect
      .poll(() => text(page.locator("table.job-attempts tbody")), soon)
      .toBe("No attempts yet: no worker has claimed this job.");
    await page.getByRole("button", { name: "Cancel job…" }).click();
    await page.getByLabel("Reason (optional, kept as the job's last error)").fill("duplicate export");
    await page.screenshot({ path: new URL("job-cancel-dialog.png", ARTIFACTS).pathname, fullPage: true });
    await page.getByRole("button", { name: "Cancel job", exact: true }).click();
    await expect.poll(() => text(page.locator("#status")), soon).toBe(`Cancelled job ${waiting}.`);
    await expect.poll(() => text(page.locator(".job-page .verdict")), soon).toBe("cancelled");
    expect(await page.getByRole("button", { name: "Cancel job…" }).count()).toBe(0);
    const after = await state(waiting);
    expect(after?.state).toBe(JobState.CANCELLED);
    expect(after?.lastError?.message).toBe("duplicate export");

    const slow = (await producer.enqueue({ job: { queue: "exports-slow" } })).jobId;
    await gw.store.jobsClaim({
      queues: ["exports-slow"],
      limit: 1,
      leaseMs: 60_000,
      workerId: "slow-worker",
    });
    await find(page, slow);
    await expect
      .poll(() => attemptRows(page), soon)
      .toEqual([["1", "slow-worker", expect.any(String), "running", "—", "running", ""]]);
    await page.getByRole("button", { name: "Cancel job…" }).click();
    // Keeping the job closes the dialog and changes nothing.
    await page.getByRole("button", { name: "Keep job" }).click();
    expect((await state(slow))?.cancelRequested).toBe(false);
    await page.getByRole("button", { name: "Cancel job…" }).click();
    await page.getByRole("button", { name: "Cancel job", exact: true }).click();
    await expect
      .poll(() => text(page.locator("#status")), soon)
      .toBe(`Asked job ${slow} to stop: it is cancelled when its worker gives it up.`);
    await expect.poll(() => text(page.locator(".job-facts")), soon).toContain("running (cancel requested)");
    expect(await page.getByRole("button", { name: "Cancel job…" }).count()).toBe(0);
    expect(await state(slow)).toMatchObject({ state: JobState.RUNNING, cancelRequested: true });
  });

  /** A job of `queue` that failed for good on its first attempt (of 2). */
  const failedJob = async (queue: string) => {
    const id = (await producer.enqueue({ job: { queue, maxAttempts: 2 } })).jobId;
    const [j] = await gw.store.jobsClaim({
      queues: [queue],
      limit: 1,
      leaseMs: 60_000,
      workerId: "worker-9",
    });
    if (!j) throw new Error("nothing claimed");
    await gw.store.jobsSettle([
      {
        jobId: j.id,
        attempt: j.attempt,
        kind: "failure",
        error: { type: "PaymentError", message: "card expired", retryable: false },
        delayMs: null,
      },
    ]);
    return id;
  };

  it("lets an operator retry a failed job now: it waits again with its attempts granted again", async () => {
    const failed = await failedJob("refunds");
    const page = await signIn(secret.alice);
    await find(page, failed);
    await expect.poll(() => text(page.locator(".job-page .verdict")), soon).toBe("failed");
    expect(await page.getByRole("button", { name: "Cancel job…" }).count()).toBe(0);
    await page.screenshot({ path: new URL("job-retry.png", ARTIFACTS).pathname, fullPage: true });
    await page.getByRole("button", { name: "Retry now" }).click();
    await expect
      .poll(() => text(page.locator("#status")), soon)
      .toBe(`Job ${failed} is back in refunds, ready now, with its attempts granted again.`);
    await expect.poll(() => text(page.locator(".job-page .verdict")), soon).toBe("queued");
    await expect.poll(() => text(page.locator(".job-facts")), soon).toContain("Attempts1 of 3");
    expect(await page.getByRole("button", { name: "Retry now" }).count()).toBe(0);
    expect(await state(failed)).toMatchObject({ state: JobState.QUEUED, attempt: 1, maxAttempts: 3 });
    // It runs again, as attempt 2.
    const [again] = await gw.store.jobsClaim({
      queues: ["refunds"],
      limit: 1,
      leaseMs: 60_000,
      workerId: "w",
    });
    expect(again).toMatchObject({ id: failed, attempt: 2 });
  });

  it("shows an observer the attempts and the find box, and no Cancel or Retry now", async () => {
    const failed = await failedJob("refunds-watched");
    const waiting = (await producer.enqueue({ job: { queue: "exports" } })).jobId;
    const page = await signIn(secret.watcher);
    await find(page, retried);
    await expect.poll(() => attemptRows(page).then((r) => r.length), soon).toBe(3);
    await find(page, waiting);
    await page.waitForURL(new RegExp(`#/queue/exports/job/${waiting}$`));
    await expect.poll(() => text(page.locator(".job-facts")), soon).toContain("Statequeued");
    expect(await page.getByRole("button", { name: /Cancel/ }).count()).toBe(0);
    expect((await state(waiting))?.state).toBe(JobState.QUEUED);
    await find(page, failed);
    await expect.poll(() => text(page.locator(".job-page .verdict")), soon).toBe("failed");
    expect(await page.getByRole("button", { name: "Retry now" }).count()).toBe(0);
    expect((await state(failed))?.state).toBe(JobState.FAILED);
  });
});
