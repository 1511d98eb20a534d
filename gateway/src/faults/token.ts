import { createHash, randomBytes } from "node:crypto";

// Fault scenarios run gateways in production mode, which refuses to start without tokens: one token
// with every role the scenarios use, configured through TASKQ_TOKENS as the gateway stores it (hashed).
export const FAULT_TOKEN = `tq_${randomBytes(32).toString("base64url")}`;

export const FAULT_TOKENS_ENV = JSON.stringify([
  {
    name: "faults",
    roles: ["operator", "worker", "producer"],
    sha256: createHash("sha256").update(FAULT_TOKEN).digest("hex"),
  },
]);
