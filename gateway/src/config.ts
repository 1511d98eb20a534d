import { readFileSync, statSync } from "node:fs";
import * as v from "valibot";
import { type Config, configSchema, type SettingMeta, settingMeta, settingsSchema } from "./config-schema.js";
import { ConfigError } from "./errors.js";

export type { Config } from "./config-schema.js";

/**
 * Parses, defaults, validates and freezes the config in one pass, by the schema of config-schema.ts.
 * `file` is a JSON file of setting keys (from --config or TASKQ_CONFIG); env wins over it. Nothing is
 * read at import time.
 */
export function loadConfig(mode: Config["mode"], env: NodeJS.ProcessEnv, file?: string): Readonly<Config> {
  const path = file ?? env.TASKQ_CONFIG;
  const fromFile = path ? readConfigFile(path) : {};
  const ctx = { mode, fileVersion: () => (path ? Math.floor(statSync(path).mtimeMs) : null) };
  const metas = new Map(Object.entries(settingsSchema(ctx)).map(([name, s]) => [name, settingMeta(name, s)]));
  const fileKeys = new Set([...metas.values()].map((m) => m.file));
  for (const key of Object.keys(fromFile)) {
    if (!fileKeys.has(key)) throw new ConfigError(`config file ${path}: unknown setting "${key}"`);
  }

  const input: Record<string, unknown> = { mode };
  const fromEnv = new Set<string>();
  for (const [name, meta] of metas) {
    const envValue = meta.env ? env[meta.env] : undefined;
    // An empty TASKQ_TOKENS leaves the file's tokens in force; any other empty variable means the default.
    const useEnv = envValue !== undefined && !(meta.envJson && envValue === "");
    let raw = useEnv ? envValue : fromFile[meta.file];
    if (useEnv && meta.envJson) raw = parseEnvJson(meta, envValue);
    if (raw === undefined || raw === "") continue;
    input[name] = raw;
    if (useEnv) fromEnv.add(name);
  }

  const parsed = v.safeParse(configSchema(ctx), input);
  if (!parsed.success) {
    const [issue] = parsed.issues;
    const name = String(issue.path?.[0]?.key);
    const meta = metas.get(name);
    if (!meta) throw new ConfigError(issue.message);
    throw new ConfigError(
      describeIssue(issue, meta, { mode, path, raw: input[name], fromEnv: fromEnv.has(name) }),
    );
  }
  const config = parsed.output;
  if (!config.tlsCertFile !== !config.tlsKeyFile) {
    throw new ConfigError(
      "tlsCertFile (TASKQ_TLS_CERT_FILE) and tlsKeyFile (TASKQ_TLS_KEY_FILE) go together: set both or neither",
    );
  }
  if (config.tlsClientCaFile && !config.tlsCertFile) {
    throw new ConfigError(
      "tlsClientCaFile (TASKQ_TLS_CLIENT_CA_FILE) needs tlsCertFile and tlsKeyFile: mutual TLS is TLS first",
    );
  }
  if (config.dbPooler === "transaction" && !config.databaseDirectUrl) {
    throw new ConfigError(
      "dbPooler (TASKQ_DB_POOLER) transaction needs databaseDirectUrl (TASKQ_DATABASE_DIRECT_URL): LISTEN and the migrations' lock need a session a transaction pooler does not keep",
    );
  }
  if (config.tokensFile && config.tokens.length > 0) {
    throw new ConfigError(
      "tokensFile (TASKQ_TOKENS_FILE) and tokens (TASKQ_TOKENS) are exclusive: a token revoked from the file must not live on elsewhere",
    );
  }
  if (config.retryMaxMs < config.retryBaseMs) {
    throw new ConfigError(
      "retryMaxMs (TASKQ_RETRY_MAX_MS) must be at least retryBaseMs (TASKQ_RETRY_BASE_MS)",
    );
  }
  return Object.freeze(config);
}

function readConfigFile(path: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new ConfigError(`config file ${path}: ${(err as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`config file ${path}: must be a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

function parseEnvJson(meta: SettingMeta, value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new ConfigError(`${meta.env} must be ${meta.allowed}`);
  }
}

interface IssueContext {
  mode: Config["mode"];
  path: string | undefined;
  raw: unknown;
  fromEnv: boolean;
}

/**
 * One line naming the setting (file key and env var) and its rule. A setting with entries inside
 * (tokens, queues) names where the value came from and the entry and field at fault.
 */
function describeIssue(issue: v.BaseIssue<unknown>, meta: SettingMeta, at: IssueContext): string {
  const label = meta.env ? `${meta.file} (${meta.env})` : `config file ${at.path}: ${meta.file}`;
  if (at.raw === undefined) return `${label} is required in ${at.mode} mode`;
  if (!meta.nested) {
    return `${label} must be ${meta.allowed}${meta.secret ? "" : `, got ${JSON.stringify(at.raw)}`}`;
  }
  const where = at.fromEnv ? meta.env : `config file ${at.path}: ${meta.file}`;
  const inner = (issue.path ?? []).slice(1);
  // A key at fault (unknown, missing, or no queue name) is named by the message after a colon.
  const atKey = inner.at(-1)?.origin === "key";
  const field = (atKey ? inner.slice(0, -1) : inner).map((p) => `.${String(p.key)}`).join("");
  const separator = atKey ? ": " : issue.message.startsWith("[") ? "" : " ";
  return `${where}${field}${separator}${issue.message}`;
}
