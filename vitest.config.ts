import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { conditions: ["taskq-source"] },
  ssr: { resolve: { conditions: ["taskq-source"] } },
  test: {
    include: ["sdk-ts/src/**/*.test.ts", "gateway/src/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ["default"],
  },
});
