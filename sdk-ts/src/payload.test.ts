import { create } from "@bufbuild/protobuf";
import { DurationSchema, durationMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { toJobSpec } from "./client.js";
import { failureFromError, NonRetryableError, RetryAfterError } from "./errors.js";
import { JobSchema } from "./gen/taskq/v1/job_pb.js";
import { createJobContext } from "./job-context.js";
import { decodeJson, decodeText, encodePayload, JSON_CONTENT_TYPE, TEXT_CONTENT_TYPE } from "./payload.js";
import { jobFromMessage } from "./wire/claimed-job.js";

describe("encodePayload", () => {
  it("passes bytes through untouched with no content type", () => {
    const bytes = new Uint8Array([0, 255, 7]);
    expect(encodePayload(bytes)).toEqual({ bytes, contentType: "" });
  });

  it("encodes strings as UTF-8 text", () => {
    const { bytes, contentType } = encodePayload("héllo");
    expect(contentType).toBe(TEXT_CONTENT_TYPE);
    expect([...bytes]).toEqual([...Buffer.from("héllo", "utf8")]);
    expect(decodeText(bytes)).toBe("héllo");
  });

  it("encodes objects and arrays as JSON", () => {
    const obj = { n: 1, s: "x", list: [1, 2] };
    const { bytes, contentType } = encodePayload(obj);
    expect(contentType).toBe(JSON_CONTENT_TYPE);
    expect(decodeJson(bytes)).toEqual(obj);
    expect(decodeJson(encodePayload([1, "a"]).bytes)).toEqual([1, "a"]);
  });

  it("encodes nothing as empty bytes", () => {
    expect(encodePayload(undefined).bytes.length).toBe(0);
    expect(encodePayload(null).bytes.length).toBe(0);
  });
});

describe("toJobSpec", () => {
  it("maps the friendly spec onto the wire JobSpec", () => {
    const spec = toJobSpec({
      queue: "emails",
      payload: { to: "a@b" },
      priority: 5,
      flowKey: "tenant-1",
      delayMs: 1500,
      ttlSeconds: 60,
      maxAttempts: 3,
      idempotencyKey: "k1",
      headers: { trace: "t" },
    });
    expect(spec).toMatchObject({
      queue: "emails",
      contentType: JSON_CONTENT_TYPE,
      priority: 5,
      flowKey: "tenant-1",
      ttlSeconds: 60,
      maxAttempts: 3,
      idempotencyKey: "k1",
      headers: { trace: "t" },
    });
    expect(decodeJson(spec.payload)).toEqual({ to: "a@b" });
    expect(spec.schedule.case).toBe("delay");
    if (spec.schedule.case === "delay") expect(durationMs(spec.schedule.value)).toBe(1500);
  });

  it("sends runAt as a timestamp, and an explicit content type wins", () => {
    const at = new Date("2030-01-02T03:04:05.678Z");
    const spec = toJobSpec({ queue: "q", payload: "<x/>", contentType: "application/xml", runAt: at });
    expect(spec.contentType).toBe("application/xml");
    expect(spec.schedule.case).toBe("runAt");
    if (spec.schedule.case === "runAt") expect(timestampMs(spec.schedule.value)).toBe(at.getTime());
  });

  it("leaves defaults to the gateway and refuses delayMs with runAt", () => {
    const spec = toJobSpec({ queue: "q" });
    expect(spec).toMatchObject({ maxAttempts: 0, ttlSeconds: 0, priority: 0, contentType: "" });
    expect(spec.payload.length).toBe(0);
    expect(spec.schedule.case).toBeUndefined();
    expect(() => toJobSpec({ queue: "q", delayMs: 1, runAt: new Date() })).toThrow(TypeError);
  });
});

describe("failureFromError", () => {
  it("replaces NUL, which the gateway refuses, so the failure still settles", () => {
    const err = new Error("bad\u0000byte");
    err.name = "Bin\u0000Error";
    const f = failureFromError(err);
    expect([f.type, f.message]).toEqual(["Bin\uFFFDError", "bad\uFFFDbyte"]);
  });

  it("carries the error's name and message, retryable by default", () => {
    const f = failureFromError(new TypeError("bad input"));
    expect(f).toMatchObject({ type: "TypeError", message: "bad input", retryable: true });
    expect(f.retryAfter).toBeUndefined();
  });

  it("marks NonRetryableError as not retryable", () => {
    expect(failureFromError(new NonRetryableError("nope"))).toMatchObject({
      type: "NonRetryableError",
      retryable: false,
    });
  });

  it("carries retryAfterMs from RetryAfterError or any error that has it", () => {
    const a = failureFromError(new RetryAfterError("later", 2500));
    expect(a.retryable).toBe(true);
    expect(a.retryAfter && durationMs(create(DurationSchema, a.retryAfter))).toBe(2500);
    const e = Object.assign(new Error("rate limited"), { retryAfterMs: 10 });
    const b = failureFromError(e);
    expect(b.retryAfter && durationMs(create(DurationSchema, b.retryAfter))).toBe(10);
  });

  it("describes thrown non-errors and truncates huge messages", () => {
    expect(failureFromError("boom")).toMatchObject({ type: "string", message: "boom", retryable: true });
    const long = failureFromError(new Error("x".repeat(100_000)));
    expect(long.message?.length).toBeLessThan(5000);
  });
});

describe("JobContext", () => {
  it("decodes the payload as text and JSON and reads the live lease deadline", () => {
    const job = jobFromMessage(
      create(JobSchema, {
        id: "7",
        queue: "q",
        attempt: 2,
        payload: encodePayload({ a: 1 }).bytes,
      }),
    );
    let deadline = 1000;
    const ctx = createJobContext(job, new AbortController(), () => deadline);
    expect(ctx.json()).toEqual({ a: 1 });
    expect(ctx.text()).toBe('{"a":1}');
    expect(ctx.leaseDeadline.getTime()).toBe(1000);
    deadline = 5000;
    expect(ctx.leaseDeadline.getTime()).toBe(5000);
    expect(ctx.enqueuedAt).toBeUndefined();
  });
});
