import { create, toBinary } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { SettlementSchema } from "@taskq/sdk/proto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../errors.js";
import { decodeSettlement, type SettlementFields } from "./settlement-bytes.js";

const text = fc.string({ maxLength: 30, unit: "binary" });
// Durations of either sign: a negative one must read as negative, so validation can refuse it by name.
const duration = fc.integer({ min: -7 * 86_400_000, max: 7 * 86_400_000 }).map(durationFromMs);
const settlement = fc.record({
  lease: fc.option(fc.record({ jobId: text, attempt: fc.integer({ min: 0, max: 2 ** 32 - 1 }) }), {
    nil: undefined,
  }),
  outcome: fc.oneof(
    fc.record({
      case: fc.constant("success" as const),
      value: fc.record({ result: fc.uint8Array({ maxLength: 300 }) }),
    }),
    fc.record({
      case: fc.constant("failure" as const),
      value: fc.record({
        type: text,
        message: text,
        retryable: fc.boolean(),
        retryAfter: fc.option(duration, { nil: undefined }),
      }),
    }),
    fc.record({ case: fc.constant("cancelled" as const), value: fc.record({ reason: text }) }),
    fc.record({ case: fc.constant("released" as const), value: fc.record({ reason: text }) }),
    fc.constant({ case: undefined }),
  ),
  duration: fc.option(duration, { nil: undefined }),
});

/** What the gateway reads from a settlement, with durations as numbers. */
function read(s: SettlementFields) {
  const ms = (d: { seconds: bigint | number; nanos: number } | undefined) =>
    d === undefined ? undefined : [Number(d.seconds), d.nanos];
  const o = s.outcome;
  return {
    lease: s.lease && { jobId: s.lease.jobId, attempt: s.lease.attempt },
    outcome:
      o.case === "success"
        ? [o.case, [...o.value.result]]
        : o.case === "failure"
          ? [o.case, o.value.type, o.value.message, o.value.retryable, ms(o.value.retryAfter)]
          : o.case === "cancelled" || o.case === "released"
            ? [o.case, o.value.reason]
            : [undefined],
    duration: ms(s.duration),
  };
}

describe("decodeSettlement", () => {
  it("reads a Settlement's bytes as protobuf-es reads the message", () => {
    fc.assert(
      fc.property(settlement, (init) => {
        const msg = create(SettlementSchema, init);
        expect(read(decodeSettlement(toBinary(SettlementSchema, msg), "s"))).toEqual(read(msg));
      }),
      { numRuns: 500 },
    );
  });

  it("answers bytes that do not parse as bad input naming the settlement", () => {
    const bytes = toBinary(
      SettlementSchema,
      create(SettlementSchema, {
        lease: { jobId: "123", attempt: 1 },
        outcome: { case: "success", value: {} },
      }),
    );
    for (const cut of [1, 3, bytes.length - 1]) {
      expect(() => decodeSettlement(bytes.subarray(0, cut), "settlements[2]")).toThrow(InvalidArgumentError);
      expect(() => decodeSettlement(bytes.subarray(0, cut), "settlements[2]")).toThrow(/settlements\[2\]/);
    }
  });
});
