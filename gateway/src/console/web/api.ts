/** A call the gateway refused or could not answer: the HTTP status and the protocol's error code. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** What `AdminService.WhoAmI` says about the signed-in token. */
export interface Me {
  actor: string;
  roles: string[];
  queues: string[];
  open: boolean;
}

const TIMEOUT_MS = 10_000;

/**
 * The console's only way to the gateway: AdminService over Connect JSON and the REST queue routes, on
 * this page's origin, with the signed-in bearer token. Every action therefore passes the same role
 * check and writes the same audit row as the CLI. A 401 calls `unauthenticated` (back to sign-in).
 */
export class Api {
  constructor(
    private readonly token: string | null,
    private readonly unauthenticated: (err: ApiError) => void = () => {},
  ) {}

  /** Calls `AdminService.<method>` with a protobuf-JSON request (camelCase fields). */
  admin<T>(method: string, request: object = {}): Promise<T> {
    return this.#call<T>(`/taskq.v1.AdminService/${method}`, "POST", request, (body) => body);
  }

  /** Calls `ProducerService.<method>` (the console reads one job with GetJob). */
  producer<T>(method: string, request: object = {}): Promise<T> {
    return this.#call<T>(`/taskq.v1.ProducerService/${method}`, "POST", request, (body) => body);
  }

  /** Calls a REST queue route: `<verb> /api/v1/queues/<queue>/<action>`. */
  queue<T>(verb: "POST" | "PUT" | "DELETE", queue: string, action: string, request?: object): Promise<T> {
    const path = `/api/v1/queues/${encodeURIComponent(queue)}/${action}`;
    return this.#call<T>(path, verb, request, (body) => (body as { error?: unknown }).error);
  }

  /** Who the token is; an open gateway answers without one. */
  whoAmI(): Promise<Me> {
    return this.admin<Partial<Me>>("WhoAmI").then((me) => ({
      actor: me.actor ?? "",
      roles: me.roles ?? [],
      queues: me.queues ?? [],
      open: me.open ?? false,
    }));
  }

  async #call<T>(
    path: string,
    method: string,
    request: object | undefined,
    errorOf: (body: unknown) => unknown,
  ): Promise<T> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let res: Response;
    try {
      res = await fetch(path, {
        method,
        headers,
        body: request === undefined ? undefined : JSON.stringify(request),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (err) {
      throw new ApiError(0, "unavailable", `the gateway did not answer: ${(err as Error).message}`);
    }
    const body: unknown = await res.json().catch(() => null);
    if (res.ok) return body as T;
    const e = (errorOf(body ?? {}) ?? {}) as { code?: string; message?: string };
    const err = new ApiError(res.status, e.code ?? "unknown", e.message ?? `HTTP ${res.status}`);
    if (res.status === 401) this.unauthenticated(err);
    throw err;
  }
}
