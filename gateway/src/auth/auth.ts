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

/** The names a token reload added and removed (a token whose hash changed counts as both). */
export interface TokenChanges {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** Calls in progress that the new tokens refuse, ended by the reload (see `watch`). */
  readonly ended: number;
}

/** A call in progress, told when the tokens stop allowing it. */
interface OpenCall {
  readonly principal: Principal;
  readonly procedure: Procedure;
  readonly refused: (err: UnauthenticatedError | PermissionDeniedError) => void;
}

/**
 * Bearer-token authentication and the role check, shared by every transport. With no tokens
 * configured the gateway is open (dev mode only: production refuses to start that way). Tokens loaded
 * from a watched file are live: `replace` swaps them, and a call's principal is looked up again at each
 * step of a stream (`recheck`), and every call in progress that the new tokens refuse is told so within
 * `replace` itself (`watch`): its streams and parked polls end before any other work runs.
 */
export class Auth {
  #byHash: ReadonlyMap<string, Principal>;
  /** Which token each principal came from, kept here so the hash never rides along with the principal. */
  #hashOf = new WeakMap<Principal, string>();
  readonly #live: boolean;
  readonly #open = new Set<OpenCall>();

  /** `live`: the tokens come from a file and may change; such a gateway is never open, even with none. */
  constructor(tokens: readonly TokenEntry[], opts: { live?: boolean } = {}) {
    this.#live = opts.live ?? false;
    this.#byHash = this.#index(tokens);
  }

  /** True when no tokens are configured and every caller is let in. */
  get open(): boolean {
    return !this.#live && this.#byHash.size === 0;
  }

  /** True when the tokens may change while calls are open (they come from a watched file). */
  get live(): boolean {
    return this.#live;
  }

  /**
   * Swaps in a new token list (a live Auth only), returning what changed by name. Before it returns,
   * every watched call the new tokens refuse (its token removed, or its roles no longer allowing it) has
   * been told, once: nothing else runs between the swap and those calls ending.
   */
  replace(tokens: readonly TokenEntry[]): TokenChanges {
    if (!this.#live) throw new Error("replace needs an Auth made with { live: true }");
    const before = new Map([...this.#byHash].map(([hash, p]) => [hash, p.actor]));
    this.#byHash = this.#index(tokens);
    const added = tokens.filter((t) => !before.has(t.sha256)).map((t) => t.name);
    const removed = [...before].filter(([hash]) => !this.#byHash.has(hash)).map(([, name]) => name);
    let ended = 0;
    for (const call of this.#open) {
      try {
        this.recheck(call.principal, call.procedure);
      } catch (err) {
        this.#open.delete(call);
        ended++;
        call.refused(err as UnauthenticatedError | PermissionDeniedError);
      }
    }
    return { added, removed, ended };
  }

  /**
   * Tells `refused` once if a reload stops allowing `principal` to call `procedure`, until the returned
   * function is called (when the call ends). Nothing to watch on an Auth that is not live.
   */
  watch(
    principal: Principal,
    procedure: Procedure,
    refused: (err: UnauthenticatedError | PermissionDeniedError) => void,
  ): () => void {
    if (!this.#live) return () => {};
    const call: OpenCall = { principal, procedure, refused };
    this.#open.add(call);
    return () => this.#open.delete(call);
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
    return allowed(principal, procedure);
  }

  /**
   * `principal` as the current tokens see it: the same token's entry now (its roles and queues may have
   * changed), or UnauthenticatedError when the token has been removed since the call began.
   */
  recheck(principal: Principal, procedure: Procedure): Principal {
    if (principal === ANONYMOUS) return principal;
    const now = this.#byHash.get(this.#hashOf.get(principal) ?? "");
    if (!now) throw new UnauthenticatedError(`token ${principal.actor} has been revoked`);
    return allowed(now, procedure);
  }

  #index(tokens: readonly TokenEntry[]): ReadonlyMap<string, Principal> {
    const out = new Map<string, Principal>();
    for (const t of tokens) {
      const p: Principal = { actor: t.name, roles: new Set(t.roles), queues: t.queues && new Set(t.queues) };
      this.#hashOf.set(p, t.sha256);
      out.set(t.sha256, p);
    }
    return out;
  }
}

/** `principal` if its roles may call `procedure`, else PermissionDeniedError. */
function allowed(principal: Principal, procedure: Procedure): Principal {
  const allowedRoles = rolesFor(procedure);
  const roles = [...(principal.roles ?? [])];
  if (!roles.some((r) => allowedRoles.includes(r))) {
    throw new PermissionDeniedError(
      `token ${principal.actor} (${roles.join(" and ")}) may not call ${procedure}: it needs ${allowedRoles.join(" or ")}`,
    );
  }
  return principal;
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
