import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Level, WorkerCaseSchema } from "@taskq/sdk/conformance";
import { describe, expect, it } from "vitest";
import { builtInCasesDir, loadWorkerCases } from "../cases/load-cases.js";
import { runWorkerCase } from "./run-case.js";

// A program that says Ready without listing any optional feature, then stops when asked: an
// implementation without prefetch.
const noFeatures = [
  "node",
  "-e",
  `const rl = require("node:readline").createInterface({ input: process.stdin });
   rl.on("line", (l) => {
     const m = JSON.parse(l);
     if (m.start) console.log(JSON.stringify({ ready: { implementation: "no prefetch" } }));
     if (m.stop) { console.log(JSON.stringify({ stopped: {} })); process.exit(0); }
   });`,
];
const cases = loadWorkerCases(fileURLToPath(new URL("worker/", builtInCasesDir)));

describe("optional cases", () => {
  it("do not apply to a program whose Ready does not list their feature", async () => {
    const k = cases.find((c) => c.name === "prefetch/released-on-pause");
    expect(k?.level).toBe(Level.OPTIONAL);
    const r = await runWorkerCase(k as NonNullable<typeof k>, { command: noFeatures });
    expect(r).toMatchObject({
      passed: true,
      failures: [],
      notApplicable: "the program's Ready does not list the optional feature prefetch",
    });
  });

  it("leave every other case to be judged", async () => {
    const k = create(WorkerCaseSchema, {
      name: "claim/x",
      level: Level.REQUIRED,
      features: ["prefetch"],
      worker: { queues: ["q"], concurrency: 1, maxWait: durationFromMs(100) },
      stopAfter: durationFromMs(200),
      expect: [{ check: { case: "workerIdentity", value: {} } }],
    });
    const r = await runWorkerCase(k, { command: noFeatures });
    expect(r.notApplicable).toBeUndefined();
    expect(r.failures).toEqual(["workerIdentity: the worker never polled"]);
  });
});
