import type { LeaseKey, Settlement } from "../store/types.js";

/**
 * The i-th settle of a batch that has every kind, in turn: success, failure retried in a minute, failure
 * not retried, cancel, release. A batch of them takes the settle's statement for anything but successes.
 */
export function settleOfEveryKind(lease: LeaseKey, i: number): Settlement {
  const error = { message: "boom", type: "Error", retryable: true };
  switch (i % 5) {
    case 0:
      return { ...lease, kind: "success", result: new Uint8Array() };
    case 1:
      return { ...lease, kind: "failure", error, delayMs: 60_000 };
    case 2:
      return { ...lease, kind: "failure", error, delayMs: null };
    case 3:
      return { ...lease, kind: "cancel", reason: "test" };
    default:
      return { ...lease, kind: "release", reason: "test" };
  }
}
