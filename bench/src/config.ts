/** Where the benchmark finds its services. Parsed once in `main.ts`; nothing is read at import time. */
export interface BenchConfig {
  /**
   * Postgres URL of a database the harness can connect to in order to CREATE/DROP throwaway databases
   * (`TASKQ_BENCH_PG_URL`, default `postgres://postgres@127.0.0.1:5432/postgres`). Every peer gets its
   * own fresh database, dropped at the end of its run.
   */
  readonly pgAdminUrl: string;
  /**
   * Redis URL including the db index (`TASKQ_BENCH_REDIS_URL`, default `redis://127.0.0.1:6379/9`).
   * Never db 0: that one belongs to whoever else uses this Redis. Keys are prefixed per run as well.
   */
  readonly redisUrl: string;
}

/** Reads, defaults and freezes the config from an environment map. */
export function loadBenchConfig(env: NodeJS.ProcessEnv): BenchConfig {
  const redisUrl = env.TASKQ_BENCH_REDIS_URL ?? "redis://127.0.0.1:6379/9";
  const db = new URL(redisUrl).pathname.replace("/", "");
  if (db === "" || db === "0") {
    throw new Error(`TASKQ_BENCH_REDIS_URL must name a db index other than 0, got ${redisUrl}`);
  }
  return Object.freeze({
    pgAdminUrl: env.TASKQ_BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    redisUrl,
  });
}
