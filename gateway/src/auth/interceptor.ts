import { createContextKey, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { PermissionDeniedError, toConnectError, UnauthenticatedError } from "../errors.js";
import type { Auth, Principal } from "./auth.js";

/** The caller as the current tokens see it: looked up again on each call, so a revocation bites at once. */
type CurrentPrincipal = () => Principal;

const principalKey = createContextKey<CurrentPrincipal | null>(null, { description: "taskq caller" });

/**
 * Authenticates and authorizes every gRPC and Connect call before its handler runs, and leaves the
 * caller in the call's context for handlers that scope by queue or write the audit log.
 */
export function authInterceptor(
  auth: Auth,
  denied: (reason: "unauthenticated" | "permission_denied") => void,
): Interceptor {
  return (next) => async (req) => {
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
    // Handlers ask at each step (each poll of a Claim stream, each settle batch): a token removed from
    // the tokens file mid-stream is refused there, with UNAUTHENTICATED, and counted like any refusal.
    req.contextValues.set(principalKey, () => {
      try {
        return auth.recheck(principal, procedure);
      } catch (err) {
        throw refused(err);
      }
    });
    return next(req);
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
