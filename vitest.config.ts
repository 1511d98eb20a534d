import { defineConfig } from "vitest/config";

// Cluster accuracy tests (*.cluster.test.ts) measure timing across three gateways: they run after the
// rest, one file at a time, so they measure the gates rather than the machine's load. Fault scenarios
// (*.faults.test.ts, `npm run test:faults`) spawn gateways and workers as child processes and break them:
// one file and one test at a time, with bounds generous enough for a shared machine.
// Once per run of a project: without the service URLs, says what answers on the default local ports and
// the command that runs the skipped tests there (gateway/src/testing/services.ts holds the guard).
const globalSetup = ["gateway/src/testing/global-setup.ts"];

export default defineConfig({
  resolve: { conditions: ["taskq-source"] },
  ssr: { resolve: { conditions: ["taskq-source"] } },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          globalSetup,
          include: [
            "sdk-ts/src/**/*.test.ts",
            "gateway/src/**/*.test.ts",
            "conformance/src/**/*.test.ts",
            "examples/**/*.test.ts",
          ],
          exclude: ["**/*.cluster.test.ts", "**/*.faults.test.ts", "**/node_modules/**"],
        },
      },
      {
        extends: true,
        test: {
          name: "cluster",
          globalSetup,
          include: ["gateway/src/**/*.cluster.test.ts"],
          fileParallelism: false,
          testTimeout: 120_000,
          // These bound real-time rates on a shared 2-core machine: a run that a stray GC pause or a
          // neighbour's burst pushed past a bound gets one more try (the bounds themselves never move).
          retry: 1,
        },
      },
      {
        extends: true,
        test: {
          name: "faults",
          globalSetup,
          include: ["gateway/src/faults/**/*.faults.test.ts"],
          fileParallelism: false,
          sequence: { concurrent: false },
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
