// Server reflection as clients we did not write use it: grpc-js-reflection-client lists the services
// and fetches their descriptors, then @grpc/grpc-js calls WorkerService.ClaimOnce from those alone.
import * as grpc from "@grpc/grpc-js";
import { Client, createTransport } from "@taskq/sdk";
import { GrpcReflection } from "grpc-js-reflection-client";
import { describe, expect, it } from "vitest";
import { hashToken, newToken } from "../auth/tokens.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

/** A ClaimResponse as @grpc/proto-loader decodes it from the reflected descriptors. */
type Claimed = { jobs: { id: string; queue: string }[] };

const hostOf = (gw: TestGateway) => new URL(gw.grpcUrl).host;
const bearer = (token: string) => {
  const md = new grpc.Metadata();
  md.set("authorization", `Bearer ${token}`);
  return md;
};

async function setup(config: Parameters<typeof startTestGateway>[0] = {}) {
  const worker = newToken();
  const producer = newToken();
  const gw = await startTestGateway({
    ...config,
    config: {
      tokens: [
        { name: "w", roles: ["worker"], queues: null, sha256: hashToken(worker) },
        { name: "p", roles: ["producer"], queues: null, sha256: hashToken(producer) },
      ],
      ...config.config,
    },
  });
  return { gw, worker, producer };
}

describe("gRPC server reflection", () => {
  it("lists taskq's services to a reflection client, v1 and v1alpha, for any token", async () => {
    const { gw, worker, producer } = await setup();
    try {
      for (const version of ["v1", "v1alpha"]) {
        const reflection = new GrpcReflection(hostOf(gw), grpc.credentials.createInsecure(), {}, version);
        // Any role will do: a producer's token as well as a worker's.
        for (const token of [worker, producer]) {
          const services = await reflection.listServices("", bearer(token));
          expect(services).toEqual(
            expect.arrayContaining([
              "taskq.v1.WorkerService",
              "taskq.v1.ProducerService",
              "taskq.v1.AdminService",
              "grpc.health.v1.Health",
            ]),
          );
        }
      }
    } finally {
      await gw.stop();
    }
  });

  it("hands out descriptors from which a generic client claims a job with ClaimOnce", async () => {
    const { gw, worker, producer } = await setup();
    try {
      const client = new Client({ transport: createTransport({ baseUrl: gw.grpcUrl, token: producer }) });
      const { jobId } = await client.enqueue({ queue: "mail", payload: { to: "a@example.com" } });

      const reflection = new GrpcReflection(hostOf(gw), grpc.credentials.createInsecure(), {}, "v1");
      const methods = await reflection.listMethods("taskq.v1.WorkerService", bearer(worker));
      expect(methods.map((m) => m.name)).toEqual(expect.arrayContaining(["Claim", "ClaimOnce", "Settle"]));
      // The service's file comes with its imports (job.proto, google/protobuf/*.proto).
      const descriptor = await reflection.getDescriptorBySymbol("taskq.v1.WorkerService", bearer(worker));
      const pkg = descriptor.getPackageObject({
        keepCase: true,
        longs: String,
        enums: String,
        defaults: true,
      });
      const WorkerService = (pkg.taskq as grpc.GrpcObject).v1 as grpc.GrpcObject;
      const Ctor = WorkerService.WorkerService as grpc.ServiceClientConstructor;
      const stub = new Ctor(hostOf(gw), grpc.credentials.createInsecure()) as unknown as grpc.Client & {
        ClaimOnce: (
          req: object,
          md: grpc.Metadata,
          cb: (err: grpc.ServiceError | null, out: Claimed) => void,
        ) => void;
      };
      try {
        const res = await new Promise<Claimed>((resolve, reject) =>
          stub.ClaimOnce(
            { queues: ["mail"], max_jobs: 1, worker_id: "reflected" },
            bearer(worker),
            (err, out) => (err ? reject(err) : resolve(out)),
          ),
        );
        expect(res.jobs.map((j) => ({ id: String(j.id), queue: j.queue }))).toEqual([
          { id: jobId, queue: "mail" },
        ]);
      } finally {
        stub.close();
      }
    } finally {
      await gw.stop();
    }
  });

  it("refuses a caller without a token when tokens are configured", async () => {
    const { gw } = await setup();
    try {
      const reflection = new GrpcReflection(hostOf(gw), grpc.credentials.createInsecure(), {}, "v1");
      // The client wraps the status in an error of its own, quoting it.
      await expect(reflection.listServices("")).rejects.toThrow(/UNAUTHENTICATED/);
    } finally {
      await gw.stop();
    }
  });

  it("is not served when turned off", async () => {
    const { gw, worker } = await setup({ config: { reflection: false } });
    try {
      const reflection = new GrpcReflection(hostOf(gw), grpc.credentials.createInsecure(), {}, "v1");
      await expect(reflection.listServices("", bearer(worker))).rejects.toThrow(/UNIMPLEMENTED/);
    } finally {
      await gw.stop();
    }
  });
});
