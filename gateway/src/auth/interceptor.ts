import { createContextKey, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { PermissionDeniedError, toConnectError, UnauthenticatedError } from "../errors.js";
import type { Auth, Principal } from "./auth.js";

const principalKey = createContextKey<Principal | null>(null, { description: "taskq caller" });

/**
 * Authenticates and authorizes every gRPC and Connect call before its handler runs, and leaves the
 * caller in the call's context for handlers that scope by queue or write the audit log.
 */
export function authInterceptor(
  auth: Auth,
  denied: (reason: "unauthenticated" | "permission_denied") => void,
): Interceptor {
  return (next) => async (req) => {
    let principal: Principal;
    try {
      principal = auth.authorize(req.header.get("authorization"), `${req.service.name}.${req.method.name}`);
    } catch (err) {
      if (err instanceof UnauthenticatedError) denied("unauthenticated");
      else if (err instanceof PermissionDeniedError) denied("permission_denied");
      throw toConnectError(err);
    }
    req.contextValues.set(principalKey, principal);
    return next(req);
  };
}

/** The caller of this call, as the interceptor found it. */
export function principalOf(ctx: HandlerContext): Principal {
  const p = ctx.values.get(principalKey);
  // Every route is behind the interceptor; a handler reached without it is a wiring bug, never open.
  if (!p) throw new Error("no principal on the call: the auth interceptor is not installed");
  return p;
}
