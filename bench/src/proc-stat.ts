import { readFileSync } from "node:fs";

/** Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`; 100 on every Linux we run on). */
const CLOCK_TICKS = 100;

/** What `/proc/<pid>/stat` says about a process. */
export interface ProcStat {
  /** Executable name, e.g. `postgres`, `redis-server` (at most 15 characters). */
  comm: string;
  /** CPU seconds (user + system) the process has used so far; ns-exact for single-threaded ones. */
  cpuSeconds: number;
}

/**
 * Reads `/proc/<pid>/stat`; undefined when the process is gone or /proc is unavailable (not Linux).
 * Works for other users' processes (Postgres backends, redis-server): the file is world-readable.
 */
export function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid …": comm may contain spaces or parentheses, so split at the last ")".
  const close = text.lastIndexOf(")");
  const comm = text.slice(text.indexOf("(") + 1, close);
  // Fields after "(comm) ": state is the 1st, utime and stime the 12th and 13th, num_threads the 18th.
  const fields = text.slice(close + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  if (!Number.isFinite(ticks)) return undefined;
  const ns = fields[17] === "1" ? schedstatNs(pid) : undefined;
  return { comm, cpuSeconds: ns === undefined ? ticks / CLOCK_TICKS : ns / 1e9 };
}

/**
 * Time on CPU in ns from `/proc/<pid>/schedstat`: exact where stat's ticks are 10 ms steps (a 2,000-job
 * drain over 50 Postgres backends would otherwise carry ±10 µs per job of rounding). It counts the
 * main thread only, so it is used for single-threaded processes (Postgres backends).
 */
function schedstatNs(pid: number): number | undefined {
  try {
    const ns = Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);
    return Number.isFinite(ns) ? ns : undefined;
  } catch {
    return undefined;
  }
}
