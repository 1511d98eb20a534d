import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DataDirBusyError, lockDataDir } from "./data-dir-lock.js";
import { pgliteDb } from "./db.js";

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});

async function setup() {
  const root = await mkdtemp(join(tmpdir(), "taskq-lock-"));
  roots.push(root);
  const dataDir = join(root, "data");
  return { root, dataDir, lockFile: `${dataDir}.lock` };
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await once(child, "exit");
  if (child.pid === undefined) throw new Error("no pid");
  return child.pid;
}

describe("lockDataDir", () => {
  it("holds the folder for this process: a second taker is refused, naming the pid, until release", async () => {
    const { dataDir, lockFile } = await setup();
    const lock = await lockDataDir(dataDir);
    expect(await readFile(lockFile, "utf8")).toBe(`${process.pid}\n`);

    const refused = await lockDataDir(dataDir).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(DataDirBusyError);
    expect(refused).toMatchObject({ pid: process.pid, lockFile });
    expect((refused as Error).message).toBe(
      `data directory ${dataDir} is in use by process ${process.pid} (lock file ${lockFile})`,
    );

    await lock.release();
    await lock.release();
    await expect(stat(lockFile)).rejects.toMatchObject({ code: "ENOENT" });
    await (await lockDataDir(dataDir)).release();
  });

  it("refuses a lock held by another live process (its parent here)", async () => {
    const { dataDir, lockFile } = await setup();
    await writeFile(lockFile, `${process.ppid}\n`);
    await expect(lockDataDir(dataDir)).rejects.toMatchObject({ name: "DataDirBusyError", pid: process.ppid });
    expect(await readFile(lockFile, "utf8")).toBe(`${process.ppid}\n`);
  });

  it.each([
    ["a process that has exited", async () => `${await deadPid()}\n`],
    ["no pid at all (its taker died before writing it)", async () => ""],
    ["garbage", async () => "not a pid"],
    // A restarted container's gateway is pid 1 again: a lock with its own pid that it does not hold is old.
    ["this process's own pid, from before (a restart reused it)", async () => `${process.pid}\n`],
  ])("takes over a stale lock: %s", async (_, content) => {
    const { root, dataDir, lockFile } = await setup();
    await writeFile(lockFile, await content());
    const lock = await lockDataDir(dataDir);
    expect(await readFile(lockFile, "utf8")).toBe(`${process.pid}\n`);
    await lock.release();
    // Nothing left behind: no lock, no stale copy moved aside.
    expect(await readdir(root)).toEqual([]);
  });

  it("release leaves a lock that is no longer this process's", async () => {
    const { dataDir, lockFile } = await setup();
    const lock = await lockDataDir(dataDir);
    await writeFile(lockFile, `${process.ppid}\n`);
    await lock.release();
    expect(await readFile(lockFile, "utf8")).toBe(`${process.ppid}\n`);
  });
});

describe("pgliteDb on a locked folder", () => {
  it("refuses before touching anything inside, and frees the folder at close", async () => {
    const { dataDir, lockFile } = await setup();
    const db = await pgliteDb(dataDir);
    const pidFile = join(dataDir, "postmaster.pid");
    const before = { content: await readFile(pidFile, "utf8"), mtimeMs: (await stat(pidFile)).mtimeMs };
    try {
      await new Promise((r) => setTimeout(r, 20));
      await expect(pgliteDb(dataDir)).rejects.toBeInstanceOf(DataDirBusyError);
      expect({ content: await readFile(pidFile, "utf8"), mtimeMs: (await stat(pidFile)).mtimeMs }).toEqual(
        before,
      );
      expect(await db.query({ name: "", text: "SELECT 1 AS one" })).toEqual([{ one: 1 }]);
    } finally {
      await db.close();
    }
    await expect(stat(lockFile)).rejects.toMatchObject({ code: "ENOENT" });
    const again = await pgliteDb(dataDir);
    await again.close();
  });
});
