import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { sharedWhileInFlight } from "./shared-while-in-flight.js";
import type { QueueStore } from "./store/queue-store.js";
import type { Store } from "./store/store.js";

/**
 * The gateway's Prometheus metrics, on a registry of its own (several gateways may share a process in
 * tests). Claim rates meter starts (jobs claimed); max_running meters running jobs.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly claimed = new Counter({
    name: "taskq_jobs_claimed_total",
    help: "Jobs handed to workers (work starts), by queue.",
    labelNames: ["queue"],
    registers: [this.registry],
  });
  readonly throttled = new Counter({
    name: "taskq_throttled_verdicts_total",
    help: "Polls a gate declined, by queue and reason (PAUSED, MAX_RUNNING, THROTTLE, RATE_LIMIT, FLOW_KEY, RAMPING, ...).",
    labelNames: ["queue", "reason"],
    registers: [this.registry],
  });
  readonly claimSeconds = new Histogram({
    name: "taskq_claim_duration_seconds",
    help: "Time to answer a poll that was not parked waiting for work (gates and the claim statement).",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly settled = new Counter({
    name: "taskq_settles_total",
    help: "Settlements answered, by outcome (success, failure, cancel, release) and status (accepted, lease_lost, conflict, not_found).",
    labelNames: ["outcome", "status"],
    registers: [this.registry],
  });
  readonly limiterErrors = new Counter({
    name: "taskq_limiter_errors_total",
    help: "Limiter (Redis) calls that failed; the poll is answered with UNAVAILABLE.",
    registers: [this.registry],
  });
  readonly authDenied = new Counter({
    name: "taskq_auth_denied_total",
    help: "Calls refused by authentication (unauthenticated: no or unknown token) or the role matrix (permission_denied).",
    labelNames: ["reason"],
    registers: [this.registry],
  });
  readonly openStreams = new Gauge({
    name: "taskq_open_streams",
    help: "Worker streams open on this gateway, by rpc (claim, settle, heartbeat): handlers started and not yet ended.",
    labelNames: ["rpc"],
    registers: [this.registry],
  });

  readonly tlsReloads = new Counter({
    name: "taskq_tls_reloads_total",
    help: "Certificate files re-read after a change, by result (ok; error: the previous certificate is still served).",
    labelNames: ["result"],
    registers: [this.registry],
  });
  readonly tokenReloads = new Counter({
    name: "taskq_token_reloads_total",
    help: "tokensFile re-reads after a change, by result (ok; error: the previous tokens stay in force).",
    labelNames: ["result"],
    registers: [this.registry],
  });
  readonly tokensRevoked = new Counter({
    name: "taskq_tokens_revoked_total",
    help: "Tokens removed from tokensFile by a reload (their calls and open streams are refused from then on).",
    registers: [this.registry],
  });

  readonly configDisagreement = new Gauge({
    name: "taskq_config_disagreement",
    help: "1 when this gateway's config file disagrees with the fleet's config throttles (an older or different config: its throttles were not applied), else 0.",
    registers: [this.registry],
  });

  constructor(store: Store, queues: QueueStore) {
    // Each rpc is printed from the start (0), so a scrape never has to tell "none open" from "absent".
    for (const rpc of ["claim", "settle", "heartbeat"]) this.openStreams.set({ rpc }, 0);
    // Levels are read from Postgres when scraped, so every gateway reports the same fleet-wide numbers.
    // The collectors of one scrape run together, and share one read of the queue list.
    const queueList = sharedWhileInFlight(() => queues.queuesList());
    const levels = new Gauge({
      name: "taskq_jobs",
      help: "Jobs by queue and state (scheduled, queued, running), fleet-wide.",
      labelNames: ["queue", "state"],
      registers: [this.registry],
      collect: async () => {
        levels.reset();
        for (const r of await store.jobLevels()) levels.set({ queue: r.queue, state: r.state }, r.count);
      },
    });
    const adaptive = new Gauge({
      name: "taskq_adaptive_max_running",
      help: "The adaptive limit on running jobs each queue has now (its max_running), fleet-wide; queues without an adaptive limit are absent.",
      labelNames: ["queue"],
      registers: [this.registry],
      collect: async () => {
        adaptive.reset();
        for (const q of await queueList())
          if (q.settings.adaptive && q.settings.max_running !== null)
            adaptive.set({ queue: q.name }, q.settings.max_running);
      },
    });
    const breakers = new Gauge({
      name: "taskq_breaker_state",
      help: "1 for the state each queue's circuit breaker is in (closed, open, half_open), fleet-wide; queues without a breaker are absent.",
      labelNames: ["queue", "state"],
      registers: [this.registry],
      collect: async () => {
        breakers.reset();
        for (const q of await queueList()) {
          if (!q.settings.breaker) continue;
          for (const state of ["closed", "open", "half_open"])
            breakers.set({ queue: q.name, state }, q.settings.breaker.state === state ? 1 : 0);
        }
      },
    });
  }
}
