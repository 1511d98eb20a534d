import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ClaimResponseSchema, JobSchema, SettleResponseSchema, SettleResultSchema } from "@taskq/sdk/proto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ClaimedJob, SettleOutcome } from "../store/types.js";
import { claimedJob, jobState } from "./convert.js";
import { claimResponse, settleResponse } from "./responses.js";

const text = fc.string({ maxLength: 20, unit: "binary" });
const epochMs = fc.double({ min: 0, max: 4_102_444_800_000, noNaN: true });
const claimed: fc.Arbitrary<ClaimedJob> = fc.record({
  id: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }).map(String),
  queue: text,
  attempt: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  maxAttempts: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  leaseDeadlineMs: epochMs,
  // Past 127 bytes a length takes two varint bytes; past 4 KiB a response outgrows its first buffer.
  payload: fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ minLength: 120, maxLength: 3000 })),
  contentType: text,
  priority: fc.integer({ min: -32768, max: 32767 }),
  flowKey: fc.option(text, { nil: null }),
  enqueuedAtMs: epochMs,
  headers: fc.dictionary(text, text, { maxKeys: 3 }),
});
const outcome: fc.Arbitrary<SettleOutcome> = fc.record({
  jobId: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }).map(String),
  attempt: fc.integer({ min: 0, max: 1_000_000 }),
  status: fc.constantFrom("accepted", "lease_lost", "conflict", "not_found"),
  state: fc.constantFrom("succeeded", "failed", "scheduled", "queued", "cancelled", null),
  nextRunAt: fc.option(
    epochMs.map((ms) => new Date(Math.floor(ms))),
    { nil: null },
  ),
  queue: fc.option(text, { nil: null }),
});
const verdict = fc.record({
  queue: text,
  reason: fc.constantFrom("PAUSED", "THROTTLE", "MAX_RUNNING") as fc.Arbitrary<"PAUSED">,
  retryAfterMs: fc.integer({ min: 0, max: 86_400_000 }),
});

/**
 * A message as protobuf-es's decoder gives it back: a map key `__proto__` does not survive it, and it
 * reads each string with a default TextDecoder, which drops a leading U+FEFF (a byte order mark).
 */
function asProtobufEsDecodes<T>(value: T): T {
  if (typeof value === "string") return value.replace(/^\uFEFF/, "") as T;
  if (Array.isArray(value)) return value.map(asProtobufEsDecodes) as T;
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value))
    if (k !== "__proto__") out[asProtobufEsDecodes(k)] = asProtobufEsDecodes(v);
  return out as T;
}

/** A job whose one header is named U+FEFF, which a property run once found. */
const bomHeaderJob: ClaimedJob = {
  id: "1",
  queue: "",
  attempt: 0,
  maxAttempts: 0,
  leaseDeadlineMs: 0,
  payload: new Uint8Array(),
  contentType: "",
  priority: 0,
  flowKey: null,
  enqueuedAtMs: 0,
  headers: { "\uFEFF": "" },
};

describe("hot-path responses", () => {
  it("encode a claim's jobs byte for byte as protobuf-es encodes the JSON codec's message", () => {
    fc.assert(
      fc.property(fc.array(claimed, { maxLength: 5 }), (jobs) => {
        const fast = toBinary(ClaimResponseSchema, claimResponse({ jobs, verdicts: [] }, true));
        const slow = toBinary(ClaimResponseSchema, claimResponse({ jobs, verdicts: [] }, false));
        expect(fast).toEqual(slow);
        // And each job decodes to exactly what the message path builds, but for what protobuf-es's
        // decoder changes: the bytes carry it (above).
        expect(fromBinary(ClaimResponseSchema, fast).jobs).toEqual(
          jobs.map(claimedJob).map(asProtobufEsDecodes),
        );
      }),
      { numRuns: 300, examples: [[[bomHeaderJob]]] },
    );
  });

  it("decode jobs and verdicts of one response as the JSON codec's message has them", () => {
    fc.assert(
      fc.property(
        fc.array(claimed, { maxLength: 3 }),
        fc.array(verdict, { maxLength: 2 }),
        (jobs, verdicts) => {
          const fast = fromBinary(
            ClaimResponseSchema,
            toBinary(ClaimResponseSchema, claimResponse({ jobs, verdicts }, true)),
          );
          const slow = claimResponse({ jobs, verdicts }, false);
          expect(fast).toEqual(asProtobufEsDecodes(slow));
        },
      ),
    );
  });

  it("encode settle results byte for byte as protobuf-es does", () => {
    fc.assert(
      fc.property(fc.array(outcome, { maxLength: 5 }), (out) => {
        const fast = toBinary(SettleResponseSchema, settleResponse(out, true));
        const slow = toBinary(SettleResponseSchema, settleResponse(out, false));
        expect(fast).toEqual(slow);
        const results = fromBinary(SettleResponseSchema, fast).results;
        expect(results.map((r) => [r.lease?.jobId, r.lease?.attempt, r.state])).toEqual(
          out.map((o) => [o.jobId, o.attempt, jobState(o.state)]),
        );
      }),
      { numRuns: 300 },
    );
  });

  it("leave JSON codecs real messages (JSON drops unknown fields)", () => {
    const job = create(JobSchema, { id: "1" });
    expect(job.$typeName).toBe("taskq.v1.Job");
    const res = settleResponse(
      [{ jobId: "7", attempt: 1, status: "accepted", state: "succeeded", nextRunAt: null, queue: "q" }],
      false,
    );
    expect(res.results[0]).toEqual(
      create(SettleResultSchema, {
        lease: { jobId: "7", attempt: 1 },
        status: 1,
        state: jobState("succeeded"),
      }),
    );
    expect(res.$unknown).toBeUndefined();
  });
});
