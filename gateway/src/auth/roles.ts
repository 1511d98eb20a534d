/**
 * The role matrix: which role may call which procedure. It is the one table every transport (gRPC,
 * Connect, REST) consults, through `Auth.authorize`.
 */
export const ROLES = ["operator", "observer", "housekeeper", "worker", "producer"] as const;
export type Role = (typeof ROLES)[number];

/** Roles whose tokens may be limited to a list of queues. */
export const QUEUE_SCOPED: ReadonlySet<Role> = new Set<Role>(["worker", "producer"]);

/** A procedure as `Service.Method`, e.g. `AdminService.PauseQueue` (the REST routes map onto these). */
export type Procedure = `${string}.${string}`;

const readers: Role[] = ["operator", "observer"];

/**
 * Who may call what. A procedure not listed here is operator-only: a new admin verb is closed to
 * everyone else until someone decides otherwise.
 */
const matrix: Record<Procedure, readonly Role[]> = {
  "WorkerService.Claim": ["worker"],
  "WorkerService.ClaimOnce": ["worker"],
  "WorkerService.Settle": ["worker"],
  "WorkerService.Heartbeat": ["worker"],
  "ProducerService.Enqueue": ["producer", "operator"],
  "ProducerService.EnqueueBatch": ["producer", "operator"],
  "ProducerService.EnqueueStream": ["producer", "operator"],
  "ProducerService.GetJob": ["producer", ...readers],
  "ProducerService.CancelJob": ["producer", "operator"],
  "AdminService.GetQueue": readers,
  "AdminService.ListQueues": readers,
  "AdminService.ListFlowLimits": readers,
  "AdminService.ListQueueAudit": readers,
  "AdminService.QueueHealth": readers,
  "AdminService.QueueCounters": readers,
  "AdminService.QueueFlow": readers,
  "AdminService.GetSchedule": readers,
  "AdminService.ListSchedules": readers,
  "AdminService.ListJobs": readers,
  "AdminService.ListJobEvents": readers,
  "AdminService.ListBreakerEvents": readers,
  "AdminService.ListAdaptiveChanges": readers,
  "AdminService.QueueActivity": readers,
  "AdminService.ListWorkers": readers,
  "AdminService.ExplainJob": readers,
  "AdminService.ExplainQueue": readers,
  // A dry run writes nothing: whoever may read a queue may ask what a change would have done to it.
  "AdminService.DryRunLimit": readers,
  "AdminService.PruneQueueAudit": ["operator", "housekeeper"],
  // Every token may ask who it is (the console's sign-in).
  "AdminService.WhoAmI": ROLES,
  // Server reflection (v1 and v1alpha share the name): every token may read the contract.
  "ServerReflection.ServerReflectionInfo": ROLES,
};

/**
 * Services every caller may use without a token, by full name: gRPC health checks, like /healthz, come
 * from probes and load balancers that hold no token.
 */
export const UNAUTHENTICATED_SERVICES: ReadonlySet<string> = new Set(["grpc.health.v1.Health"]);

/** The roles allowed to call `procedure`. */
export function rolesFor(procedure: Procedure): readonly Role[] {
  return matrix[procedure] ?? ["operator"];
}
