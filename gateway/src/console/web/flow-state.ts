import { h } from "./dom.js";
import { count, counted, period, words } from "./format.js";
import type { HealthJson, SettingsJson } from "./queues-model.js";
import { dateTime } from "./time.js";

/**
 * Every flow-control setting of a queue and its breaker's live state, as a definition list: what
 * each gate is set to, and "off" for a gate that is not. `settings` is null for a queue that only
 * has jobs (nothing configured).
 */
export function flowState(
  settings: SettingsJson | null,
  health: HealthJson | null,
  now: number,
): HTMLElement {
  const s = settings ?? { name: "" };
  const items: [string, string][] = [
    ["Paused", s.paused ? "yes: workers get PAUSED" : "no"],
    ["Max running", s.maxRunning !== undefined ? count(s.maxRunning) : "off"],
    ...adaptive(s),
    [
      "Throttle",
      s.throttle
        ? `${count(s.throttle.limit ?? 0)} per ${period(s.throttle.periodMs ?? 0)} (${
            s.throttle.source === "THROTTLE_SOURCE_CONFIG" ? "config file" : "console / API"
          })`
        : "off",
    ],
    [
      "Claim rate",
      s.claimRatePerMinute !== undefined
        ? `${count(s.claimRatePerMinute)} per minute, burst ${count(s.claimBurst ?? 1)}`
        : "off",
    ],
    ["Slow-start ramp", ramp(s, now)],
    [
      "Priority aging",
      s.priorityAgingSeconds ? `+1 per ${count(s.priorityAgingSeconds)} s waited` : "off (strict)",
    ],
    ["Default TTL", s.defaultTtlSeconds ? `${count(s.defaultTtlSeconds)} s` : "none"],
    ["Notify", s.notifyMode ? words(s.notifyMode) : "always"],
    ...breaker(s, health),
  ];
  return h("dl", { class: "flow-state" }, ...items.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function adaptive(s: SettingsJson): [string, string][] {
  const a = s.adaptive;
  if (!a) return [];
  return [
    [
      "Adaptive",
      `${count(a.min ?? 0)} to ${count(a.max ?? 0)}, average run time under ${count(a.targetLatencyMs ?? 0)} ms${
        a.slowStart ? " (slow start)" : ""
      }; fixed cap when off: ${a.fixedMaxRunning !== undefined ? count(a.fixedMaxRunning) : "none"}`,
    ],
    ["Last decision", `${a.reason ?? "none yet"}${a.decidedAt ? `, at ${dateTime(a.decidedAt)}` : ""}`],
  ];
}

function ramp(s: SettingsJson, now: number): string {
  if (!s.rampSeconds) return "off";
  const started = s.rampStartedAt ? Date.parse(s.rampStartedAt) : null;
  if (started === null) return `${count(s.rampSeconds)} s after each resume or breaker close`;
  const done = (now - started) / 1000 / s.rampSeconds;
  if (done >= 1) return `${count(s.rampSeconds)} s (done)`;
  return `${count(s.rampSeconds)} s: ${Math.max(0, Math.floor(done * 100))}% of the way`;
}

function breaker(s: SettingsJson, health: HealthJson | null): [string, string][] {
  const b = s.breaker;
  if (!b) return [["Breaker", "off"]];
  const live = health?.detail?.breaker;
  const state = words((live?.state ?? b.state?.replace("BREAKER_STATE_", "") ?? "closed").toLowerCase());
  const rows: [string, string][] = [
    ["Breaker", state],
    [
      "Trips after",
      `${counted(b.failureThreshold ?? 0, "failure")} in a row (streak now ${count(b.failureStreak ?? 0)}); cooldown ${count(
        b.cooldownSeconds ?? 0,
      )} s; ${counted(b.halfOpenSuccesses ?? 1, "probe success", "probe successes")} ${
        (b.halfOpenSuccesses ?? 1) === 1 ? "closes" : "close"
      } it`,
    ],
    [
      "Opened",
      `${counted(b.openedTotal ?? 0, "time")}${b.trippedAt ? `, last at ${dateTime(b.trippedAt)}` : ""}`,
    ],
  ];
  if (live?.reopens_at) rows.push(["Half-opens at", dateTime(live.reopens_at)]);
  if (b.probeJobId) rows.push(["Probe", `job ${b.probeJobId} (${count(b.probeSuccesses ?? 0)} succeeded)`]);
  if (b.rate)
    rows.push([
      "Rate trigger",
      `failure ratio above ${b.rate.failureRatio ?? 0} over ${count(b.rate.windowSeconds ?? 0)} s, at least ${count(
        b.rate.minVolume ?? 0,
      )} settles`,
    ]);
  if (b.latency)
    rows.push([
      "Latency trigger",
      `average above ${count(b.latency.thresholdMs ?? 0)} ms over ${count(b.latency.windowSeconds ?? 0)} s, at least ${count(
        b.latency.minVolume ?? 0,
      )} settles`,
    ]);
  return rows;
}
