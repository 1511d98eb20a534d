import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { ClaimRequestView } from "@taskq/sdk/internal";
import { ClaimRequestSchema, SettlementSchema } from "@taskq/sdk/proto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ClaimFields, decodeClaimRequest } from "./claim-request-bytes.js";

// A string that begins with U+FEFF is left to protobuf-es (below).
const text = fc.string({ maxLength: 20, unit: "binary" }).filter((s) => s.charCodeAt(0) !== 0xfeff);
const duration = fc.integer({ min: -86_400_000, max: 86_400_000 }).map(durationFromMs);
const u32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const claimRequest = fc.record({
  queues: fc.array(text, { maxLength: 4 }),
  maxJobs: u32,
  maxWait: fc.option(duration, { nil: undefined }),
  workerId: text,
  leaseDuration: fc.option(duration, { nil: undefined }),
  settlements: fc.array(
    fc.record({
      lease: fc.record({ jobId: text, attempt: u32 }),
      outcome: fc.constant({ case: "success" as const, value: { result: new Uint8Array([1, 2]) } }),
    }),
    { maxLength: 3 },
  ),
  concurrency: u32,
  prefetch: u32,
});

/** What the gateway reads of a ClaimRequest, durations as numbers, settlements as their bytes. */
function read(c: ClaimFields) {
  const d = (x: ClaimFields["maxWait"]) => (x === undefined ? undefined : [Number(x.seconds), x.nanos]);
  return {
    queues: [...c.queues],
    maxJobs: c.maxJobs,
    maxWait: d(c.maxWait),
    workerId: c.workerId,
    leaseDuration: d(c.leaseDuration),
    settlements: c.settlements.map((s) => [...(s as Uint8Array)]),
    concurrency: c.concurrency ?? 0,
    prefetch: c.prefetch ?? 0,
  };
}

const viaProtobufEs = (bytes: Uint8Array) => fromBinary(ClaimRequestView, bytes) as unknown as ClaimFields;

describe("decodeClaimRequest", () => {
  it("reads a ClaimRequest's bytes as protobuf-es reads them", () => {
    fc.assert(
      fc.property(claimRequest, (init) => {
        const bytes = toBinary(ClaimRequestSchema, create(ClaimRequestSchema, init));
        const mine = decodeClaimRequest(bytes);
        expect(mine).toBeDefined();
        expect(read(mine as ClaimFields)).toEqual(read(viaProtobufEs(bytes)));
      }),
      { numRuns: 300 },
    );
  });

  it("reads any bytes it accepts as protobuf-es does, and leaves it the rest", () => {
    // Valid requests with random bytes spliced in, and random bytes alone.
    const spliced = fc
      .tuple(claimRequest, fc.uint8Array({ maxLength: 12 }), fc.nat())
      .map(([init, junk, at]) => {
        const bytes = toBinary(ClaimRequestSchema, create(ClaimRequestSchema, init));
        const cut = at % (bytes.length + 1);
        return new Uint8Array([...bytes.subarray(0, cut), ...junk, ...bytes.subarray(cut)]);
      });
    fc.assert(
      fc.property(fc.oneof(spliced, fc.uint8Array({ maxLength: 40 })), (bytes) => {
        const mine = decodeClaimRequest(bytes);
        if (mine === undefined) return;
        expect(read(mine)).toEqual(read(viaProtobufEs(bytes)));
      }),
      { numRuns: 2000 },
    );
  });

  it("leaves to protobuf-es what it would read differently", () => {
    const req = (init: object) => toBinary(ClaimRequestSchema, create(ClaimRequestSchema, init));
    const maxWait = req({ maxWait: durationFromMs(1000) });
    // A message field twice: protobuf-es merges the two.
    expect(decodeClaimRequest(new Uint8Array([...maxWait, ...maxWait]))).toBeUndefined();
    // max_jobs (2) as length-delimited, not varint.
    expect(decodeClaimRequest(new Uint8Array([0x12, 0x01, 0x00]))).toBeUndefined();
    // max_jobs past uint32: protobuf-es keeps the low 32 bits.
    expect(decodeClaimRequest(new Uint8Array([0x10, 0x80, 0x80, 0x80, 0x80, 0x10]))).toBeUndefined();
    // A queue name that is not UTF-8.
    expect(decodeClaimRequest(new Uint8Array([0x0a, 0x01, 0xff]))).toBeUndefined();
    // A string that begins with U+FEFF: protobuf-es's TextDecoder drops it as a byte order mark.
    expect(decodeClaimRequest(req({ workerId: "\uFEFFw" }))).toBeUndefined();
    // Truncated.
    expect(decodeClaimRequest(new Uint8Array([0x0a, 0x05, 0x61]))).toBeUndefined();
    // Settlements stay bytes, to be read by settlement-bytes.ts.
    const s = create(SettlementSchema, { lease: { jobId: "7", attempt: 1 } });
    const c = decodeClaimRequest(req({ settlements: [s] }));
    expect(c?.settlements[0]).toEqual(toBinary(SettlementSchema, s));
  });
});
