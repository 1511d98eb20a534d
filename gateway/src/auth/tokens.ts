import { createHash, randomBytes } from "node:crypto";
import { QUEUE_NAME } from "../queue-name.js";
import { QUEUE_SCOPED, ROLES, type Role } from "./roles.js";

/** One configured bearer token. Only its SHA-256 is stored; the token itself is shown once, at creation. */
export interface TokenEntry {
  /** Unique; the audit log's actor for this token's changes. */
  readonly name: string;
  /** Usually one; a worker that enqueues follow-up jobs holds worker and producer. */
  readonly roles: readonly Role[];
  /** Worker and producer tokens only: the queues the token may use; null means every queue. */
  readonly queues: readonly string[] | null;
  /** Hex SHA-256 of the token. */
  readonly sha256: string;
}

const TOKEN_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/**
 * The hash stored for a token. A plain SHA-256 suffices: tokens are 256 random bits, so there is nothing
 * to guess, and the hash is computed on every call.
 */
export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** A new random token (`tq_` and 43 base64url characters). */
export function newToken(): string {
  return `tq_${randomBytes(32).toString("base64url")}`;
}

/**
 * Validates a `tokens` list (config file key or TASKQ_TOKENS): an array of
 * `{ name, role | roles, queues?, sha256 }`. Throws an Error naming the entry and field.
 */
export function parseTokens(raw: unknown): TokenEntry[] {
  if (!Array.isArray(raw)) throw new Error("must be a JSON array of { name, role, queues?, sha256 }");
  const names = new Set<string>();
  const hashes = new Set<string>();
  return raw.map((item, i) => {
    const at = `[${i}]`;
    if (typeof item !== "object" || item === null || Array.isArray(item))
      throw new Error(`${at} must be an object`);
    const e = item as Record<string, unknown>;
    for (const key of Object.keys(e)) {
      if (!["name", "role", "roles", "queues", "sha256"].includes(key))
        throw new Error(`${at}: unknown key "${key}"`);
    }
    if (typeof e.name !== "string" || !TOKEN_NAME.test(e.name))
      throw new Error(
        `${at}.name must be 1 to 64 letters, digits or . _ @ - (starting with a letter or digit)`,
      );
    if (names.has(e.name)) throw new Error(`${at}.name "${e.name}" is used twice`);
    names.add(e.name);
    const roles = parseRoles(at, e);
    if (typeof e.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(e.sha256))
      throw new Error(`${at}.sha256 must be 64 lowercase hex digits (taskq token hash prints it)`);
    if (hashes.has(e.sha256)) throw new Error(`${at}.sha256 is used by another token`);
    hashes.add(e.sha256);
    let queues: string[] | null = null;
    if (e.queues !== undefined && e.queues !== null) {
      if (!roles.every((r) => QUEUE_SCOPED.has(r)))
        throw new Error(`${at}.queues is only for worker and producer tokens`);
      if (!Array.isArray(e.queues) || e.queues.length === 0)
        throw new Error(`${at}.queues must be a non-empty array of queue names`);
      for (const q of e.queues) {
        if (typeof q !== "string" || !QUEUE_NAME.test(q))
          throw new Error(`${at}.queues has ${JSON.stringify(q)}, which is not a queue name`);
      }
      queues = [...new Set(e.queues as string[])];
    }
    return { name: e.name, roles, queues, sha256: e.sha256 };
  });
}

/** `role: "worker"` or `roles: ["worker", "producer"]`, exactly one of the two. */
function parseRoles(at: string, e: Record<string, unknown>): Role[] {
  const rule = `must be one of ${ROLES.join(", ")}`;
  if ((e.role === undefined) === (e.roles === undefined))
    throw new Error(`${at} needs exactly one of role and roles`);
  if (e.role !== undefined) {
    if (!ROLES.includes(e.role as Role)) throw new Error(`${at}.role ${rule}`);
    return [e.role as Role];
  }
  if (!Array.isArray(e.roles) || e.roles.length === 0)
    throw new Error(`${at}.roles must be a non-empty array of roles`);
  for (const r of e.roles)
    if (!ROLES.includes(r)) throw new Error(`${at}.roles has ${JSON.stringify(r)}: each ${rule}`);
  return [...new Set(e.roles as Role[])];
}
