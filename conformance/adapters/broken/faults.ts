import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Interceptor } from "@connectrpc/connect";
import type { StartWorker } from "@taskq/sdk/conformance";
import { LeaseState, SettleStatus, ThrottleReason } from "@taskq/sdk/proto";
import type { SdkVariant } from "../ts-sdk/sdk-adapter.js";
import {
  afterFirstCall,
  Code,
  cancelOnHalfClose,
  errorAs,
  givesUpAfter,
  type Message,
  onRequests,
  onResponses,
} from "./wire.js";

/** One broken worker: the SDK changed for the case it is started for. */
export type Fault = (start: StartWorker) => SdkVariant;

const wire =
  (...interceptors: Interceptor[]): Fault =>
  () => ({ interceptors });

const leaseKey = (ref: unknown) => {
  const r = ref as { jobId: string; attempt: number };
  return `${r.jobId}/${r.attempt}`;
};

/**
 * Asks for fewer jobs than it has free slots by the slots it leaked: `leaks(m)`, for each Heartbeat or
 * Settle answer, counts the slots that answer leaks. A poll with no slot left is never sent, as a worker
 * whose slots are all leaked polls no more.
 */
function leaksSlots(method: "Heartbeat" | "Settle", leaks: (m: Message) => number): Fault {
  return () => {
    let leaked = 0;
    return {
      interceptors: [
        onResponses(method, (m) => {
          leaked += leaks(m);
          return m;
        }),
        onRequests("Claim", (m) => {
          const maxJobs = (m.maxJobs as number) - leaked;
          return maxJobs > 0 ? { ...m, maxJobs } : null;
        }),
      ],
    };
  };
}

/**
 * Goes on heartbeating a lease until its settle is answered, not just sent: the leases of settles sent
 * and not yet answered ride along on every heartbeat (and their statuses are dropped from the answers).
 */
const beatsUntilSettleAnswered: Fault = () => {
  const unanswered = new Map<string, unknown>();
  const added: number[] = [];
  return {
    interceptors: [
      onRequests("Settle", (m) => {
        for (const s of m.settlements as Message[]) unanswered.set(leaseKey(s.lease), s.lease);
        return m;
      }),
      onResponses("Settle", (m) => {
        for (const r of m.results as Message[]) unanswered.delete(leaseKey(r.lease));
        return m;
      }),
      onRequests("Heartbeat", (m) => {
        const own = new Set((m.leases as unknown[]).map(leaseKey));
        const extra = [...unanswered].filter(([k]) => !own.has(k)).map(([, ref]) => ref);
        added.push(extra.length);
        return { ...m, leases: [...(m.leases as unknown[]), ...extra] };
      }),
      onResponses("Heartbeat", (m) => {
        const n = added.shift() ?? 0;
        const leases = m.leases as unknown[];
        return { ...m, leases: leases.slice(0, leases.length - n) };
      }),
    ],
  };
};

/**
 * Sizes each poll as its free slots plus its prefetch, forgetting the jobs that wait in its buffer: it
 * asks for concurrency + prefetch less the jobs running, not less every job held. The jobs it holds are
 * tracked on the wire (handed out; not yet settled, given back or lost); those past its concurrency wait
 * in its buffer, and each poll asks for that many more than the worker would.
 */
const forgetsBufferInMaxJobs: Fault = (start) => {
  const held = new Set<string>();
  const settled = (settlements: unknown) => {
    for (const s of settlements as Message[]) held.delete(leaseKey(s.lease));
  };
  return {
    interceptors: [
      onResponses("Claim", (m) => {
        for (const j of m.jobs as Message[]) held.add(leaseKey({ jobId: j.id, attempt: j.attempt }));
        return m;
      }),
      onRequests("Settle", (m) => {
        settled(m.settlements);
        return m;
      }),
      onResponses("Heartbeat", (m) => {
        for (const l of m.leases as Message[])
          if (l.state === LeaseState.LEASE_LOST) held.delete(leaseKey(l.lease));
        return m;
      }),
      onRequests("Claim", (m) => {
        settled(m.settlements);
        const buffered = Math.max(0, held.size - start.concurrency);
        return { ...m, maxJobs: (m.maxJobs as number) + buffered };
      }),
    ],
  };
};

/** Takes a verdict of `reason` for a plain throttle: it sleeps the queue, but keeps its buffer. */
const keepsBufferOn = (reason: ThrottleReason): Fault =>
  wire(
    onResponses("Claim", (m) => ({
      ...m,
      throttled: (m.throttled as Message[]).map((v) =>
        v.reason === reason ? { ...v, reason: ThrottleReason.THROTTLE } : v,
      ),
    })),
  );

/** Rewrites the failures it settles (on the Settle stream or riding a poll) as retryable false. */
function nonRetryable(settlements: unknown): Message[] {
  return (settlements as Message[]).map((s) => {
    const o = s.outcome as { case?: string; value?: Message };
    return o.case === "failure" && o.value?.type === "WorkerShutdown"
      ? { ...s, outcome: { case: "failure", value: { ...o.value, retryable: false } } }
      : s;
  });
}

