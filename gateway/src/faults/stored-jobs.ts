// The final store state the oracle judges: each job of a queue with its state, attempt, and which
// attempt wrote the result (scenario handlers return `{ attempt }`).
import pg from "pg";
import type { StoredJob } from "./oracle.js";

export async function readStoredJobs(databaseUrl: string, queue: string): Promise<StoredJob[]> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const r = await c.query<{ id: string; state: string; attempt: number; result: Buffer | null }>(
      "select id::text, state, attempt, result from taskq.jobs where queue = $1 order by id",
      [queue],
    );
    return r.rows.map((row) => ({
      job: row.id,
      state: row.state,
      attempt: row.attempt,
      resultAttempt: resultAttempt(row.result),
    }));
  } finally {
    await c.end();
  }
}

function resultAttempt(result: Buffer | null): number | null {
  if (!result || result.length === 0) return null;
  try {
    const parsed = JSON.parse(result.toString("utf8")) as { attempt?: unknown };
    return typeof parsed.attempt === "number" ? parsed.attempt : null;
  } catch {
    return null;
  }
}

/** Jobs of `queue` in each state, e.g. { succeeded: 998, running: 2 }. */
export async function countByState(databaseUrl: string, queue: string): Promise<Record<string, number>> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const r = await c.query<{ state: string; n: number }>(
      "select state, count(*)::int as n from taskq.jobs where queue = $1 group by state",
      [queue],
    );
    return Object.fromEntries(r.rows.map((row) => [row.state, row.n]));
  } finally {
    await c.end();
  }
}

/**
 * When each job of `queue` was last claimed, in epoch ms, sorted: `started_at`, which Postgres sets
 * (now()) in the claim's transaction, so no gateway's or worker's clock or delivery delay is in it.
 */
export async function claimStartTimes(databaseUrl: string, queue: string): Promise<number[]> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const r = await c.query<{ ms: number }>(
      "select (extract(epoch from started_at) * 1000)::float8 as ms from taskq.jobs where queue = $1 and started_at is not null order by started_at",
      [queue],
    );
    return r.rows.map((row) => row.ms);
  } finally {
    await c.end();
  }
}
