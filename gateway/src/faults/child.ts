// A TypeScript entry point run as a child process (node + tsx, like `npm run taskq`), so a scenario can
// kill -9, SIGSTOP and SIGCONT it. Its stdout is split into lines for the caller; stderr is kept for the
// failure message.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Repository root: gateway/src/faults → ../../.. */
export const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

export interface TsChild {
  readonly proc: ChildProcess;
  readonly pid: number;
  /** Resolves when the process has exited (killed or not) and its stdout is drained. */
  readonly exited: Promise<void>;
  /** The last 64 KiB of stderr and stdout lines not taken by `onLine`. */
  output(): string;
  signal(sig: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone (SIGCONT first if stopped). */
  stop(graceMs?: number): Promise<void>;
}

export function spawnTs(
  entry: string,
  args: readonly string[],
  env: Record<string, string | undefined>,
  onLine: (line: string) => boolean = () => false,
  preloads: readonly string[] = [],
): TsChild {
  const imports = preloads.flatMap((p) => ["--import", p]);
  const proc = spawn(
    process.execPath,
    ["--conditions=taskq-source", "--import", "tsx", ...imports, entry, ...args],
    {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  if (proc.pid === undefined) throw new Error(`could not start ${entry}`);
  let tail = "";
  const keep = (text: string) => {
    tail = (tail + text).slice(-65_536);
  };
  let partial = "";
  proc.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) if (line && !onLine(line)) keep(`${line}\n`);
  });
  proc.stderr?.setEncoding("utf8").on("data", keep);
  const exited = new Promise<void>((resolve) => proc.once("close", () => resolve()));
  const gone = () => proc.exitCode !== null || proc.signalCode !== null;
  return {
    proc,
    pid: proc.pid,
    exited,
    output: () => tail,
    signal: (sig) => {
      if (!gone()) proc.kill(sig);
    },
    stop: async (graceMs = 10_000) => {
      if (gone()) return;
      proc.kill("SIGCONT");
      proc.kill("SIGTERM");
      const killer = setTimeout(() => proc.kill("SIGKILL"), graceMs);
      await exited;
      clearTimeout(killer);
    },
  };
}
