import { randomBytes } from "node:crypto";
import { link, open, readFile, rename, unlink } from "node:fs/promises";

// One process per embedded store: PGlite rewrites postmaster.pid (and everything else) in its folder
// without asking, so a second `taskq dev` on the same folder would corrupt the first's. A lock file
// beside the folder (initdb wants the folder itself empty), created with O_EXCL, holds the pid of the
// process that owns it. A lock whose process is gone (killed, crashed) is stale and taken over.

/** The data directory is held by a process that is still running. */
export class DataDirBusyError extends Error {
  override name = "DataDirBusyError";
  constructor(
    readonly dataDir: string,
    readonly lockFile: string,
    readonly pid: number,
  ) {
    super(`data directory ${dataDir} is in use by process ${pid} (lock file ${lockFile})`);
  }
}

/** A data directory this process holds. */
export interface DataDirLock {
  readonly file: string;
  /** Removes the lock file if it is still this process's. Safe to call twice. */
  release(): Promise<void>;
}

/** How long a lock file found empty may take to get its pid (its creator is between open and write). */
const EMPTY_LOCK_WAIT_MS = 500;

/**
 * Lock files this process holds. A lock naming this process's own pid that is not among them was left
 * by an earlier process that had the same pid (pid 1 of a container, restarted).
 */
const heldHere = new Set<string>();

/**
 * Takes the lock of `dataDir` (an absolute path; its parent must exist), or throws DataDirBusyError
 * naming the live process that holds it. Touches nothing inside `dataDir`.
 */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const file = `${dataDir}.lock`;
  const mine = `${process.pid}\n`;
  // A few rounds: each one either creates the file, refuses, or clears a stale lock for the next.
  for (let round = 0; round < 5; round++) {
    if (await createExclusive(file, mine)) {
      heldHere.add(file);
      let released = false;
      return {
        file,
        release: async () => {
          if (released) return;
          released = true;
          heldHere.delete(file);
          const now = await readFile(file, "utf8").catch(() => null);
          if (now === mine) await unlink(file).catch(() => {});
        },
      };
    }
    const content = await settledContent(file);
    if (content === null) continue; // removed meanwhile: try again
    const pid = parsePid(content);
    if (pid !== null && (pid === process.pid ? heldHere.has(file) : alive(pid))) {
      throw new DataDirBusyError(dataDir, file, pid);
    }
    await clearStale(file, content);
  }
  throw new Error(`could not take the lock ${file}: other processes keep replacing it`);
}

async function createExclusive(file: string, content: string): Promise<boolean> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, "wx");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
  try {
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
  return true;
}

/** The lock file's content, waiting a moment while it is empty; null when it is gone. */
async function settledContent(file: string): Promise<string | null> {
  const deadline = Date.now() + EMPTY_LOCK_WAIT_MS;
  for (;;) {
    const content = await readFile(file, "utf8").catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return null;
      throw err;
    });
    if (content !== "" || Date.now() > deadline) return content;
    await new Promise((r) => setTimeout(r, 20));
  }
}

function parsePid(content: string): number | null {
  const m = /^(\d+)\n?$/.exec(content);
  return m ? Number(m[1]) : null;
}

/** Whether another process with this pid runs. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Removes a stale lock, unless another process has replaced it since it was read: the file is moved
 * aside first (only one mover wins), and put back when what was moved is not the stale content.
 */
async function clearStale(file: string, staleContent: string): Promise<void> {
  const aside = `${file}.stale-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    await rename(file, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  try {
    if ((await readFile(aside, "utf8")) !== staleContent) await link(aside, file).catch(() => {});
  } finally {
    await unlink(aside).catch(() => {});
  }
}
