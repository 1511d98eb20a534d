// migrate(): numbered migrations once each, in their own transactions, under one advisory lock; the
// sql/ definitions re-applied every time; a database with an edited or unknown migration refused
// before anything changes. On PGlite and on Postgres.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../errors.js";
import { freshPostgres, haveService, testEngines } from "../testing/services.js";
import { type Db, postgresDb } from "./db.js";
import { migrate } from "./migrate.js";
import { checksumOf, readDefinitions, readMigrations } from "./schema-files.js";

const sql = (text: string) => ({ name: "", text });

/** Every function, view and trigger of the taskq schema as Postgres prints it, with its grants. */
async function definitions(db: Db): Promise<Record<string, string>> {
  const rows = await db.query<{ k: string; v: string }>(
    sql(`select 'function ' || p.oid::regprocedure::text as k,
           pg_get_functiondef(p.oid) || coalesce(p.proacl::text, '') as v
         from pg_proc p where p.pronamespace = 'taskq'::regnamespace
         union all
         select 'view ' || c.relname, pg_get_viewdef(c.oid) || coalesce(c.relacl::text, '')
         from pg_class c where c.relnamespace = 'taskq'::regnamespace and c.relkind = 'v'
         union all
         select 'trigger ' || t.tgname, pg_get_triggerdef(t.oid)
         from pg_trigger t join pg_class c on c.oid = t.tgrelid
         where c.relnamespace = 'taskq'::regnamespace and not t.tgisinternal`),
  );
  return Object.fromEntries(rows.map((r) => [r.k, r.v]));
}

const applied = (db: Db) =>
  db.query<{ version: number; name: string; checksum: string | null; applied_at: Date }>(
    sql("select version, name, checksum, applied_at from taskq.migrations order by version"),
  );