/** One fault per behaviour the suite must catch; src/self-test.test.ts names the case aimed at each. */
export const faults = {
  /**
   * Takes a PAUSED verdict for a plain throttle: it sleeps the queue as it should, but keeps its
   * buffered jobs of that queue and starts them as slots free instead of giving them back.
   */
  "keeps-buffer-on-pause": keepsBufferOn(ThrottleReason.PAUSED),
  /** The same with a BREAKER_OPEN verdict (and gives its buffer back on PAUSED as it should). */
  "keeps-buffer-on-breaker-open": keepsBufferOn(ThrottleReason.BREAKER_OPEN),
  "forgets-buffer-in-max-jobs": forgetsBufferInMaxJobs,
  /** Does not say its concurrency and prefetch: the gateway cannot tell its free slots from its buffer. */
  "hides-slots": wire(onRequests("Claim", (m) => ({ ...m, concurrency: 0, prefetch: 0 }))),
  /**
   * Asks each poll for its buffer's room alone (max_jobs = prefetch: no free handler slot, as the
   * gateway reads it) and still long-polls it, as a worker that treats a top-up like any poll.
   */
  "top-up-waits": wire(
    onRequests("Claim", (m) => ({ ...m, maxJobs: Math.min(m.maxJobs as number, m.prefetch as number) })),
  ),
  /** Never sees a verdict, so polls a throttled queue again at once. */
  "ignores-retry-after": wire(onResponses("Claim", (m) => ({ ...m, throttled: [] }))),
  /** Drops the jobs of an answer that also carries a verdict for their queue. */
  "drops-jobs-with-verdict": wire(
    onResponses("Claim", (m) => {
      const sleeping = new Set((m.throttled as Message[]).map((v) => v.queue));
      return { ...m, jobs: (m.jobs as Message[]).filter((j) => !sleeping.has(j.queue)) };
    }),
  ),
  /** Forgets its sleeping queues when its Claim stream reconnects: the new stream polls every queue. */
  "forgets-sleeps-on-reconnect": (start) => {
    let first = true;
    return {
      interceptors: [
        afterFirstCall(
          "Claim",
          onRequests("Claim", (m) => {
            if (!first) return m;
            first = false;
            return { ...m, queues: [...start.queues] };
          }),
        ),
      ],
    };
  },
  /** Heartbeats never leave the worker. */
  "never-heartbeats": wire(onRequests("Heartbeat", () => null)),
  /** Ignores the claim's lease_deadline and assumes a 30 s lease, so beats a shorter one too late. */
  "assumes-default-lease": wire(
    onResponses("Claim", (m) => ({
      ...m,
      jobs: (m.jobs as Message[]).map((j) => ({ ...j, leaseDeadline: timestampFromMs(Date.now() + 30_000) })),
    })),
  ),
  "beats-until-settle-answered": beatsUntilSettleAnswered,
  /** Every settle request goes out twice. */
  "settles-twice": wire(onRequests("Settle", (m) => [m, m])),
  /** Takes a settle refused with INVALID_ARGUMENT for a passing failure, and re-sends it. */
  "resends-refused-settle": wire(errorAs("Settle", Code.InvalidArgument, Code.Unavailable)),
  /** Settles its shutdown stragglers as failures a retry cannot fix. */
  "stragglers-non-retryable": wire(
    onRequests("Settle", (m) => ({ ...m, settlements: nonRetryable(m.settlements) })),
    onRequests("Claim", (m) => ({ ...m, settlements: nonRetryable(m.settlements) })),
  ),
  /** Asks for three times as many jobs as it has free slots, and runs them all. */
  "exceeds-concurrency": wire(onRequests("Claim", (m) => ({ ...m, maxJobs: 3 * (m.maxJobs as number) }))),
  /** Always asks for its concurrency, however many of its slots are busy. */
  "asks-for-concurrency": (start) => ({
    interceptors: [onRequests("Claim", (m) => ({ ...m, maxJobs: start.concurrency }))],
  }),
  /** Never frees the slot of a job whose lease a heartbeat answer said was lost. */
  "leaks-slot-on-lease-lost": leaksSlots(
    "Heartbeat",
    (m) => (m.leases as Message[]).filter((l) => l.state === LeaseState.LEASE_LOST).length,
  ),
  /** Never frees the slot of a job whose settle was refused (CONFLICT or NOT_FOUND). */
  "leaks-slot-on-refused-settle": leaksSlots(
    "Settle",
    (m) =>
      (m.results as Message[]).filter(
        (r) => r.status === SettleStatus.CONFLICT || r.status === SettleStatus.NOT_FOUND,
      ).length,
  ),
  /** Polls with max_wait 0: an empty queue answers at once, and the worker asks again at once. */
  "hot-loops-on-empty": wire(onRequests("Claim", (m) => ({ ...m, maxWait: undefined }))),
  /**
   * Reconnects its Claim stream after UNAVAILABLE only: any other failure (RESOURCE_EXHAUSTED, INTERNAL,
   * a connection dropped mid-answer) and it never claims again.
   */
  "stops-claiming-on-other-status": wire(givesUpAfter("Claim", (code) => code !== Code.Unavailable)),
  /** Reconnect waits grow without the configured cap. */
  "uncapped-backoff": () => ({ reconnect: { maxMs: 3_600_000 } }),
  /** Reopens a failed stream at once, with no backoff. */
  "reopens-streams-at-once": () => ({ reconnect: { initialMs: 0 } }),
  /** Drains by cancelling its Claim stream instead of half-closing it. */
  "cancels-instead-of-half-closing": wire(cancelOnHalfClose("Claim")),
  /** Sends no credentials, whatever token it was given. */
  "drops-token": wire((next) => (req) => {
    req.header.delete("authorization");
    return next(req);
  }),
  /** Sends no credentials on its Settle stream. */
  "drops-token-on-settle": wire((next) => (req) => {
    if (req.method.name === "Settle") req.header.delete("authorization");
    return next(req);
  }),
} satisfies Record<string, Fault>;
