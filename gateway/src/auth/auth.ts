import { PermissionDeniedError, UnauthenticatedError } from "../errors.js";
import { type Procedure, type Role, rolesFor } from "./roles.js";
import { hashToken, type TokenEntry } from "./tokens.js";

/** Who is calling, as far as taskq cares. */
export interface Principal {
  /** The audit log's actor: the token's name, or "anonymous" on an open gateway. */
  readonly actor: string;
  /** The token's roles; null on an open gateway, where every call is allowed. */
  readonly roles: ReadonlySet<Role> | null;
  /** The queues a scoped worker or producer token may use; null for every queue. */
  readonly queues: ReadonlySet<string> | null;
}

const ANONYMOUS: Principal = { actor: "anonymous", roles: null, queues: null };

/**
 * Bearer-token authentication and the role check, shared by every transport. With no tokens
 * configured the gateway is open (dev mode only: production refuses to start that way).
 */
export class Auth {
  readonly #byHash: ReadonlyMap<string, Principal>;

  constructor(tokens: readonly TokenEntry[]) {
    this.#byHash = new Map(
      tokens.map((t) => [
        t.sha256,
        { actor: t.name, roles: new Set(t.roles), queues: t.queues && new Set(t.queues) },
      ]),
    );
  }

  /** True when no tokens are configured and every caller is let in. */
  get open(): boolean {
    return this.#byHash.size === 0;
  }

  /**
   * The caller of `procedure`, from its `authorization` header. Throws UnauthenticatedError for a
   * missing or unknown token, PermissionDeniedError when the token's role may not call it.
   */
  authorize(authorization: string | null | undefined, procedure: Procedure): Principal {
    if (this.open) return ANONYMOUS;
    const token = /^Bearer +(\S+) *$/i.exec(authorization ?? "")?.[1];
    if (!token) throw new UnauthenticatedError("missing bearer token (header authorization: Bearer <token>)");
    const principal = this.#byHash.get(hashToken(token));
    if (!principal) throw new UnauthenticatedError("unknown bearer token");
    const allowed = rolesFor(procedure);
    const roles = [...(principal.roles ?? [])];
    if (!roles.some((r) => allowed.includes(r))) {
      throw new PermissionDeniedError(
        `token ${principal.actor} (${roles.join(" and ")}) may not call ${procedure}: it needs ${allowed.join(" or ")}`,
      );
    }
    return principal;
  }
}

/** Throws PermissionDeniedError unless the principal may use every queue in `queues`. */
export function requireQueues(principal: Principal, queues: Iterable<string>): void {
  if (!principal.queues) return;
  for (const q of queues) {
    if (!principal.queues.has(q)) {
      throw new PermissionDeniedError(
        `token ${principal.actor} may not use queue ${q} (it may use ${[...principal.queues].join(", ")})`,
      );
    }
  }
}
