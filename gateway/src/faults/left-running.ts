// "0 left running after lease + one tick": how long after a fault the jobs it stranded stayed
// `running`, measured on the store. A stranded job is one held by a killed worker, or claimed before
// the fault (its claim or settle may have died with a gateway).
import pg from "pg";

export interface StrandedFilter {
  /** Jobs held by these workers (worker_id `<prefix>.<n>`). */
  workerPrefixes?: string[] | undefined;
  /** Jobs whose current attempt started before this instant (epoch ms). */
  startedBeforeMs?: number | undefined;
}

async function countStranded(databaseUrl: string, queue: string, f: StrandedFilter): Promise<number> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const r = await c.query<{ n: number }>(
      `select count(*)::int as n from taskq.jobs where queue = $1 and state = 'running'
        and ($2::text[] is null or split_part(worker_id, '.', 1) = any($2::text[]))
        and ($3::float8 is null or started_at < to_timestamp($3::float8 / 1000))`,
      [queue, f.workerPrefixes ?? null, f.startedBeforeMs ?? null],
    );
    return r.rows[0]?.n ?? 0;
  } finally {
    await c.end();
  }
}

/**
 * Polls until no stranded job is running; resolves with the ms from `faultAtMs` until then, or
 * Infinity if some still were `boundMs` after the fault.
 */
export async function msUntilNoneStranded(
  databaseUrl: string,
  queue: string,
  filter: StrandedFilter,
  faultAtMs: number,
  boundMs: number,
): Promise<number> {
  for (;;) {
    const stranded = await countStranded(databaseUrl, queue, filter);
    const elapsed = Date.now() - faultAtMs;
    if (stranded === 0) return elapsed;
    if (elapsed > boundMs) return Number.POSITIVE_INFINITY;
    await new Promise((r) => setTimeout(r, 50));
  }
}
