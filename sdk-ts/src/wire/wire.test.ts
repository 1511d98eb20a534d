import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { durationFromMs, timestampFromMs } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JobSchema, ThrottleReason } from "../gen/taskq/v1/job_pb.js";
import {
  ClaimRequestSchema,
  ClaimResponseSchema,
  SettlementSchema,
  SettleResultSchema,
  SettleStatus,
} from "../gen/taskq/v1/worker_pb.js";
import { ByteReader } from "./byte-reader.js";
import { ByteWriter } from "./byte-writer.js";
import { decodeClaimAnswer, encodeClaimAsk, encodeClaimRequest } from "./claim-codec.js";
import { decodeJob, jobFromMessage } from "./claimed-job.js";
import {
  answerFromMessage,
  decodeSettleResult,
  encodeSettlement,
  type SettleEntry,
  settlementMessage,
} from "./settlement.js";
import { WorkerServiceViews } from "./worker-views.js";

// The worker's hand-written reading and writing must give exactly what protobuf-es gives: these
// properties compare the two over random messages (unicode, long payloads, negative priorities, absent
// timestamps, headers).

const text = fc.string({ maxLength: 20, unit: "binary" });
const epochMs = fc.integer({ min: 0, max: 4_102_444_800_000 });
const job = fc.record({
  id: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }).map(String),
  queue: text,
  attempt: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  maxAttempts: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  leaseDeadline: fc.option(epochMs.map(timestampFromMs), { nil: undefined }),
  payload: fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ minLength: 120, maxLength: 3000 })),
  contentType: text,
  priority: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  flowKey: text,
  enqueuedAt: fc.option(epochMs.map(timestampFromMs), { nil: undefined }),
  headers: fc.dictionary(text, text, { maxKeys: 3 }),
});

const entry: fc.Arbitrary<SettleEntry> = fc.record({
  jobId: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }).map(String),
  attempt: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  durationMs: fc.integer({ min: 0, max: 7 * 86_400_000 }),
  outcome: fc.oneof(
    fc.record({
      case: fc.constant("success" as const),
      value: fc.record({ result: fc.uint8Array({ maxLength: 300 }) }),
    }),
    fc.record({
      case: fc.constant("failure" as const),
      value: fc.record({
        type: text,
        message: fc.string({ maxLength: 200 }),
        retryable: fc.boolean(),
        retryAfter: fc.option(fc.integer({ min: 0, max: 7 * 86_400_000 }).map(durationFromMs), {
          nil: undefined,
        }),
      }),
    }),
    fc.record({ case: fc.constant("cancelled" as const), value: fc.record({ reason: text }) }),
    fc.record({ case: fc.constant("released" as const), value: fc.record({ reason: text }) }),
  ),
});

