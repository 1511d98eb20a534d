import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GrpcStubs, grpcStubs, unary } from "../testing/grpc-stubs.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";
import { MAX_ANSWER_JOB_BYTES } from "./answer-size.js";

// A poll for many large jobs, from a client with gRPC's default 4 MiB receive limit (grpc-js here, as
// grpc-go and grpcio): the answer carries what fits, the rest stays ready, no attempt spent on it.
describe("a claim answer's size", () => {
  let gw: TestGateway;
  let stubs: GrpcStubs;
  beforeAll(async () => {
    gw = await startTestGateway();
    stubs = grpcStubs(gw.grpcUrl);
  });
  afterAll(async () => {
    stubs.close();
    await gw.stop();
  });

  it("stays within what a default gRPC client receives; jobs past it stay ready, attempt unspent", async () => {
    const queue = "big-payloads";
    const payload = Buffer.alloc(900 * 1024, 7);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++)
      ids.push((await unary(stubs.producer, "Enqueue", { job: { queue, payload } })).job_id as string);
    const claim = () =>
      unary<{ jobs: { id: string; attempt: number }[] }>(stubs.worker, "ClaimOnce", {
        queues: [queue],
        max_jobs: 10,
        worker_id: "w",
      });
    const first = await claim();
    const fits = Math.floor(MAX_ANSWER_JOB_BYTES / payload.length);
    expect(first.jobs.map((j) => j.id)).toEqual(ids.slice(0, fits));
    for (const id of ids.slice(fits)) {
      const { job } = await unary(stubs.producer, "GetJob", { job_id: id });
      expect(job).toMatchObject({ state: "JOB_STATE_QUEUED", attempt: 0 });
    }
    // The next polls take the rest, in order, each a first attempt.
    const second = await claim();
    const third = await claim();
    expect([...second.jobs, ...third.jobs].map((j) => [j.id, j.attempt])).toEqual(
      ids.slice(fits).map((id) => [id, 1]),
    );
  });

  it("sends a single job larger than that alone", async () => {
    const queue = "huge-payload";
    const payload = Buffer.alloc(MAX_ANSWER_JOB_BYTES + 1024, 1);
    const big = await startTestGateway({ config: { maxPayloadBytes: 8 * 1024 * 1024 } });
    const own = grpcStubs(big.grpcUrl, undefined, undefined, { maxReceiveBytes: 16 * 1024 * 1024 });
    try {
      await unary(own.producer, "Enqueue", { job: { queue, payload } });
      await unary(own.producer, "Enqueue", { job: { queue, payload: Buffer.from("small") } });
      const res = await unary<{ jobs: { payload: Buffer }[] }>(own.worker, "ClaimOnce", {
        queues: [queue],
        max_jobs: 2,
      });
      expect(res.jobs.map((j) => j.payload.length)).toEqual([payload.length]);
    } finally {
      own.close();
      await big.stop();
    }
  });
});
