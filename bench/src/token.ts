import { createHash, randomBytes } from "node:crypto";

// The bench starts its gateways in production mode, which refuses to run without tokens: one token
// holding every role the bench uses, configured through TASKQ_TOKENS as the gateway stores it (hashed).
export const BENCH_TOKEN = `tq_${randomBytes(32).toString("base64url")}`;

export const BENCH_TOKENS_ENV = JSON.stringify([
  {
    name: "bench",
    roles: ["operator", "worker", "producer"],
    sha256: createHash("sha256").update(BENCH_TOKEN).digest("hex"),
  },
]);
