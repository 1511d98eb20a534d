import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { GatewayScriptSchema } from "@taskq/sdk/conformance";
import {
  type ClaimRequest,
  ClaimRequestSchema,
  type HeartbeatRequest,
  HeartbeatRequestSchema,
  WorkerService,
} from "@taskq/sdk/proto";
import { describe, expect, it } from "vitest";
import { CONNECTION_DROPPED, startReferenceGateway } from "./reference-gateway.js";
import { Trace } from "./trace.js";

/** Requests of a bidi stream, sent one by one; the stream stays open until `end`. */
function requests<T>() {
  const queue: T[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  return {
    push(m: T) {
      queue.push(m);
      wake?.();
    },
    end() {
      ended = true;
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (queue.length > 0) yield queue.shift() as T;
        if (ended) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
    },
  };
}

const poll = () =>
  create(ClaimRequestSchema, { queues: ["q"], maxJobs: 2, maxWait: durationFromMs(0), workerId: "w" });

describe("a claim answer dropped mid-answer", () => {
  it("breaks every stream of the connection, and puts its jobs back for the next poll", async () => {
    const trace = new Trace();
    const script = create(GatewayScriptSchema, { jobs: [{ id: "1" }], claims: [{ dropMidAnswer: true }] });
    const gateway = await startReferenceGateway(script, "q", trace);
    try {
      const client = createClient(WorkerService, createGrpcTransport({ baseUrl: gateway.url }));
      // A Heartbeat stream on the same connection, open and answered before the drop.
      const beats = requests<HeartbeatRequest>();
      const beatAnswers = client.heartbeat(beats)[Symbol.asyncIterator]();
      beats.push(create(HeartbeatRequestSchema, { leases: [] }));
      await beatAnswers.next();

      const polls = requests<ClaimRequest>();
      polls.push(poll());
      const answers = client.claim(polls)[Symbol.asyncIterator]();
      const dropped = await answers.next().catch((err: unknown) => err);
      expect(dropped).toBeInstanceOf(ConnectError);
      expect(await beatAnswers.next().catch((err: unknown) => err)).toBeInstanceOf(ConnectError);
      polls.end();
      beats.end();

      // The job of the dropped answer is claimable again, with the same attempt.
      const again = requests<ClaimRequest>();
      again.push(poll());
      const answer = await client.claim(again)[Symbol.asyncIterator]().next();
      again.end();
      expect(answer.value?.jobs.map((j: { id: string; attempt: number }) => [j.id, j.attempt])).toEqual([
        ["1", 1],
      ]);
    } finally {
      await gateway.stop();
    }
    const events = trace.events.map((e) =>
      e.type === "fail" || e.type === "end" ? `${e.type} ${e.stream} ${"how" in e ? e.how : e.code}` : e.type,
    );
    expect(events).toEqual(
      expect.arrayContaining([
        "claim_answer",
        "claim_released",
        `fail claim ${CONNECTION_DROPPED}`,
        "end heartbeat gateway",
      ]),
    );
    expect(events.indexOf("claim_released")).toBeLessThan(events.indexOf(`fail claim ${CONNECTION_DROPPED}`));
  });
});

describe("scripted heartbeat faults", () => {
  it("fail exactly the heartbeat requests they number, counted across reopened streams", async () => {
    const trace = new Trace();
    const script = create(GatewayScriptSchema, {
      heartbeatFaults: [
        { request: 1, code: "UNAVAILABLE" },
        { request: 3, code: "UNAVAILABLE" },
      ],
    });
    const gateway = await startReferenceGateway(script, "q", trace);
    const outcomes: string[] = [];
    try {
      const client = createClient(WorkerService, createGrpcTransport({ baseUrl: gateway.url }));
      // Each request on a stream of its own until one is answered, as a worker reopens after a failure.
      let beats = requests<HeartbeatRequest>();
      let answers = client.heartbeat(beats)[Symbol.asyncIterator]();
      for (let n = 1; n <= 4; n++) {
        beats.push(create(HeartbeatRequestSchema, { leases: [] }));
        const answer = await answers.next().catch((err: unknown) => err);
        outcomes.push(
          answer instanceof ConnectError ? ConnectError.from(answer).code.toString() : "answered",
        );
        if (answer instanceof ConnectError) {
          beats.end();
          beats = requests<HeartbeatRequest>();
          answers = client.heartbeat(beats)[Symbol.asyncIterator]();
        }
      }
      beats.end();
    } finally {
      await gateway.stop();
    }
    const unavailable = "14";
    expect(outcomes).toEqual([unavailable, "answered", unavailable, "answered"]);
  });
});
