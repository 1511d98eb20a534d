import os from "node:os";
import { Redis } from "ioredis";
import pg from "pg";

/** A database created for one peer's run; `drop()` removes it (safe to call twice). */
export interface ThrowawayDatabase {
  readonly url: string;
  /** The database's name, as `pg_stat_activity.datname` shows it. */
  readonly name: string;
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
    name,
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

/** The 1-minute load average now, two decimals. */
export function loadavg1(): number {
  return Math.round((os.loadavg()[0] ?? 0) * 100) / 100;
}

/**
 * Pid of the redis-server behind `redisUrl` (`INFO server` → `process_id`). Only meaningful when that
 * server runs on this machine, which the CPU meter checks in /proc before counting it.
 */
export async function redisPid(redisUrl: string): Promise<number | undefined> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const pid = Number(/^process_id:(\d+)/m.exec(await redis.info("server"))?.[1]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } finally {
    redis.disconnect();
  }
}

export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? "unknown",
    node: process.version,
    loadavg1: loadavg1(),
  };
}
