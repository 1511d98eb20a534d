import type { GateName } from "../gates/gates.js";
import { rampStartWithin } from "../gates/ramp.js";
import { LimiterUnavailableError } from "../limiter/fail-closed.js";
import {
  flowRateKey,
  type Limiter,
  queueRateKey,
  THROTTLE_HOLD_MS,
  throttleEarlyMs,
  throttleIntervalMs,
} from "../limiter/limiter.js";
import type { ExplainedJobRow, QueueFactsRow } from "../store/explain-store.js";
import type { FlowLimitRow, QueueSettings } from "../store/queue-store.js";
import { iso, type Reason } from "./reason.js";

/** What a gate reader sees: the queue's settings as stored now, its facts, the limiter to peek. */
export interface GateContext {
  queue: string;
  /** null: the queue has no settings, so no gate applies. */
  settings: QueueSettings | null;
  /** The job explained; null when a queue with none waiting is explained. */
  job: ExplainedJobRow | null;
  facts: QueueFactsRow;
  limiter: Limiter;
  flowLimits: () => Promise<Map<string, FlowLimitRow>>;
  nowMs: number;
}

/** A gate's state now, as a reason; null when the gate is off for this queue (or job). */
type GateReader = (c: GateContext) => Promise<Reason | null>;

/**
 * One reader per gate of gates/gates.ts, keyed by its name (a gate added there needs one here). Each
 * reads the state its gate decides on, as the claim does, and takes nothing: Postgres figures are
 * plain reads, Redis ones the limiter's peeks (the same scripts as the takes, told to write nothing).
 */
