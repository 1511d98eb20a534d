import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { hashToken } from "../auth/tokens.js";
import { freshPostgres, haveService, testServices } from "../testing/services.js";

// `taskq gateway` and `taskq migrate` on a database URL that cannot work end with one line saying what
// to fix, not pg's stack trace. Real processes against the real test Postgres.

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const cliPath = fileURLToPath(new URL("../cli.ts", import.meta.url));

function taskq(args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ["--conditions=taskq-source", "--import", "tsx", cliPath, ...args],
      { cwd: repoRoot, env: { ...process.env, ...env }, timeout: 30_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

const tokens = JSON.stringify([{ name: "ops", role: "operator", sha256: hashToken("secret") }]);
/** What `taskq gateway` needs besides its database, so that only the database can stop it. */
const gatewayEnv = {
  // Required in gateway mode, never reached: the database fails the start before the limiter.
  TASKQ_REDIS_URL: "redis://127.0.0.1:1",
  TASKQ_TOKENS: tokens,
  TASKQ_HOST: "127.0.0.1",
  TASKQ_GRPC_PORT: "0",
  TASKQ_HTTP_PORT: "0",
  TASKQ_LOG_LEVEL: "silent",
};

describe.runIf(haveService("postgres"))("starting on a database that cannot work", () => {
  const missing = `taskq_missing_${randomBytes(4).toString("hex")}`;
  const url = (path: string, user?: string) => {
    const u = new URL(testServices.postgresUrl);
    u.pathname = `/${path}`;
    if (user) u.username = user;
    return u.toString();
  };

  it.each(["gateway", "migrate"])(
    "taskq %s on a database that does not exist says to create it",
    async (cmd) => {
      const out = await taskq([cmd], { TASKQ_DATABASE_URL: url(missing), ...gatewayEnv });
      expect(out.code).toBe(2);
      expect(out.stderr).toBe(
        `taskq: databaseUrl (TASKQ_DATABASE_URL) names database "${missing}", which does not exist: create it (createdb ${missing}, or CREATE DATABASE "${missing}";) and start again; taskq creates its schema in it\n`,
      );
    },
  );

  it("says so in one line when the login is refused, or nothing listens", async () => {
    const refused = await taskq(["migrate"], { TASKQ_DATABASE_URL: url("postgres", "no_such_role_taskq") });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /^taskq: Postgres refused the login of databaseUrl \(TASKQ_DATABASE_URL\): .+\n$/,
    );
    const down = await taskq(["migrate"], { TASKQ_DATABASE_URL: "postgres://postgres@127.0.0.1:1/postgres" });
    expect(down).toMatchObject({
      code: 2,
      stderr:
        "taskq: nothing accepts connections at the host and port of databaseUrl (TASKQ_DATABASE_URL): is Postgres running?\n",
    });
  });

  it("taskq migrate on a database a newer taskq migrated says so in one line, and exits 2", async () => {
    const fresh = await freshPostgres();
    try {
      const c = new pg.Client({ connectionString: fresh.url });
      await c.connect();
      await c.query(
        "insert into taskq.migrations (version, name, checksum) values (9999, '9999_newer.sql', 'x')",
      );
      await c.end();
      const out = await taskq(["migrate"], { TASKQ_DATABASE_URL: fresh.url });
      expect(out).toMatchObject({
        code: 2,
        stderr:
          "taskq: the database was migrated by a newer taskq: it has migration 9999_newer.sql, which this taskq does not have; run that newer taskq (or later) against it: taskq does not downgrade a schema\n",
      });
    } finally {
      await fresh.drop();
    }
  });

  it.each(["gateway", "migrate"])(
    "taskq %s on a database a pre-release taskq created says to start on a fresh one, and exits 2",
    async (cmd) => {
      const fresh = await freshPostgres({ migrated: false });
      try {
        const c = new pg.Client({ connectionString: fresh.url });
        await c.connect();
        await c.query(`create schema taskq;
          create table taskq.migrations (version integer primary key, name text not null,
            applied_at timestamptz not null default now(), checksum text);
          insert into taskq.migrations (version, name, checksum) values (1, '0001_init.sql', 'x'), (2, '0002_queues.sql', 'y')`);
        await c.end();
        const out = await taskq([cmd], { TASKQ_DATABASE_URL: fresh.url, ...gatewayEnv });
        expect(out).toMatchObject({
          code: 2,
          stderr:
            "taskq: this database was created by a pre-release taskq (its first migration is 0001_init.sql, not the 0001_baseline.sql baseline), whose schema cannot be upgraded: create a fresh database (for taskq dev, a new data folder), or drop its taskq schema (DROP SCHEMA taskq CASCADE, which deletes its jobs), and start again\n",
        });
      } finally {
        await fresh.drop();
      }
    },
  );
});
