// The `console` scenario: how much browser scripting the web console costs at 1,000 queues.
//
// How it measures: an open in-process gateway on the embedded store (no services needed) with 1,000
// queues q0000..q0999, each with one waiting job and settings (max_running on all, a throttle on every
// tenth). Debian's headless Chromium (/usr/bin/chromium, through playwright-core) opens the console;
// Chrome's own counters of main-thread time (CDP Performance.getMetrics) are read around each step:
// ScriptDuration (JavaScript) and TaskDuration (all main-thread work: script, style, layout, paint).
//   queuesFirstRender  from navigation until the Queues page says "1,000 queues" (module evaluation,
//                      the three reads' JSON, the join of 1,000 rows, the first page of 50)
//   queuesPoll         one 2-s poll of the Queues page, averaged over the polls of 10 s
//   search             typing a search that keeps 100 of the 1,000
//   queuePage          opening one queue's page until its flow state and audit log show
// Each figure is the median over --runs (default 1) fresh pages, after one untimed warm-up page.
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { startTestGateway } from "@taskq/gateway/testing";
import { createTransport } from "@taskq/sdk";
import { AdminService, ProducerService } from "@taskq/sdk/proto";
import { type CDPSession, chromium, type Page } from "playwright-core";
import { type MachineInfo, machineInfo } from "./infra.js";
import { type Scenario, textTable } from "./scenario.js";

const QUEUES = 1000;
const CHROMIUM = "/usr/bin/chromium";

type Steps = { queuesFirstRender: number; queuesPoll: number; search: number; queuePage: number };

/** Main-thread time in ms for each step, median over the runs. */
interface ConsoleReport {
  queues: number;
  runs: number;
  scriptingMs: Steps;
  mainThreadMs: Steps;
  /** Wall clock from navigation to "1,000 queues", ms (median). */
  queuesFirstRenderWallMs: number;
  machine: MachineInfo;
}

const name = (i: number) => `q${String(i).padStart(4, "0")}`;

export const consoleScenario: Scenario<ConsoleReport> = {
  name: "console",
  summary: "browser scripting of the web console's pages at 1,000 queues (headless Chromium)",
  async run(options) {
    const gw = await startTestGateway();
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    try {
      options.log(`creating ${QUEUES} queues`);
      const transport = createTransport({ baseUrl: gw.grpcUrl });
      const admin = createClient(AdminService, transport);
      const producer = createClient(ProducerService, transport);
      for (let from = 0; from < QUEUES; from += 250) {
        const batch = Array.from({ length: 250 }, (_, i) => name(from + i));
        await producer.enqueueBatch({ jobs: batch.map((queue) => ({ queue })) });
        await Promise.all(
          batch.map(async (queue, i) => {
            await admin.ensureQueue({ queue, profile: { max_running: 10 + i } });
            if (i % 10 === 0) await admin.setQueueThrottle({ queue, limit: 5, periodMs: 60_000 });
          }),
        );
      }
      const measure = async () => {
        const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
        const cdp = await page.context().newCDPSession(page);
        await cdp.send("Performance.enable");
        return { page, cdp, ...(await steps(page, cdp, gw.httpUrl)) };
      };
      options.log("warm-up page");
      await (await measure()).page.context().close();
      const runs: Measured[] = [];
      for (let r = 0; r < options.runs; r++) {
        options.log(`run ${r + 1} of ${options.runs}`);
        const m = await measure();
        runs.push(m);
        await m.page.context().close();
      }
      const med = (pick: (s: Measured) => Steps) => {
        const each = runs.map(pick);
        return Object.fromEntries(
          (Object.keys(each[0] ?? {}) as (keyof Steps)[]).map((k) => [k, median(each.map((e) => e[k]))]),
        ) as Steps;
      };
      return {
        queues: QUEUES,
        runs: options.runs,
        scriptingMs: med((s) => s.script),
        mainThreadMs: med((s) => s.task),
        queuesFirstRenderWallMs: median(runs.map((s) => s.wallMs)),
        machine: machineInfo(),
      };
    } finally {
      await browser.close();
      await gw.stop();
    }
  },
  table(r) {
    const row = (label: string, k: keyof Steps) => [
      label,
      String(r.scriptingMs[k]),
      String(r.mainThreadMs[k]),
    ];
    return textTable([
      [`step (${r.queues.toLocaleString("en-US")} queues)`, "scripting ms", "main thread ms"],
      row("Queues page, first render", "queuesFirstRender"),
      row("Queues page, one poll", "queuesPoll"),
      row("search (100 match)", "search"),
      row("Queue page, first render", "queuePage"),
      ["wall clock to first render", String(r.queuesFirstRenderWallMs), ""],
    ]);
  },
  failed: () => false,
};

interface Measured {
  script: Steps;
  task: Steps;
  wallMs: number;
}

async function steps(page: Page, cdp: CDPSession, httpUrl: string): Promise<Measured> {
  const started = Date.now();
  await page.goto(`${httpUrl}/console/`);
  await page.getByText(`${QUEUES.toLocaleString("en-US")} queues`).waitFor({ timeout: 30_000 });
  const wallMs = Date.now() - started;
  const t0 = { script: 0, task: 0 };
  const t1 = await counters(cdp);

  // Polls counted from the network side, so counting them costs the page nothing.
  let polls = 0;
  page.on("request", (req) => {
    if (req.url().endsWith("/QueueFlow")) polls++;
  });
  await sleep(10_000);
  const t2 = await counters(cdp);
  await page.getByLabel("Search queues").fill("q09");
  await page.getByText("100 of 1,000 queues match").waitFor();
  const t3 = await counters(cdp);
  await page.evaluate(() => {
    location.hash = "#/queue/q0500";
  });
  await page.locator(".flow-state").waitFor();
  await page.locator("table.audit tbody tr").first().waitFor();
  // Its jobs list and per-minute activity charts, read in the same poll.
  await page.locator("table.jobs tbody tr").first().waitFor();
  await page.getByRole("img", { name: /^Claims per second/ }).waitFor();
  const t4 = await counters(cdp);
  const of = (k: "script" | "task"): Steps => ({
    queuesFirstRender: round(t1[k] - t0[k]),
    queuesPoll: round((t2[k] - t1[k]) / Math.max(1, polls)),
    search: round(t3[k] - t2[k]),
    queuePage: round(t4[k] - t3[k]),
  });
  return { script: of("script"), task: of("task"), wallMs };
}

/** Chrome's main-thread JavaScript time and all main-thread work for this page so far, ms. */
async function counters(cdp: CDPSession): Promise<{ script: number; task: number }> {
  const { metrics } = await cdp.send("Performance.getMetrics");
  const ms = (name: string) => (metrics.find((m) => m.name === name)?.value ?? 0) * 1000;
  return { script: ms("ScriptDuration"), task: ms("TaskDuration") };
}

const round = (ms: number) => Math.round(ms * 10) / 10;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}
