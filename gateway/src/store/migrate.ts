import { readdir, readFile } from "node:fs/promises";
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