describe("hand-written wire", () => {
  it("decodeJob reads a Job's bytes as protobuf-es reads the message", () => {
    fc.assert(
      fc.property(job, (init) => {
        const msg = create(JobSchema, init);
        expect(decodeJob(toBinary(JobSchema, msg))).toEqual(jobFromMessage(msg));
      }),
    );
  });

  it("a header named __proto__ is an own key, not the headers' prototype", () => {
    const headers = JSON.parse('{"__proto__": "x", "team": "billing"}') as Record<string, string>;
    const decoded = decodeJob(toBinary(JobSchema, create(JobSchema, { id: "1", headers })));
    expect(Object.getPrototypeOf(decoded.headers)).toBe(Object.prototype);
    expect(Object.entries(decoded.headers)).toEqual([
      ["__proto__", "x"],
      ["team", "billing"],
    ]);
  });

  it("encodeSettlement writes the bytes protobuf-es writes for the same settlement", () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 5 }), (entries) => {
        const w = new ByteWriter();
        for (const e of entries) {
          const start = w.mark();
          encodeSettlement(w, e);
          expect(Buffer.from(w.since(start))).toEqual(
            Buffer.from(toBinary(SettlementSchema, settlementMessage(e))),
          );
        }
      }),
    );
  });

  it("decodeSettleResult reads a SettleResult as protobuf-es reads it", () => {
    const result = fc.record({
      lease: fc.option(
        fc.record({ jobId: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }).map(String), attempt: fc.nat() }),
        { nil: undefined },
      ),
      status: fc.constantFrom(...Object.values(SettleStatus).filter((v) => typeof v === "number")),
      state: fc.nat({ max: 6 }),
      nextRunAt: fc.option(epochMs.map(timestampFromMs), { nil: undefined }),
    });
    fc.assert(
      fc.property(result, (init) => {
        const msg = create(SettleResultSchema, init);
        expect(decodeSettleResult(toBinary(SettleResultSchema, msg))).toEqual(answerFromMessage(msg));
      }),
    );
  });

  it("a ClaimResponse read through its view gives each job's bytes and the verdicts", () => {
    const verdict = fc.record({
      queue: text,
      reason: fc.constantFrom(ThrottleReason.THROTTLE, ThrottleReason.PAUSED),
      retryAfter: fc.integer({ min: 0, max: 86_400_000 }).map(durationFromMs),
    });
    fc.assert(
      fc.property(fc.array(job, { maxLength: 4 }), fc.array(verdict, { maxLength: 2 }), (jobs, throttled) => {
        const msg = create(ClaimResponseSchema, { jobs, throttled });
        const claim = WorkerServiceViews.methods.find((m) => m.name === "Claim");
        if (!claim) throw new Error("no Claim view");
        const view = fromBinary(claim.output, toBinary(ClaimResponseSchema, msg)) as unknown as {
          jobs: Uint8Array[];
          throttled: unknown[];
        };
        expect(view.jobs.map(decodeJob)).toEqual(msg.jobs.map(jobFromMessage));
        expect(view.throttled).toEqual(msg.throttled);
      }),
    );
  });

  it("encodeClaimAsk writes the ClaimRequest protobuf-es writes for the same poll", () => {
    const u32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
    const ms = fc.option(fc.integer({ min: 0, max: 86_400_000 }).map(durationFromMs), { nil: undefined });
    const ask = fc.record({
      queues: fc.array(fc.oneof(text, fc.constant("")), { maxLength: 4 }),
      maxJobs: u32,
      maxWait: ms,
      workerId: fc.option(text, { nil: undefined }),
      leaseDuration: ms,
      settlements: fc.option(fc.array(entry, { maxLength: 3 }), { nil: undefined }),
      concurrency: fc.option(u32, { nil: undefined }),
      prefetch: fc.option(u32, { nil: undefined }),
    });
    fc.assert(
      fc.property(ask, (a) => {
        const msg = create(ClaimRequestSchema, {
          ...a,
          settlements: (a.settlements ?? []).map(settlementMessage),
        });
        expect([...(encodeClaimAsk(a) ?? [])]).toEqual([...toBinary(ClaimRequestSchema, msg)]);
      }),
    );
    // A negative duration is protobuf-es's to write (the worker never sends one).
    const negative = { queues: ["q"], maxJobs: 1, maxWait: durationFromMs(-5), settlements: [] };
    expect(encodeClaimAsk(negative)).toBeUndefined();
    expect(encodeClaimRequest(negative)).toEqual(
      toBinary(ClaimRequestSchema, create(ClaimRequestSchema, negative)),
    );
  });

  it("decodeClaimAnswer reads a ClaimResponse as the view and protobuf-es read it", () => {
    const verdict = fc.record({
      queue: text,
      reason: fc.constantFrom(ThrottleReason.THROTTLE, ThrottleReason.PAUSED),
      retryAfter: fc.integer({ min: 0, max: 86_400_000 }).map(durationFromMs),
    });
    const result = fc.record({
      lease: fc.record({ jobId: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }).map(String), attempt: fc.nat() }),
      status: fc.constantFrom(SettleStatus.ACCEPTED, SettleStatus.LEASE_LOST),
    });
    fc.assert(
      fc.property(
        fc.array(job, { maxLength: 4 }),
        fc.array(verdict, { maxLength: 2 }),
        fc.array(result, { maxLength: 3 }),
        (jobs, throttled, settleResults) => {
          const msg = create(ClaimResponseSchema, { jobs, throttled, settleResults });
          expect(decodeClaimAnswer(toBinary(ClaimResponseSchema, msg))).toEqual({
            jobs: msg.jobs.map(jobFromMessage),
            throttled: msg.throttled,
            settled: msg.settleResults.map(answerFromMessage),
          });
        },
      ),
    );
    // What it does not read plainly, it leaves to protobuf-es: field number 0, jobs as a varint, truncated.
    for (const bytes of [
      [0x00, 0x01],
      [0x08, 0x01],
      [0x0a, 0x05, 0x01],
    ])
      expect(decodeClaimAnswer(new Uint8Array(bytes))).toBeUndefined();
  });

  it("the ClaimRequest view has every field of ClaimRequest, under the same number", () => {
    const claim = WorkerServiceViews.methods.find((m) => m.name === "Claim");
    const fields = (d: { fields: { number: number; name: string }[] }) =>
      d.fields.map((f) => `${f.number} ${f.name}`).sort();
    expect(fields(claim?.input ?? { fields: [] })).toEqual(fields(ClaimRequestSchema));
  });

  it("keeps the paths of WorkerService", () => {
    expect(WorkerServiceViews.methods.map((m) => `${m.parent.typeName}/${m.name}`)).toEqual([
      "taskq.v1.WorkerService/Claim",
      "taskq.v1.WorkerService/Settle",
    ]);
  });

  it("refuses truncated input instead of reading past the end", () => {
    const bytes = toBinary(JobSchema, create(JobSchema, { id: "12345", payload: new Uint8Array(50) }));
    for (const cut of [1, 3, 10, bytes.length - 1])
      expect(() => decodeJob(bytes.subarray(0, cut))).toThrow(RangeError);
    expect(() => new ByteReader(new Uint8Array([0x80, 0x80])).varint()).toThrow(RangeError);
  });
});
