import type { Expectation, WorkerCase } from "@taskq/sdk/conformance";
import type { TraceViews } from "../views.js";

/** A check's verdict: the reasons it failed, none when it held. */
export type Failures = string[];

/** What every check sees. */
export interface CheckContext {
  views: TraceViews;
  case: WorkerCase;
  /** The bearer token the program was given; every call must carry it. */
  token?: string | undefined;
}

// Timers of most runtimes may fire up to a millisecond early against a monotonic clock: lower bounds
// allow this much, and no more.
export const CLOCK_SLACK_MS = 2;
// Two messages the worker wrote in order on different streams of one connection can reach the
// gateway's handlers a few ms apart in either order.
export const ORDER_SLACK_MS = 25;

/** The message of one kind of expectation, e.g. `CheckOf<"held">`. */
export type CheckOf<K extends NonNullable<Expectation["check"]["case"]>> = Extract<
  Expectation["check"],
  { case: K }
>["value"];
