import { createContextKey, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { PermissionDeniedError, toConnectError, UnauthenticatedError } from "../errors.js";
import type { Auth, Principal } from "./auth.js";
import { UNAUTHENTICATED_SERVICES } from "./roles.js";
import { untilRefused } from "./until-refused.js";

/** The caller as the current tokens see it: looked up again on each call, so a revocation bites at once. */
type CurrentPrincipal = () => Principal;

const principalKey = createContextKey<CurrentPrincipal | null>(null, { description: "taskq caller" });

/**
 * Authenticates and authorizes every gRPC and Connect call before its handler runs, and leaves the
 * caller in the call's context for handlers that scope by queue or write the audit log.
 *
 * With a tokens file, a call in progress that a reload refuses (its token removed, its roles no longer
 * allowing it) is ended from within the reload, before anything else runs: the handler's signal aborts
 * (a parked poll answers at once), its requests fail with the refusal (a stream waiting for its next
 * message ends), and every later look at the caller throws it. Work already under way (a claim or
 * settle statement) runs to its end; handlers answer the refusal instead of its result where that
 * result would hand the caller jobs (rpc/worker.ts puts them back).
 */
export function authInterceptor(
  auth: Auth,
  denied: (reason: "unauthenticated" | "permission_denied") => void,
): Interceptor {
  return (next) => async (req) => {
    if (UNAUTHENTICATED_SERVICES.has(req.service.typeName)) return next(req);
    const procedure = `${req.service.name}.${req.method.name}` as const;
    const refused = (err: unknown) => {
      if (err instanceof UnauthenticatedError) denied("unauthenticated");
      else if (err instanceof PermissionDeniedError) denied("permission_denied");
      return err;
    };
    let principal: Principal;
    try {
      principal = auth.authorize(req.header.get("authorization"), procedure);
    } catch (err) {
      throw toConnectError(refused(err));
    }
    if (!auth.live) {
      req.contextValues.set(principalKey, () => principal);
      return next(req);
    }
    // Counted once per call, by the first look that finds it refused or by the reload that ended it.
    let cut: Error | undefined;
    // `refusal` aborts when a reload refuses the call; `ended`, the handler's signal, then or at its end.
    const refusal = new AbortController();
    const ended = new AbortController();
    const unwatch = auth.watch(principal, procedure, (err) => {
      cut = refused(err) as Error;
      refusal.abort(toConnectError(err));
      ended.abort(refusal.signal.reason);
    });
    // The call's own signal aborts when it ends, however it ends (connect aborts it on completion too).
    const callEnded = () => {
      unwatch();
      ended.abort(req.signal.reason);
    };
    if (req.signal.aborted) callEnded();
    else req.signal.addEventListener("abort", callEnded, { once: true });
    // Handlers ask at each step (each poll of a Claim stream, each settle batch) and before handing out
    // claimed jobs.
    req.contextValues.set(principalKey, () => {
      if (cut) throw cut;
      try {
        return auth.recheck(principal, procedure);
      } catch (err) {
        cut = refused(err) as Error;
        throw err;
      }
    });
    if (!req.stream) return next({ ...req, signal: ended.signal });
    return next({ ...req, signal: ended.signal, message: untilRefused(req.message, refusal.signal) });
  };
}

/**
 * The caller of this call as the current tokens see it. Throws UnauthenticatedError once its token has
 * been revoked, PermissionDeniedError once its roles no longer allow the call.
 */
export function principalOf(ctx: HandlerContext): Principal {
  const current = ctx.values.get(principalKey);
  // Every route is behind the interceptor; a handler reached without it is a wiring bug, never open.
  if (!current) throw new Error("no principal on the call: the auth interceptor is not installed");
  return current();
}
