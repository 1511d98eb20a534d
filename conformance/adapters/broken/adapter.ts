// Deliberately broken workers, to prove the suite catches each fault: the TypeScript SDK with one
// behaviour broken on the wire by an interceptor. Run: adapter.ts <fault>, one of the keys of `faults`.
import type { Interceptor } from "@connectrpc/connect";
import { runSdkAdapter } from "../ts-sdk/sdk-adapter.js";
import { faults } from "./faults.js";

const name = process.argv[2] ?? "";
const fault: Interceptor | undefined = (faults as Record<string, Interceptor>)[name];
if (!fault) {
  process.stderr.write(`usage: adapter.ts <${Object.keys(faults).join("|")}>\n`);
  process.exit(2);
}
await runSdkAdapter({ implementation: `taskq-sdk-ts broken: ${name}`, interceptors: [fault] });
