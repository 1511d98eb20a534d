import { HandlerEventKind } from "@taskq/sdk/conformance";
import { leaseKey } from "../trace.js";
import type { CheckContext, Failures } from "./check.js";

/**
 * Checked in every case: the program spoke the protocol, exited cleanly, sent its token on every call,
 * fenced every write with a lease it was handed, and released (gave back unstarted) only jobs it never
 * started.
 */
export function hygiene({ views, token }: CheckContext): Failures {
  const out: Failures = [];
  const { trace } = views;
  for (const e of trace.of("protocol_error")) out.push(`protocol: ${e.detail}`);
  if (views.readyT === undefined) out.push("the program never answered Ready");
  if (views.stopT !== undefined && views.stoppedT === undefined)
    out.push("the program never answered Stopped");
  if (!views.exit) out.push("the program did not exit");
  else if (views.exit.code !== 0)
    out.push(
      `the program exited with ${views.exit.signal ? `signal ${views.exit.signal}` : `code ${views.exit.code}`}`,
    );
  if (token)
    for (const e of trace.of("open"))
      if (e.authorization !== `Bearer ${token}`)
        out.push(`the ${e.stream} call did not carry the bearer token`);
  for (const e of trace.of("settle"))
    for (const s of e.req.settlements) {
      const key = s.lease ? leaseKey(s.lease.jobId, s.lease.attempt) : "(no lease)";
      if (!views.leases.has(key)) out.push(`settle names lease ${key}, which was never handed out`);
    }
  for (const e of trace.of("beat"))
    for (const ref of e.req.leases) {
      const key = leaseKey(ref.jobId, ref.attempt);
      if (!views.leases.has(key)) out.push(`heartbeat names lease ${key}, which was never handed out`);
    }
  const started = new Set(
    trace
      .of("handler")
      .filter((e) => e.event.kind === HandlerEventKind.STARTED)
      .map((e) => leaseKey(e.event.jobId, e.event.attempt)),
  );
  for (const l of views.leases.values())
    if (l.settles[0]?.settlement.outcome.case === "released" && started.has(l.key))
      out.push(`lease ${l.key} was settled released, but its handler had started`);
  return [...new Set(out)];
}
