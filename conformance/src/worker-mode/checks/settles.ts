import { equals } from "@bufbuild/protobuf";
import { durationMs } from "@bufbuild/protobuf/wkt";
import type { SettleCount, Settled } from "@taskq/sdk/conformance";
import { Outcome } from "@taskq/sdk/conformance";
import { SettlementSchema } from "@taskq/sdk/proto";
import { ms } from "../views.js";
import type { CheckContext, Failures } from "./check.js";

const wanted: Record<Outcome, string[]> = {
  [Outcome.UNSPECIFIED]: [],
  [Outcome.SUCCESS]: ["success"],
  [Outcome.FAILURE]: ["failure"],
  [Outcome.CANCELLED]: ["cancelled"],
  [Outcome.FAILURE_OR_CANCELLED]: ["failure", "cancelled"],
  [Outcome.RELEASED]: ["released"],
};

export function settled({ views }: CheckContext, c: Settled): Failures {
  const l = views.lease(c.jobId);
  if (!l) return [`job ${c.jobId} was never handed out`];
  const first = l.settles[0];
  if (!first) return [`job ${c.jobId} was never settled`];
  const s = first.settlement;
  const out: Failures = [];
  const kind = s.outcome.case ?? "nothing";
  if (c.outcome !== Outcome.UNSPECIFIED && !wanted[c.outcome].includes(kind))
    out.push(`job ${c.jobId} settled as ${kind}, want ${wanted[c.outcome].join(" or ")}`);
  if (s.outcome.case === "success" && c.result) {
    const got = new TextDecoder().decode(s.outcome.value.result);
    if (got !== c.result)
      out.push(`job ${c.jobId} result is ${JSON.stringify(got)}, want ${JSON.stringify(c.result)}`);
  }
  if (s.outcome.case === "failure" && c.failure) {
    const f = s.outcome.value;
    const want = c.failure;
    if (f.type !== want.type) out.push(`job ${c.jobId} failure type is "${f.type}", want "${want.type}"`);
    if (f.message !== want.message)
      out.push(`job ${c.jobId} failure message is "${f.message}", want "${want.message}"`);
    if (f.retryable !== want.retryable)
      out.push(`job ${c.jobId} failure retryable is ${f.retryable}, want ${want.retryable}`);
    if (want.retryAfter) {
      const got = f.retryAfter ? durationMs(f.retryAfter) : undefined;
      if (got !== durationMs(want.retryAfter))
        out.push(
          `job ${c.jobId} failure retry_after is ${got ?? "unset"} ms, want ${durationMs(want.retryAfter)} ms`,
        );
    }
  }
  if (c.failureRetryable && s.outcome.case === "failure" && !s.outcome.value.retryable)
    out.push(`job ${c.jobId} failed with retryable false, want a retryable failure (a retry can finish it)`);
  if (c.durationAtLeast) {
    const got = s.duration ? durationMs(s.duration) : 0;
    if (got < durationMs(c.durationAtLeast))
      out.push(
        `job ${c.jobId} settled with duration ${ms(got)}, want at least ${ms(durationMs(c.durationAtLeast))}`,
      );
  }
  if (c.withinAfterStop) {
    const limit = durationMs(c.withinAfterStop);
    if (views.stopT === undefined) out.push("the case never sent a stop");
    else if (first.t - views.stopT > limit)
      out.push(
        `job ${c.jobId} settled ${ms(first.t - views.stopT)} after the stop, want within ${ms(limit)}`,
      );
  }
  return out;
}

export function settleCount({ views }: CheckContext, c: SettleCount): Failures {
  const leases = c.jobId ? [views.lease(c.jobId)] : [...views.leases.values()];
  const out: Failures = [];
  if (c.jobId && !leases[0]) return [`job ${c.jobId} was never handed out`];
  for (const l of leases) {
    if (!l) continue;
    const n = l.settles.length;
    if (n < c.atLeast) out.push(`lease ${l.key} settle sent ${n} times, want at least ${c.atLeast}`);
    if (c.atMost !== undefined && n > c.atMost)
      out.push(`lease ${l.key} settle sent ${n} times, want at most ${c.atMost}`);
    if (c.identical && l.settles.length > 1) {
      const [a, ...rest] = l.settles.map((x) => ({ ...x.settlement, duration: undefined }));
      if (a && rest.some((b) => !equals(SettlementSchema, a, b)))
        out.push(`lease ${l.key} was re-sent with a different settlement`);
    }
  }
  return out;
}
