export { hashToken, newToken, type TokenEntry } from "./auth/tokens.js";
export { type Config, ConfigError, loadConfig } from "./config.js";
export { createLogger, type Logger, silentLogger } from "./log.js";
export { type Gateway, startGateway } from "./server.js";
export { migrate } from "./store/migrate.js";
export { Store } from "./store/store.js";
export { type MtlsTestGateway, startMtlsTestGateway } from "./testing/mtls-gateway.js";
export { makeTestPki, type TestCert, type TestPki } from "./testing/test-pki.js";
export { startTestGateway, type TestGateway, type TestGatewayOptions } from "./testing.js";
