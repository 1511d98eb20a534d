// Test helpers for the workspaces' own tests: `@taskq/gateway/testing` resolves here only under the
// `taskq-source` condition (vitest, tsx in this checkout). None of this is built or published.

export { postgresDb } from "../store/db.js";
export { type Cluster, enqueueMany, spawnFleet, startCluster } from "./cluster-harness.js";
export { freePort } from "./free-port.js";
export { type MtlsTestGateway, startMtlsTestGateway } from "./mtls-gateway.js";
export { type LocalPgBouncer, PGBOUNCER, startPgBouncer } from "./pgbouncer.js";
export {
  debianGoPath,
  debianPython,
  haveCommand,
  haveGo,
  havePythonGrpc,
  haveService,
  testRedis,
  testServices,
} from "./services.js";
export { startTestGateway, type TestGateway, type TestGatewayOptions } from "./test-gateway.js";
export { makeTestPki, type TestCert, type TestPki } from "./test-pki.js";
