import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { debianPython, havePythonGrpc } from "@taskq/gateway/testing";
import { describe, expect, it } from "vitest";

// docs/contract.md's Python protoc line for a worker, run as written with the Python gRPC tools a
// worker author is likely to have: Debian's (protoc 3.5), which cannot compile admin.proto.

const root = fileURLToPath(new URL("..", import.meta.url));

/** The shell block of docs/contract.md that opens with `# Python, a worker`. */
function documentedWorkerProtoc(): string {
  const doc = readFileSync(join(root, "docs/contract.md"), "utf8");
  const block = /```sh\n(# Python, a worker[^\n]*\n[\s\S]*?)```/.exec(doc)?.[1];
  if (!block) throw new Error("docs/contract.md has no shell block opening with '# Python, a worker'");
  return block;
}

describe.skipIf(!havePythonGrpc())("docs/contract.md: Python stubs for a worker", () => {
  it("the documented protoc line compiles the worker's protos, and the stubs import", () => {
    const dir = mkdtempSync(join(tmpdir(), "taskq-protoc-"));
    try {
      cpSync(join(root, "proto"), join(dir, "proto"), { recursive: true });
      // `python3` in the doc is the one on PATH: here Debian's, ahead of any pyenv shim.
      symlinkSync(debianPython, join(dir, "python3"));
      const env = { ...process.env, PATH: `${dir}:${process.env.PATH ?? ""}` };
      const compile = spawnSync("bash", ["-euo", "pipefail", "-c", documentedWorkerProtoc()], {
        cwd: dir,
        env,
        encoding: "utf8",
      });
      expect(compile.status, compile.stderr).toBe(0);
      const load = spawnSync(
        "python3",
        [
          "-c",
          "import sys; sys.path.insert(0, 'gen/python')\n" +
            "from taskq.v1 import job_pb2, worker_pb2, worker_pb2_grpc, producer_pb2, producer_pb2_grpc\n" +
            "print(worker_pb2_grpc.WorkerServiceStub.__name__, producer_pb2.EnqueueRequest.DESCRIPTOR.full_name)",
        ],
        { cwd: dir, env, encoding: "utf8" },
      );
      expect(load.status, load.stderr).toBe(0);
      expect(load.stdout.trim()).toBe("WorkerServiceStub taskq.v1.EnqueueRequest");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
