import { readdir, readFile } from "node:fs/promises";
import { ConfigError } from "../config.js";
import type { Db } from "./db.js";

const migrationsDir = new URL("./migrations/", import.meta.url);

// Any constant works; it only has to be the same for every gateway migrating one database.
const MIGRATION_LOCK = 7_311_845_021;

/**
 * Applies the numbered migrations not yet applied, in order, each in its own transaction, under an
 * advisory lock so concurrently starting gateways migrate once. Returns the versions applied. It runs
 * on a connection of its own without the query timeout: an index build may take long, and so may the
 * wait for another gateway's migration.
 */
export async function migrate(db: Db): Promise<number[]> {
  try {
    return await applyMigrations(db);
  } catch (err) {
    throw startupError(err) ?? err;
  }
}

/**
 * The first statement a gateway runs is here, so this is where a wrong database URL shows: say in one
 * line what to fix (a ConfigError, which the CLI prints without a stack) instead of pg's stack trace.
 */
export function startupError(err: unknown): ConfigError | null {
  const e = err as { code?: string; message?: string; errors?: { code?: string }[] };
  const code = e.code ?? e.errors?.[0]?.code;
  const setting = "databaseUrl (TASKQ_DATABASE_URL)";
  switch (code) {
    case "3D000": {
      const name = /database "(.+)" does not exist/.exec(e.message ?? "")?.[1] ?? "?";
      return new ConfigError(
        `${setting} names database "${name}", which does not exist: create it (createdb ${name}, or CREATE DATABASE "${name}";) and start again; taskq creates its schema in it`,
      );
    }
    case "28P01":
    case "28000":
      return new ConfigError(`Postgres refused the login of ${setting}: ${e.message}`);
    case "ECONNREFUSED":
      return new ConfigError(
        `nothing accepts connections at the host and port of ${setting}: is Postgres running?`,
      );
    case "ENOTFOUND":
      return new ConfigError(`the host of ${setting} is unknown: ${e.message}`);
    default:
      return null;
  }
}

async function applyMigrations(db: Db): Promise<number[]> {
  const files = (await readdir(migrationsDir)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  return db.transaction(
    async (tx) => {
      await tx.query({ name: "", text: "select pg_advisory_xact_lock($1)" }, [MIGRATION_LOCK]);
      await tx.exec(`create schema if not exists taskq;
      create table if not exists taskq.migrations (
        version integer primary key, name text not null, applied_at timestamptz not null default now())`);
      const done = await tx.query<{ version: number }>({
        name: "",
        text: "select version from taskq.migrations",
      });
      const applied = new Set(done.map((r) => r.version));
      const now: number[] = [];
      for (const file of files) {
        const version = Number(file.slice(0, 4));
        if (applied.has(version)) continue;
        await tx.exec(await readFile(new URL(file, migrationsDir), "utf8"));
        await tx.query({ name: "", text: "insert into taskq.migrations (version, name) values ($1, $2)" }, [
          version,
          file,
        ]);
        now.push(version);
      }
      return now;
    },
    { unbounded: true },
  );
}
