export { hashToken, newToken, type TokenEntry } from "./auth/tokens.js";
export { type Config, loadConfig } from "./config.js";
export { ConfigError } from "./errors.js";
export type { Limiter } from "./limiter/limiter.js";
export { createLogger, type Logger, silentLogger } from "./log.js";
export { type Gateway, type GatewaySeams, startGateway } from "./server.js";
export { migrate } from "./store/migrate.js";
export { Store } from "./store/store.js";
