import { readFileSync } from "node:fs";

/**
 * This gateway's version: its package's, read from package.json beside src/ and dist/ alike, so a
 * release bumps one place. The gateway sends it on every response (`taskq-version`) and on /healthz;
 * SDKs compare it with the contract version they were built for.
 */
export const GATEWAY_VERSION: string = (
  JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
).version;
