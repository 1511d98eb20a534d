import os from "node:os";
import pg from "pg";

/** A database created for one peer's run; `drop()` removes it (safe to call twice). */
export interface ThrowawayDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

/**
 * Creates `taskq_bench_<pid>_<label>` through the admin connection. One database per peer so no peer
 * pays for another's dead tuples or leftover schema.
 */
export async function createThrowawayDatabase(adminUrl: string, label: string): Promise<ThrowawayDatabase> {
  const name = `taskq_bench_${process.pid}_${label.replace(/[^a-z0-9]/gi, "_").toLowerCase()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        // FORCE: a peer that failed mid-run may still hold connections.
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** What the numbers were measured on; two cores share the peers, Postgres and Redis. */
export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  node: string;
  /** 1-minute load average when the run started: other work on the box depresses every number. */
  loadavg1: number;
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? "unknown",
    node: process.version,
    loadavg1: Math.round((os.loadavg()[0] ?? 0) * 100) / 100,
  };
}