export const GATE_READERS: Record<GateName, GateReader> = {
  async paused({ settings, facts }) {
    if (!settings?.paused) return null;
    const by = facts.paused_by;
    return {
      gate: "paused",
      verdict: "PAUSED",
      blocking: true,
      summary: `paused${by ? ` since ${iso(by.at_ms)} by ${by.actor}` : ""}: nothing is claimed until it is resumed`,
      figures: { since: by ? iso(by.at_ms) : null, by: by?.actor ?? null },
      nextAtMs: null,
    };
  },

  async breaker({ settings, facts, nowMs }) {
    const b = settings?.breaker;
    if (!b || b.state === "closed") return null;
    const opened = facts.breaker_opened;
    const trippedMs = b.tripped_at ? Date.parse(b.tripped_at) : null;
    const cooldownEndsMs = trippedMs === null ? null : trippedMs + b.cooldown_seconds * 1000;
    const trigger = opened
      ? opened.event === "queue.trip_breaker"
        ? `tripped by ${opened.actor ?? "an operator"}`
        : `${String(opened.data.trigger ?? "a trigger")} trigger${opened.job_id ? ` (job ${opened.job_id})` : ""}`
      : "unknown";
    const figures = {
      state: b.state,
      opened_at: trippedMs === null ? null : iso(trippedMs),
      trigger,
      cooldown_seconds: b.cooldown_seconds,
      cooldown_ends_at: cooldownEndsMs === null ? null : iso(cooldownEndsMs),
      probe_job_id: b.probe_job_id,
      probe_successes: b.probe_successes,
      half_open_successes: b.half_open_successes,
    };
    if (b.state === "open" && cooldownEndsMs !== null && nowMs < cooldownEndsMs)
      return {
        gate: "breaker",
        verdict: "BREAKER_OPEN",
        blocking: true,
        summary: `breaker open since ${figures.opened_at} (${trigger}); cooldown ends at ${figures.cooldown_ends_at}, then one probe job`,
        figures,
        nextAtMs: cooldownEndsMs,
        perMs: 0,
      };
    if (b.state === "half_open" && b.probe_job_id !== null)
      return {
        gate: "breaker",
        verdict: "BREAKER_PROBING",
        blocking: true,
        summary: `breaker half-open: probe job ${b.probe_job_id} is out (${b.probe_successes} of ${b.half_open_successes} probe successes); nothing else is claimed until it settles`,
        figures,
        nextAtMs: null,
        perMs: 0,
      };
    return {
      gate: "breaker",
      verdict: "BREAKER_PROBING",
      blocking: false,
      summary: `breaker ${b.state === "open" ? "open past its cooldown" : "half-open"}: the next claim takes one job, the probe, and no other until it settles`,
      figures,
      nextAtMs: null,
    };
  },

  async max_running({ settings, facts, nowMs }) {
    if (!settings || settings.max_running === null || facts.cap === null) return null;
    const cap = facts.cap;
    const ramped = cap < settings.max_running;
    const full = facts.running >= cap;
    const capText = ramped
      ? `the ramp's cap ${cap} (of max_running ${settings.max_running})`
      : `max_running ${cap}`;
    // A place frees when a running job settles: the longest-running one, after the queue's usual run time.
    const avg = facts.avg_run_ms;
    const freesMs =
      avg !== null && facts.oldest_running_ms !== null
        ? Math.max(nowMs, facts.oldest_running_ms + avg)
        : null;
    // An adaptive limit says where it stands and why: "max_running 14 of adaptive 2..200: latency 620 ms
    // over target 500".
    const a = settings.adaptive;
    const adaptive = a
      ? `; max_running ${settings.max_running} of adaptive ${a.min}..${a.max}${a.reason ? `: ${a.reason}` : ""}`
      : "";
    return {
      gate: "max_running",
      verdict: ramped ? "RAMPING" : "MAX_RUNNING",
      blocking: full,
      summary: `${
        full
          ? `${facts.running} running, at ${capText}: a place frees when one of them settles${freesMs !== null ? ` (about ${iso(freesMs)}, at the queue's average run time of ${Math.round(avg ?? 0)} ms)` : ""}`
          : `${facts.running} running of ${capText}: room for ${cap - facts.running}`
      }${adaptive}`,
      figures: {
        running: facts.running,
        max_running: settings.max_running,
        cap_now: cap,
        avg_run_ms: avg,
        place_frees_at: full && freesMs !== null ? iso(freesMs) : null,
        ...(a
          ? {
              adaptive_min: a.min,
              adaptive_max: a.max,
              adaptive_target_latency_ms: a.target_latency_ms,
              adaptive_reason: a.reason,
              adaptive_decided_at: a.decided_at ? iso(Date.parse(a.decided_at)) : null,
            }
          : {}),
      },
      nextAtMs: full ? freesMs : null,
      ...(avg ? { perMs: cap / avg } : {}),
    };
  },

  async throttle({ settings, queue, limiter }) {
    const t = settings?.throttle;
    if (!settings || !t) return null;
    const interval = throttleIntervalMs(t.limit, t.period_ms);
    const options = {
      version: settings.throttle_version ?? 0,
      earlyMs: throttleEarlyMs(interval),
      holdMs: THROTTLE_HOLD_MS,
    };
    const figures = { limit: t.limit, period_ms: t.period_ms, interval_ms: interval, source: t.source };
    return peeking("throttle", "THROTTLE", async () => {
      const p = await limiter.throttlePeek(queue, interval, options);
      const next = iso(p.nextMs);
      return {
        gate: "throttle",
        verdict: "THROTTLE",
        blocking: !p.free,
        summary: p.free
          ? `throttle ${t.limit} per ${t.period_ms} ms (one claim every ${interval} ms): the slot is free`
          : `throttle ${t.limit} per ${t.period_ms} ms (one claim every ${interval} ms): next slot frees at ${next}${p.held ? " (a claim holds the current one)" : ""}`,
        figures: { ...figures, next_slot_at: next, slot_held: p.held },
        nextAtMs: p.nextMs,
        perMs: 1 / interval,
      };
    });
  },

  async claim_rate({ settings, queue, limiter }) {
    const rate = settings?.claim_rate_per_minute ?? null;
    if (!settings || rate === null) return null;
    const burst = settings.claim_burst ?? 1;
    return peeking("claim_rate", "RATE_LIMIT", async () => {
      const p = await limiter.ratePeek(queueRateKey(queue), rate, burst);
      const nextMs = p.nowMs + p.retryAfterMs;
      return {
        gate: "claim_rate",
        verdict: "RATE_LIMIT",
        blocking: p.available === 0,
        summary: `claim rate ${rate}/min, burst ${burst}: ${p.available} token${p.available === 1 ? "" : "s"} now${p.available === 0 ? `, next at ${iso(nextMs)}` : ""}`,
        figures: { rate_per_minute: rate, burst, tokens_now: p.available, next_token_at: iso(nextMs) },
        nextAtMs: nextMs,
        perMs: rate / 60_000,
      };
    });
  },

  async ramp({ settings, queue, limiter, nowMs }) {
    if (!settings || settings.ramp_seconds === null) return null;
    const start = rampStartWithin(settings, nowMs);
    if (start === null) return null;
    const windowMs = settings.ramp_seconds * 1000;
    const endsAt = iso(start + windowMs);
    const figures = { ramp_seconds: settings.ramp_seconds, started_at: iso(start), ends_at: endsAt };
    const rate = settings.claim_rate_per_minute;
    if (rate === null)
      return {
        gate: "ramp",
        verdict: "RAMPING",
        blocking: false,
        summary: `slow-start ramp until ${endsAt}: it scales max_running (see max_running)`,
        figures,
        nextAtMs: null,
      };
    return peeking("ramp", "RAMPING", async () => {
      const p = await limiter.rampPeek(queue, start, windowMs, rate);
      const nextMs = p.nowMs + p.retryAfterMs;
      return {
        gate: "ramp",
        verdict: "RAMPING",
        blocking: p.available === 0,
        summary: `slow-start ramp of the claim rate until ${endsAt}: ${p.available === 0 ? `next claim allowed at ${iso(nextMs)}` : `${p.available} claim${p.available === 1 ? "" : "s"} allowed now`}`,
        figures: { ...figures, claims_now: p.available, next_at: iso(nextMs) },
        nextAtMs: nextMs,
      };
    });
  },

  async flow_key({ job, limiter, flowLimits }) {
    const key = job?.flow_key ?? null;
    if (key === null) return null;
    const limit = (await flowLimits()).get(key);
    if (!limit) return null;
    return peeking("flow_key", "FLOW_KEY", async () => {
      const p = await limiter.ratePeek(flowRateKey(key), limit.ratePerMinute, limit.burst);
      const nextMs = p.nowMs + p.retryAfterMs;
      return {
        gate: "flow_key",
        verdict: "FLOW_KEY",
        blocking: p.available === 0,
        summary: `flow key ${key}: ${limit.ratePerMinute}/min, burst ${limit.burst} across all queues: ${p.available} token${p.available === 1 ? "" : "s"} now${p.available === 0 ? `, next at ${iso(nextMs)}` : ""}`,
        figures: {
          flow_key: key,
          rate_per_minute: limit.ratePerMinute,
          burst: limit.burst,
          tokens_now: p.available,
          next_token_at: iso(nextMs),
        },
        nextAtMs: nextMs,
        perMs: limit.ratePerMinute / 60_000,
      };
    });
  },
};

/**
 * A Redis gate's reading; with Redis unreachable, the gate declines (it fails closed), and says so.
 */
async function peeking(
  gate: GateName,
  verdict: Reason["verdict"],
  read: () => Promise<Reason>,
): Promise<Reason> {
  try {
    return await read();
  } catch (err) {
    if (!(err instanceof LimiterUnavailableError)) throw err;
    return {
      gate,
      verdict,
      blocking: true,
      summary: `the limiter (Redis) cannot be reached: this gate declines every claim until it can (${err.message})`,
      figures: { limiter_error: err.message },
      nextAtMs: null,
    };
  }
}