async function refusal(running: Promise<unknown>): Promise<ConfigError> {
  const err = await running.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

/** A database with nothing in it, on each engine. */
const bareEngines = testEngines({ migrated: false });

describe("the schema files", () => {
  it("lists every sql/ file in order.txt exactly once", async () => {
    const defs = await readDefinitions(new URL("./sql/", import.meta.url));
    expect(defs.length).toBeGreaterThan(60);
    expect(defs.at(-1)?.file).toBe("grants.sql");
  });

  it("checksums a migration the same with CRLF or LF line endings", () => {
    expect(checksumOf("create table t ();\r\nselect 1;\r\n")).toBe(
      checksumOf("create table t ();\nselect 1;\n"),
    );
    expect(checksumOf("select 1;")).not.toBe(checksumOf("select 2;"));
  });
});

for (const engine of bareEngines) {
  describe.skipIf(!engine.available())(`migrate on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let all: number[];
    let fresh: Record<string, string>;
    beforeAll(async () => {
      ({ db, close } = await engine.open());
      all = (await readMigrations(new URL("./migrations/", import.meta.url))).map((m) => m.version);
    });
    afterAll(() => close());

    it("applies every migration once, recording its checksum; the second time applies none", async () => {
      expect(await migrate(db)).toEqual(all);
      const first = await applied(db);
      const files = await readMigrations(new URL("./migrations/", import.meta.url));
      expect(first.map((r) => [r.version, r.name, r.checksum])).toEqual(
        files.map((m) => [m.version, m.file, m.checksum]),
      );
      fresh = await definitions(db);
      expect(Object.keys(fresh).filter((k) => k.startsWith("function ")).length).toBeGreaterThan(50);

      expect(await migrate(db)).toEqual([]);
      expect(await applied(db)).toEqual(first);
      expect(await definitions(db)).toEqual(fresh);
    });

    it("restores functions, views and triggers dropped or changed by hand, with their grants", async () => {
      await db.exec(`
        create or replace function taskq.invalid(field text, rule text) returns void language plpgsql as $$
        begin end $$;
        drop view taskq.queue_flow, taskq.queue_counters;
        drop trigger queues_throttle_version on taskq.queues;
        drop function taskq.pause_queue(text, text);
        drop function taskq.queue_settings(taskq.queues) cascade;
        drop function taskq.breaker_settings(taskq.queues);`);
      expect(Object.keys(await definitions(db))).not.toContain("function taskq.pause_queue(text,text)");
      expect(await migrate(db)).toEqual([]);
      expect(await definitions(db)).toEqual(fresh);
    });

    it("refuses a migration changed after it was applied, naming its file, and changes nothing", async () => {
      const before = await applied(db);
      await db.exec("update taskq.migrations set checksum = 'edited' where version = 1");
      await db.exec("drop function taskq.pause_queue(text, text)");
      const err = await refusal(migrate(db));
      expect(err.message).toBe(
        "migration 0001_baseline.sql was changed after it was applied to this database: migrations are append-only; restore it and put the change in a new migration",
      );
      expect(Object.keys(await definitions(db))).not.toContain("function taskq.pause_queue(text,text)");
      await db.query(sql("update taskq.migrations set checksum = $1 where version = 1"), [
        before[0]?.checksum,
      ]);
      expect(await migrate(db)).toEqual([]);
      expect(await definitions(db)).toEqual(fresh);
    });

    it("refuses a database a newer taskq migrated, naming its migration, and leaves its functions alone", async () => {
      const newer = `create or replace function taskq.check_actor(actor text) returns text
        language plpgsql immutable as $$ begin return 'newer'; end $$`;
      await db.exec(`${newer};
        insert into taskq.migrations (version, name, checksum) values (9999, '9999_from_the_future.sql', 'x')`);
      const theirs = await definitions(db);
      const err = await refusal(migrate(db));
      expect(err.message).toMatch(/migrated by a newer taskq: it has migration 9999_from_the_future\.sql/);
      expect(await definitions(db)).toEqual(theirs);
      expect(theirs["function taskq.check_actor(text)"]).toContain("'newer'");
      await db.exec("delete from taskq.migrations where version = 9999");
      expect(await migrate(db)).toEqual([]);
      expect(await definitions(db)).toEqual(fresh);
    });
  });
}

/**
 * The migrations table of a database the last pre-release taskq created: versions 1 to 23, the first
 * 0001_init.sql (the baseline replaced them all), each with a checksum.
 */
const preRelease = Array.from({ length: 23 }, (_, i) =>
  i === 0 ? "0001_init.sql" : `${String(i + 1).padStart(4, "0")}_pre_release.sql`,
);

/** Everything in the taskq schema, by kind and name, to tell that a refused migrate changed nothing. */
const everything = async (db: Db) =>
  (
    await db.query<{ o: string }>(
      sql(`select c.relkind::text || ' ' || c.relname || ' ' || coalesce(
             (select string_agg(a.attname || ':' || format_type(a.atttypid, a.atttypmod), ',' order by a.attnum)
              from pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped), '') as o
           from pg_class c where c.relnamespace = 'taskq'::regnamespace
           union all
           select 'function ' || p.oid::regprocedure::text from pg_proc p
           where p.pronamespace = 'taskq'::regnamespace
           order by 1`),
    )
  ).map((r) => r.o);

for (const engine of bareEngines) {
  describe.skipIf(!engine.available())(
    `migrate on a database a pre-release taskq created, on ${engine.name}`,
    () => {
      let db: Db;
      let close: () => Promise<void>;
      beforeAll(async () => {
        ({ db, close } = await engine.open());
      });
      afterAll(() => close());

      const message =
        "this database was created by a pre-release taskq (its first migration is 0001_init.sql, not the 0001_baseline.sql baseline), whose schema cannot be upgraded: create a fresh database (for taskq dev, a new data folder), or drop its taskq schema (DROP SCHEMA taskq CASCADE, which deletes its jobs), and start again";

      it("refuses one whose migrations table has no checksums yet, and changes nothing", async () => {
        // As the earliest versions left it: no checksum column, one of their tables with a job in it.
        await db.exec(`create schema taskq;
        create table taskq.migrations (
          version integer primary key, name text not null, applied_at timestamptz not null default now());
        insert into taskq.migrations (version, name) values (1, '0001_init.sql'), (2, '0002_queues.sql');
        create table taskq.jobs (id bigint primary key, queue text not null);
        insert into taskq.jobs values (1, 'mail');`);
        const before = await everything(db);
        const rows = await db.query(sql("select version, name, applied_at from taskq.migrations order by 1"));
        const err = await refusal(migrate(db));
        expect(err.message).toBe(message);
        expect(await everything(db)).toEqual(before);
        expect(
          await db.query(sql("select version, name, applied_at from taskq.migrations order by 1")),
        ).toEqual(rows);
        expect(await db.query(sql("select id::int, queue from taskq.jobs"))).toEqual([
          { id: 1, queue: "mail" },
        ]);
        await db.exec("drop schema taskq cascade");
      });

      it("refuses one migrated to the last pre-release version; once its schema is dropped, migrates afresh", async () => {
        await db.exec(`create schema taskq;
        create table taskq.migrations (
          version integer primary key, name text not null, applied_at timestamptz not null default now(),
          checksum text)`);
        for (const [i, name] of preRelease.entries())
          await db.query(sql("insert into taskq.migrations (version, name, checksum) values ($1, $2, $3)"), [
            i + 1,
            name,
            checksumOf(name),
          ]);
        const before = await everything(db);
        const rows = await applied(db);
        const err = await refusal(migrate(db));
        expect(err.message).toBe(message);
        expect(await everything(db)).toEqual(before);
        expect(await applied(db)).toEqual(rows);

        // What the message offers: its taskq schema dropped, the database migrates as a new one.
        await db.exec("drop schema taskq cascade");
        const files = await readMigrations(new URL("./migrations/", import.meta.url));
        expect(await migrate(db)).toEqual(files.map((m) => m.version));
        expect((await applied(db)).map((r) => r.name)).toEqual(files.map((m) => m.file));
        expect(files[0]?.file).toBe("0001_baseline.sql");
      });
    },
  );
}

/** Folders of migrations and definitions of a test's own; `write` replaces or adds files. */
async function scratchSchema(files: Record<string, string>) {
  const root = await mkdtemp(join(tmpdir(), "taskq-migrate-"));
  const dirs = { migrationsDir: pathToFileURL(`${root}/migrations/`), sqlDir: pathToFileURL(`${root}/sql/`) };
  const write = async (more: Record<string, string>) => {
    await mkdir(join(root, "migrations"), { recursive: true });
    await mkdir(join(root, "sql"), { recursive: true });
    for (const [path, text] of Object.entries(more)) await writeFile(join(root, path), text);
  };
  await write(files);
  return { dirs, write, remove: () => rm(root, { recursive: true, force: true }) };
}

const exists = async (db: Db, relation: string) =>
  (await db.query<{ r: string | null }>(sql(`select to_regclass('${relation}')::text as r`)))[0]?.r !== null;

for (const engine of bareEngines) {
  describe.skipIf(!engine.available())(`migrate with migrations of a test's own, on ${engine.name}`, () => {
    let db: Db;
    let close: () => Promise<void>;
    let scratch: Awaited<ReturnType<typeof scratchSchema>>;
    beforeAll(async () => {
      ({ db, close } = await engine.open());
      scratch = await scratchSchema({
        "migrations/0001_one.sql": "create table taskq.one (id int);",
        "migrations/0002_two.sql": "create table taskq.two (id int);\nselect 1 / 0;",
        "sql/order.txt": "# the one definition\none_count.sql\n",
        "sql/one_count.sql":
          "create or replace function taskq.one_count() returns bigint language sql as $$ select count(*) from taskq.one $$;",
      });
    });
    afterAll(async () => {
      await close();
      await scratch.remove();
    });

    it("rolls back a failing migration only: the ones before it stay applied", async () => {
      await expect(migrate(db, scratch.dirs)).rejects.toThrow(/division by zero/);
      expect((await applied(db)).map((r) => r.version)).toEqual([1]);
      expect(await exists(db, "taskq.one")).toBe(true);
      expect(await exists(db, "taskq.two")).toBe(false);
      // Nothing of sql/ ran: the definitions come after every migration applied.
      expect(await db.query(sql("select to_regproc('taskq.one_count')::text as f"))).toEqual([{ f: null }]);

      await scratch.write({ "migrations/0002_two.sql": "create table taskq.two (id int);" });
      expect(await migrate(db, scratch.dirs)).toEqual([2]);
      expect(await db.query(sql("select taskq.one_count()::int as n"))).toEqual([{ n: 0 }]);
    });

    it("applies sql/ in one transaction, naming the file that failed", async () => {
      await scratch.write({
        "sql/order.txt": "one_count.sql\nbroken.sql\n",
        "sql/one_count.sql":
          "create or replace function taskq.one_count() returns bigint language sql as $$ select count(*) + 1 from taskq.one $$;",
        "sql/broken.sql": "create or replace view taskq.broken as select * from taskq.nowhere;",
      });
      await expect(migrate(db, scratch.dirs)).rejects.toThrow(/^sql\/broken\.sql: .*nowhere/);
      expect(await db.query(sql("select taskq.one_count()::int as n"))).toEqual([{ n: 0 }]);
    });

    it("refuses a sql/ file that order.txt does not list", async () => {
      await scratch.write({ "sql/order.txt": "one_count.sql\n" });
      await expect(migrate(db, scratch.dirs)).rejects.toThrow(/broken\.sql is not listed in order\.txt/);
    });
  });
}

describe.skipIf(!haveService("postgres"))("two gateways starting together on one fresh Postgres", () => {
  it("migrate it once: one applies every migration, the other waits and finds nothing to do", async () => {
    const fresh = await freshPostgres({ migrated: false });
    const a = postgresDb({ url: fresh.url, poolSize: 1 });
    const b = postgresDb({ url: fresh.url, poolSize: 1 });
    try {
      const results = await Promise.all([migrate(a), migrate(b)]);
      const all = (await readMigrations(new URL("./migrations/", import.meta.url))).map((m) => m.version);
      expect(results.map((r) => r.length).sort()).toEqual([0, all.length]);
      expect(results.flat()).toEqual(all);
      expect((await applied(a)).map((r) => r.version)).toEqual(all);
    } finally {
      await a.close();
      await b.close();
      await fresh.drop();
    }
  });
});
