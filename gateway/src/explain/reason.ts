import type { JsonValue } from "@bufbuild/protobuf";
import type { GateName } from "../gates/gates.js";
import type { ReasonName } from "../gates/verdict.js";

/** What explain lists, in this order: before the gates, the gates (gates/gates.ts), after them. */
export type ReasonGate = "scheduled" | GateName | "position" | "ttl" | "workers" | "lease" | "prefetch";

/** One thing that holds a job back, or would (the wire's ExplainReason). */
export interface Reason {
  gate: ReasonGate;
  /** The verdict a worker is answered when this gate declines; null for what is not a gate. */
  verdict: ReasonName | null;
  /** Holds the job back now (else it only shapes when the job starts). */
  blocking: boolean;
  summary: string;
  /** Counts and limits as numbers, durations in ms, times as ISO strings (see {@link iso}). */
  figures: { [name: string]: JsonValue };
  /** When it next lets a job through (ttl: when the job expires), ms since the epoch; null: unknown. */
  nextAtMs: number | null;
  /** The most jobs per ms it lets through while it binds, for the estimate; unset: no such bound. */
  perMs?: number;
}

/** A time for figures and summaries: ISO 8601 in UTC, whole ms. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A wait for people: "850 ms", "12 s", "4 min 5 s", "2 h 3 min". */
export function wait(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ""}`;
  const m = Math.round(s / 60);
  return `${Math.floor(m / 60)} h${m % 60 ? ` ${m % 60} min` : ""}`;
}
