// The conformance adapter of the TypeScript SDK. Run it under the suite:
//   npx taskq-conformance worker -- node --conditions=taskq-source --import tsx conformance/adapters/ts-sdk/adapter.ts
import { runSdkAdapter } from "./sdk-adapter.js";

await runSdkAdapter({ implementation: "taskq-sdk-ts" });
