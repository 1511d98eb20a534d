import { ConfigError } from "../errors.js";
import type { Db } from "./db.js";
import { type Definition, type Migration, readDefinitions, readMigrations } from "./schema-files.js";

// How the schema is kept (numbered migrations for tables and data, sql/ for the code): README.md here.

// Any constant works; it only has to be the same for every gateway migrating one database.
const MIGRATION_LOCK = 7_311_845_021;

export interface MigrateOptions {
  /** The numbered migrations (tests bring their own). */
  migrationsDir?: URL;
  /** The functions, views and triggers, with their order.txt. */
  sqlDir?: URL;
}

/**
 * Applies the numbered migrations not yet applied, in order, each in its own transaction, then
 * re-applies every sql/ file in one transaction, all under a session-level advisory lock so
 * concurrently starting gateways migrate once. Returns the versions applied. Refuses (ConfigError) a
 * database a pre-release taskq created (its migrations predate the baseline), one where an applied
 * migration's file has changed, or one that has a migration this taskq does not know (a newer taskq
 * migrated it), before changing anything. It runs on a connection of its own
 * without the query timeout: an index build may take long, and so may the wait for another gateway's
 * migration.
 */
export async function migrate(db: Db, opts: MigrateOptions = {}): Promise<number[]> {
  try {
    const migrations = await readMigrations(opts.migrationsDir ?? new URL("./migrations/", import.meta.url));
    const definitions = await readDefinitions(opts.sqlDir ?? new URL("./sql/", import.meta.url));
    return await db.session((session) => migrateLocked(session, migrations, definitions));
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
    // A transaction pooler (PgBouncer, pool_mode = transaction) hands each statement any server
    // connection: a statement prepared by another gateway is already there, or ours is not.
    case "42P05":
    case "26000":
      if (!/prepared statement/.test(e.message ?? "")) return null;
      return new ConfigError(
        `${setting} goes through a pooler that cannot keep prepared statements (${e.message}): set dbPreparedStatements (TASKQ_DB_PREPARED_STATEMENTS) to false, or use PgBouncer 1.21 or later with max_prepared_statements`,
      );
    default:
      // PgBouncer refuses the statement_timeout startup parameter unless told to ignore it.
      if (/unsupported startup parameter/.test(e.message ?? ""))
        return new ConfigError(
          `${setting} goes through a pooler that refuses startup parameters (${e.message}): set dbPooler (TASKQ_DB_POOLER) to transaction, and databaseDirectUrl (TASKQ_DATABASE_DIRECT_URL) to Postgres itself`,
        );
      return null;
  }
}

async function migrateLocked(
  session: Db,
  migrations: readonly Migration[],
  definitions: readonly Definition[],
): Promise<number[]> {
  await session.query({ name: "", text: "select pg_advisory_lock($1)" }, [MIGRATION_LOCK]);
  try {
    await session.exec(`create schema if not exists taskq;
      create table if not exists taskq.migrations (version integer primary key, name text not null,
        applied_at timestamptz not null default now(), checksum text not null)`);
    // Names first: a pre-release database may have no checksum column to read.
    refusePreRelease(
      await session.query<{ version: number; name: string }>({
        name: "",
        text: "select version, name from taskq.migrations order by version",
      }),
      migrations,
    );
    const applied = await session.query<AppliedMigration>({
      name: "",
      text: "select version, name, checksum from taskq.migrations order by version",
    });
    refuseForeign(applied, migrations);
    const done = new Set(applied.map((r) => r.version));
    const now: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await session.transaction(async (tx) => {
        await tx.exec(m.text);
        await tx.query(
          { name: "", text: "insert into taskq.migrations (version, name, checksum) values ($1, $2, $3)" },
          [m.version, m.file, m.checksum],
        );
      });
      now.push(m.version);
    }
    await session.transaction(async (tx) => {
      for (const d of definitions) {
        await tx.exec(d.text).catch((err: Error) => {
          throw new Error(`sql/${d.file}: ${err.message}`, { cause: err });
        });
      }
    });
    return now;
  } finally {
    await session
      .query({ name: "", text: "select pg_advisory_unlock($1)" }, [MIGRATION_LOCK])
      .catch(() => {});
  }
}

interface AppliedMigration {
  version: number;
  name: string;
  checksum: string;
}

/**
 * A database whose first migration is not this baseline was created by a pre-release taskq, whose
 * migrations the baseline replaced: none of them is ever applied again, so its schema can only be
 * created anew. Refused before anything is changed, so such a database is left as it was.
 */
function refusePreRelease(
  applied: readonly { version: number; name: string }[],
  migrations: readonly Migration[],
): void {
  const baseline = migrations[0];
  const first = applied[0];
  if (baseline === undefined || first === undefined) return;
  if (first.version === baseline.version && first.name === baseline.file) return;
  throw new ConfigError(
    `this database was created by a pre-release taskq (its first migration is ${first.name}, not the ${baseline.file} baseline), whose schema cannot be upgraded: create a fresh database (for taskq dev, a new data folder), or drop its taskq schema (DROP SCHEMA taskq CASCADE, which deletes its jobs), and start again`,
  );
}

/**
 * A database this taskq must not touch: it has a migration this taskq does not have (re-applying older
 * sql/ files would undo the newer taskq's), or one whose file changed since it was applied (the
 * database never got the change).
 */
function refuseForeign(applied: readonly AppliedMigration[], migrations: readonly Migration[]): void {
  const byVersion = new Map(migrations.map((m) => [m.version, m]));
  const unknown = applied.filter((r) => !byVersion.has(r.version));
  if (unknown.length > 0) {
    const names = unknown.map((r) => r.name).join(", ");
    const has = unknown.length === 1 ? `migration ${names}, which` : `migrations ${names}, which`;
    throw new ConfigError(
      `the database was migrated by a newer taskq: it has ${has} this taskq does not have; run that newer taskq (or later) against it: taskq does not downgrade a schema`,
    );
  }
  for (const r of applied) {
    const m = byVersion.get(r.version) as Migration;
    if (r.checksum !== m.checksum) {
      throw new ConfigError(
        `migration ${m.file} was changed after it was applied to this database: migrations are append-only; restore it and put the change in a new migration`,
      );
    }
  }
}
