// The gRPC health protocol as probes speak it: the grpc-node project's own health client
// (grpc-health-check's service definition, on @grpc/grpc-js) against a real gateway.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { service as healthDefinition } from "grpc-health-check";
import { describe, expect, it } from "vitest";
import { hashToken, newToken } from "../auth/tokens.js";
import { FaultProxy } from "../faults/tcp-proxy.js";
import { debianPython, havePythonGrpc, haveService, testServices } from "../testing/services.js";
import { startTestGateway, type TestGateway } from "../testing/test-gateway.js";

const vendoredProtos = fileURLToPath(new URL("../../../third_party/proto", import.meta.url));

const HealthClient = grpc.makeClientConstructor(healthDefinition, "grpc.health.v1.Health");

interface HealthStub extends grpc.Client {
  Check(
    req: { service: string },
    cb: (err: grpc.ServiceError | null, res: { status: string }) => void,
  ): grpc.ClientUnaryCall;
  Watch(req: { service: string }): grpc.ClientReadableStream<{ status: string }>;
  List(
    req: object,
    cb: (err: grpc.ServiceError | null, res: { statuses: Record<string, { status: string }> }) => void,
  ): grpc.ClientUnaryCall;
}

const healthOf = (gw: TestGateway) =>
  new HealthClient(new URL(gw.grpcUrl).host, grpc.credentials.createInsecure()) as unknown as HealthStub;

const check = (stub: HealthStub, service: string) =>
  new Promise<string>((resolve, reject) =>
    stub.Check({ service }, (err, res) => (err ? reject(err) : resolve(res.status))),
  );

/** The statuses a Watch sends, as they come. */
function watch(stub: HealthStub, service: string) {
  const seen: string[] = [];
  const call = stub.Watch({ service });
  call.on("data", (res: { status: string }) => seen.push(res.status));
  call.on("error", () => {});
  return { seen, cancel: () => call.cancel() };
}

const until = async (cond: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe("grpc.health.v1.Health", () => {
  it("says SERVING for the gateway and each taskq service, without a token where tokens are configured", async () => {
    const gw = await startTestGateway({
      config: { tokens: [{ name: "w", roles: ["worker"], queues: null, sha256: hashToken(newToken()) }] },
    });
    const stub = healthOf(gw);
    try {
      for (const service of [
        "",
        "taskq.v1.WorkerService",
        "taskq.v1.ProducerService",
        "taskq.v1.AdminService",
      ]) {
        expect(await check(stub, service)).toBe("SERVING");
      }
      await expect(check(stub, "no.such.Service")).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
      const listed = await new Promise<Record<string, { status: string }>>((resolve, reject) =>
        stub.List({}, (err, res) => (err ? reject(err) : resolve(res.statuses))),
      );
      expect(Object.fromEntries(Object.entries(listed).map(([k, v]) => [k, v.status]))).toEqual({
        "": "SERVING",
        "taskq.v1.WorkerService": "SERVING",
        "taskq.v1.ProducerService": "SERVING",
        "taskq.v1.AdminService": "SERVING",
      });
    } finally {
      stub.close();
      await gw.stop();
    }
  });

  it("streams NOT_SERVING to a Watch when the gateway drains on shutdown", async () => {
    const gw = await startTestGateway();
    const stub = healthOf(gw);
    const w = watch(stub, "taskq.v1.WorkerService");
    const unknown = watch(stub, "no.such.Service");
    try {
      await until(() => w.seen.length === 1 && unknown.seen.length === 1);
      expect(w.seen).toEqual(["SERVING"]);
      expect(unknown.seen).toEqual(["SERVICE_UNKNOWN"]);
      await gw.stop();
      await until(() => w.seen.length === 2);
      expect(w.seen).toEqual(["SERVING", "NOT_SERVING"]);
    } finally {
      w.cancel();
      unknown.cancel();
      stub.close();
      await gw.stop();
    }
  });

  it.skipIf(!haveService("postgres") || !haveService("redis"))(
    "goes NOT_SERVING while the configured Redis is unreachable, and back, told to a Watch",
    async () => {
      // The gateway reaches the real Redis through a proxy this test can cut.
      const redis = new URL(testServices.redisUrl);
      const proxy = await FaultProxy.start({ host: redis.hostname, port: Number(redis.port || 6379) });
      const gw = await startTestGateway({
        engine: "postgres",
        config: { redisUrl: proxy.rewrite(redis.href) },
      });
      const stub = healthOf(gw);
      const w = watch(stub, "");
      try {
        // A loaded machine may make a probe run past its bound once: each step waits for the state it
        // expects rather than counting the Watch's messages.
        await until(() => w.seen.at(-1) === "SERVING", 20_000);
        expect(await check(stub, "taskq.v1.WorkerService")).toBe("SERVING");
        proxy.cut();
        await until(() => w.seen.at(-1) === "NOT_SERVING");
        expect(await check(stub, "taskq.v1.WorkerService")).toBe("NOT_SERVING");
        proxy.pass();
        await until(() => w.seen.at(-1) === "SERVING", 20_000);
        expect(w.seen.slice(-3)).toEqual(["SERVING", "NOT_SERVING", "SERVING"]);
      } finally {
        w.cancel();
        stub.close();
        await gw.stop();
        await proxy.close();
      }
    },
  );

  // Debian ships grpcio and grpc_tools but no health package: the stub is compiled from the standard
  // proto, as a top-level module (a grpc.health package would be shadowed by grpcio's own grpc).
  it.skipIf(!havePythonGrpc())("answers Python grpcio's health stub", async () => {
    const gw = await startTestGateway();
    const dir = mkdtempSync(join(tmpdir(), "taskq-health-py-"));
    try {
      const compile = spawnSync(
        debianPython,
        [
          "-m",
          "grpc_tools.protoc",
          `-I${join(vendoredProtos, "grpc/health/v1")}`,
          `--python_out=${dir}`,
          `--grpc_python_out=${dir}`,
          "health.proto",
        ],
        { encoding: "utf8" },
      );
      expect(compile.status, compile.stderr).toBe(0);
      const script = [
        "import sys, grpc",
        `sys.path.insert(0, ${JSON.stringify(dir)})`,
        "import health_pb2, health_pb2_grpc",
        `stub = health_pb2_grpc.HealthStub(grpc.insecure_channel(${JSON.stringify(new URL(gw.grpcUrl).host)}))`,
        "for name in ['', 'taskq.v1.ProducerService']:",
        "    res = stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=10)",
        "    print(health_pb2.HealthCheckResponse.ServingStatus.Name(res.status))",
      ].join("\n");
      // Run apart from this process's event loop, which serves the gateway the script calls.
      const out = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(debianPython, ["-c", script]);
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d) => (stdout += d));
        child.stderr.on("data", (d) => (stderr += d));
        child.on("close", (status) => resolve({ status, stdout, stderr }));
      });
      expect(out.status, out.stderr).toBe(0);
      expect(out.stdout.trim().split("\n")).toEqual(["SERVING", "SERVING"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await gw.stop();
    }
  });
});
