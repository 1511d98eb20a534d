import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashToken, newToken } from "../auth/tokens.js";
import { duplex, type GrpcStubs, grpcStubs, unary } from "../testing/grpc-stubs.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

// EnqueueStream as a producer in another language sees it: plain grpc-js, one stream, many batches.
const secret = newToken();
const operator = newToken();
let gw: TestGateway;
let stubs: GrpcStubs;
let ops: GrpcStubs;
beforeAll(async () => {
  gw = await startTestGateway({
    config: {
      tokens: [
        { name: "p", roles: ["producer"], queues: ["es-mail"], sha256: hashToken(secret) },
        { name: "o", roles: ["operator"], queues: null, sha256: hashToken(operator) },
      ],
    },
  });
  stubs = grpcStubs(gw.grpcUrl, secret);
  ops = grpcStubs(gw.grpcUrl, operator);
});
afterAll(async () => {
  stubs?.close();
  ops?.close();
  await gw?.stop();
});

describe("EnqueueStream", () => {
  it("answers each batch in order, a refused one with its error, and stays open", async () => {
    const stream = duplex(stubs.producer, "EnqueueStream");
    const answers = await Promise.all([
      stream.send({ jobs: [{ queue: "es-mail", payload: Buffer.from("1") }] }),
      stream.send({ jobs: [{ queue: "es-mail" }, { queue: "es-mail", priority: 40_000 }] }),
      stream.send({ jobs: [{ queue: "es-other" }] }),
      stream.send({ jobs: [] }),
      stream.send({ jobs: [{ queue: "es-mail", payload: Buffer.from("2") }, { queue: "es-mail" }] }),
    ]);
    expect(answers.map((a) => a.error?.code ?? grpc.status.OK)).toEqual([
      grpc.status.OK,
      grpc.status.INVALID_ARGUMENT,
      grpc.status.PERMISSION_DENIED,
      grpc.status.INVALID_ARGUMENT,
      grpc.status.OK,
    ]);
    expect(answers[1].error.message).toMatch(/^jobs\[1\]\.priority /);
    expect(answers[1].results).toEqual([]);
    expect(answers[2].error.message).toMatch(/es-other/);
    expect(answers[3].error.message).toMatch(/^jobs /);
    const [first, , , , last] = answers;
    expect(first.results).toHaveLength(1);
    expect(last.results).toHaveLength(2);
    // Batches are applied as they arrive, so ids need not follow request order; each answer names the
    // jobs of its own batch.
    const payloadOf = async (r: { job_id: string }) =>
      Buffer.from((await unary(stubs.producer, "GetJob", { job_id: r.job_id })).job.payload).toString();
    expect(await payloadOf(first.results[0])).toBe("1");
    expect(await payloadOf(last.results[0])).toBe("2");
    expect(await payloadOf(last.results[1])).toBe("");
    // The refused batches wrote nothing: the queue holds the three jobs of the two good batches.
    const listed = await unary(ops.admin, "ListJobs", { queue: "es-mail", state: "JOB_STATE_QUEUED" });
    expect(listed.jobs).toHaveLength(3);
    stream.end();
    expect((await stream.status).code).toBe(grpc.status.OK);
  });

  it("refuses a call without a token before any batch", async () => {
    const anon = grpcStubs(gw.grpcUrl);
    try {
      const stream = duplex(anon.producer, "EnqueueStream");
      await expect(stream.send({ jobs: [{ queue: "es-mail" }] })).rejects.toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
      });
    } finally {
      anon.close();
    }
  });
});
