// The kit ships the contract it checks against: adapters in any language generate their stubs from
// the package's own proto/ (the runner tells them where, in TASKQ_CONFORMANCE_PROTO_DIR).
import { cpSync, rmSync } from "node:fs";

const out = new URL("../proto/", import.meta.url);
rmSync(out, { recursive: true, force: true });
cpSync(new URL("../../proto/", import.meta.url), out, { recursive: true });
