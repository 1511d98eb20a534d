import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  AdminService,
  type DryRunLimitRequestSchema,
  type DryRunLimitResponse,
  type DryRunLimits,
} from "@taskq/sdk/proto";
import { type OptionSpec, UsageError } from "./args.js";
import type { Context } from "./command.js";
import { isoTime } from "./output.js";

const rpc = AdminService.method;

/** The flags every limit verb takes for a dry run. */
export const dryRunFlags = {
  "dry-run": {
    type: "boolean",
    help: "Change nothing: replay the queue's last hour of jobs under the new limit and print what it would have changed",
  },
  "window-seconds": {
    type: "string",
    value: "N",
    help: "With --dry-run: replay the last N seconds (60 to 86,400; default 3,600)",
  },
  "min-delay-ms": {
    type: "string",
    value: "N",
    help: "With --dry-run: count a job as delayed when it starts at least N ms later (default 1,000)",
  },
} as const satisfies Record<string, OptionSpec>;

type DryRunFlag = keyof typeof dryRunFlags;

/** True when the command is a dry run; the dry-run-only flags without --dry-run are refused. */
export function isDryRun({ args }: Pick<Context<DryRunFlag>, "args">): boolean {
  if (args.flag("dry-run")) return true;
  for (const f of ["window-seconds", "min-delay-ms"] as const)
    if (args.has(f)) throw new UsageError(`--${f} needs --dry-run`);
  return false;
}

/** How long a progress line waits before it says the read is still going, ms. */
const PROGRESS_EVERY_MS = 3000;

/** Asks the gateway for the dry run of `change` and prints its report (`--json`: the response). */
export async function runDryRun(
  { args, clients, out }: Context<DryRunFlag>,
  change: NonNullable<MessageInitShape<typeof DryRunLimitRequestSchema>["change"]>,
  queue = "",
): Promise<void> {
  const windowSeconds = args.int("window-seconds");
  const name =
    queue || ("value" in change && change.value && "queue" in change.value ? change.value.queue : "");
  out.note(`dry run: replaying the last ${span((windowSeconds ?? 3600) * 1000)} of ${name}'s jobs…`);
  const started = Date.now();
  const ticker = setInterval(
    () => out.note(`…still reading ${name}'s history (${Math.round((Date.now() - started) / 1000)} s)`),
    PROGRESS_EVERY_MS,
  );
  let res: DryRunLimitResponse;
  try {
    res = await clients.admin.dryRunLimit({
      change,
      queue,
      windowSeconds,
      minDelayMs: args.int("min-delay-ms"),
    });
  } finally {
    clearInterval(ticker);
  }
  out.respond(rpc.dryRunLimit.output, res, () => printReport(out, res));
}

function printReport(out: Context<never>["out"], r: DryRunLimitResponse): void {
  const cur = r.current;
  const pro = r.proposed;
  out.line(
    `dry run of ${r.queue}: ${isoTime(r.windowStart)} to ${isoTime(r.windowEnd)}, ${r.jobs} job${r.jobs === 1 ? "" : "s"} replayed`,
  );
  if (r.truncated)
    out.line(
      `  (the window held more than ${r.maxJobs} jobs: only those ready before its end shown here count)`,
    );
  out.line(
    r.workers === undefined
      ? "  workers: as many at once as the limits allow"
      : `  workers: at most ${r.workers} at once (the most that ran at once in the window)`,
  );
  out.line("");
  out.table(
    ["", "CURRENT", "PROPOSED"],
    [
      ...limitRows(cur?.limits, pro?.limits),
      ["peak backlog", cur?.peakBacklog ?? 0, pro?.peakBacklog ?? 0],
      ["mean wait", span(cur?.meanWaitMs ?? 0), span(pro?.meanWaitMs ?? 0)],
      ["longest wait", span(cur?.maxWaitMs ?? 0), span(pro?.maxWaitMs ?? 0)],
      ["not started by the end", cur?.notStartedByEnd ?? 0, pro?.notStartedByEnd ?? 0],
    ],
  );
  out.line("");
  out.fields([
    [`jobs delayed by ${span(r.minDelayMs)} or more`, `${r.delayed} of ${r.jobs}`],
    ["longest extra wait", span(r.longestExtraWaitMs)],
    [`jobs started ${span(r.minDelayMs)} or more sooner`, r.sooner],
  ]);
  out.line("nothing was changed (dry run)");
}

function limitRows(a: DryRunLimits | undefined, b: DryRunLimits | undefined): string[][] {
  const rows: [string, (l: DryRunLimits | undefined) => string][] = [
    [
      "max_running",
      (l) =>
        l?.adaptive
          ? `adaptive ${l.adaptive.min}..${l.adaptive.max}, target ${span(l.adaptive.targetLatencyMs)}`
          : l?.maxRunning === undefined
            ? "-"
            : String(l.maxRunning),
    ],
    ["throttle", (l) => (l?.throttle ? `${l.throttle.limit} per ${span(l.throttle.periodMs)}` : "-")],
    [
      "claim rate",
      (l) =>
        l?.claimRatePerMinute === undefined ? "-" : `${l.claimRatePerMinute}/min, burst ${l.claimBurst ?? 1}`,
    ],
  ];
  if (a?.flowLimit || b?.flowLimit) {
    const key = a?.flowLimit?.flowKey ?? b?.flowLimit?.flowKey;
    rows.push([
      `flow key ${key}`,
      (l) => (l?.flowLimit ? `${l.flowLimit.ratePerMinute}/min, burst ${l.flowLimit.burst}` : "unlimited"),
    ]);
  }
  return rows.map(([label, show]) => [label, show(a), show(b)]);
}

/** A duration for people: ms below a second, then s, then min, then h. */
export function span(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${trim(ms / 1000)} s`;
  if (ms < 3_600_000) return `${trim(ms / 60_000)} min`;
  return `${trim(ms / 3_600_000)} h`;
}

const trim = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
