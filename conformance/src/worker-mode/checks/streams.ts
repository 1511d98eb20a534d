import { durationMs } from "@bufbuild/protobuf/wkt";
import { type ReconnectBackoff, Stream, type StreamOpens } from "@taskq/sdk/conformance";
import type { StreamName } from "../trace.js";
import { ms, type TraceViews } from "../views.js";
import type { CheckContext, Failures } from "./check.js";

const names: Record<Stream, StreamName | undefined> = {
  [Stream.UNSPECIFIED]: undefined,
  [Stream.CLAIM]: "claim",
  [Stream.HEARTBEAT]: "heartbeat",
  [Stream.SETTLE]: "settle",
};

function streamName(s: Stream): StreamName {
  const n = names[s];
  if (!n) throw new Error("the check names no stream");
  return n;
}

export function streamOpens({ views }: CheckContext, c: StreamOpens): Failures {
  const name = streamName(c.stream);
  const n = views.trace.of("open").filter((e) => e.stream === name).length;
  if (n < c.atLeast) return [`the ${name} stream was opened ${n} times, want at least ${c.atLeast}`];
  if (c.atMost !== undefined && n > c.atMost)
    return [`the ${name} stream was opened ${n} times, want at most ${c.atMost}`];
  return [];
}

const answerType = { claim: "claim_answer", heartbeat: "beat_answer", settle: "settle_answer" } as const;

/** Waits between each scripted failure of the stream and its next opening, split into runs of
 * consecutive failures (no answered request in between). */
function waits(views: TraceViews, name: StreamName) {
  const runs: Array<{ afterAnswer: boolean; gaps: Array<{ failT: number; gap: number | undefined }> }> = [];
  let answeredSinceFail = true;
  let sawAnswer = false;
  for (const e of views.trace.events) {
    if (e.type === answerType[name]) {
      answeredSinceFail = true;
      sawAnswer = true;
    } else if (e.type === "fail" && e.stream === name) {
      if (answeredSinceFail) runs.push({ afterAnswer: sawAnswer, gaps: [] });
      answeredSinceFail = false;
      const reopen = views.trace.events.find((o) => o.type === "open" && o.stream === name && o.t > e.t);
      runs.at(-1)?.gaps.push({ failT: e.t, gap: reopen ? reopen.t - e.t : undefined });
    }
  }
  return runs;
}

export function reconnectBackoff({ views }: CheckContext, c: ReconnectBackoff): Failures {
  const name = streamName(c.stream);
  const first = c.firstAtLeast ? durationMs(c.firstAtLeast) : 0;
  const cap = c.allAtMost ? durationMs(c.allAtMost) : Number.POSITIVE_INFINITY;
  const out: Failures = [];
  const runs = waits(views, name);
  if (runs.length === 0) return [`the ${name} stream never failed: the case does not exercise this check`];
  for (const run of runs) {
    for (const [i, { failT, gap }] of run.gaps.entries()) {
      if (gap === undefined) {
        if (views.endT - failT > cap && (views.stopT ?? views.endT) > failT + cap)
          out.push(`the ${name} stream failed at ${ms(failT)} and was never reopened`);
        continue;
      }
      if (i === 0 && gap < first)
        out.push(`reopened ${name} ${ms(gap)} after a failure, want at least ${ms(first)}`);
      if (gap > cap) out.push(`reopened ${name} ${ms(gap)} after a failure, want at most ${ms(cap)}`);
    }
    const gaps = run.gaps.map((g) => g.gap).filter((g): g is number => g !== undefined);
    const [g0] = gaps;
    // Growth compares the shorter of the first two waits with the longer of the last two, so one wait
    // stretched by a loaded machine (seen: 300 ms for a 100 ms wait, as other programs started) does
    // not hide it; waits that never grow still fail.
    const early = Math.min(...gaps.slice(0, 2));
    const late = Math.max(...gaps.slice(-2));
    if (c.growth > 0 && gaps.length >= 4 && late < c.growth * early)
      out.push(
        `waits ${gaps.map(ms).join(", ")} did not grow: the last two under ${c.growth} x the first two`,
      );
    if (c.afterSuccessAtMost && run.afterAnswer && g0 !== undefined && g0 > durationMs(c.afterSuccessAtMost))
      out.push(`after an answered request the first wait was ${ms(g0)}: the backoff did not reset`);
  }
  return out;
}
