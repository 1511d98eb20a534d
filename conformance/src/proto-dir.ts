import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * The contract's .proto files the kit checks against: the package's own proto/ (copied in at build, so
 * an installed kit has them), else, in a source checkout not yet built, the repository's proto/.
 * Adapters that generate stubs at run time find it in TASKQ_CONFORMANCE_PROTO_DIR.
 */
export function protoDir(): string {
  const packaged = fileURLToPath(new URL("../proto/", import.meta.url));
  return existsSync(packaged) ? packaged : fileURLToPath(new URL("../../proto/", import.meta.url));
}
