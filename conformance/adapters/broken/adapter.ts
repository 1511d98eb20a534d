// Deliberately broken workers, to prove the suite catches each fault: the TypeScript SDK with one
// behaviour broken, mostly on the wire by an interceptor. Run: adapter.ts <fault>, a key of `faults`.
import { runSdkAdapter } from "../ts-sdk/sdk-adapter.js";
import { type Fault, faults } from "./faults.js";

const name = process.argv[2] ?? "";
const fault: Fault | undefined = (faults as Record<string, Fault>)[name];
if (!fault) {
  process.stderr.write(`usage: adapter.ts <${Object.keys(faults).join("|")}>\n`);
  process.exit(2);
}
await runSdkAdapter({ implementation: `taskq-sdk-ts broken: ${name}`, variant: fault });
