// `--markdown`: a scenario's current results go into bench/README.md between a pair of markers,
// `<!-- bench:KEY:start -->` and `<!-- bench:KEY:end -->`, stamped with what produced them, so every
// figure in that file comes with its command, machine, load and date and is replaced, not added to.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { MachineInfo } from "./infra.js";

/** bench/README.md: bench/src → .. */
export const README_PATH = fileURLToPath(new URL("../README.md", import.meta.url));

const markers = (key: string) => ({ start: `<!-- bench:${key}:start -->`, end: `<!-- bench:${key}:end -->` });

/** Where the section's body lies in `text` (between the markers), or why it cannot be written. */
function locate(text: string, key: string, path: string): { from: number; to: number } {
  const { start, end } = markers(key);
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (
    from < 0 ||
    to < 0 ||
    to < from ||
    text.indexOf(start, from + 1) >= 0 ||
    text.indexOf(end, to + 1) >= 0
  ) {
    throw new Error(
      `--markdown: ${path} needs one "${start}" followed by one "${end}" where this table belongs`,
    );
  }
  return { from: from + start.length, to };
}

/** Throws unless `path` has the section's markers; run before a scenario, so a long run is not wasted. */
export function checkSection(key: string, path = README_PATH): void {
  locate(readFileSync(path, "utf8"), key, path);
}

/** Replaces the section's body with `body`. */
export function writeSection(key: string, body: string, path = README_PATH): void {
  const text = readFileSync(path, "utf8");
  const { from, to } = locate(text, key, path);
  writeFileSync(path, `${text.slice(0, from)}\n${body.trim()}\n${text.slice(to)}`);
}

/** An argument as a POSIX shell would need it written. */
const shellWord = (arg: string) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`);

/**
 * The command as typed: `npm run bench -- <args>`, after the bench's own environment knobs that change
 * what runs (TASKQ_BENCH_*, but not the service URLs, which say where, not what).
 */
export function commandLine(argv: readonly string[], env: NodeJS.ProcessEnv): string {
  const knobs = Object.entries(env)
    .filter(([k, v]) => k.startsWith("TASKQ_BENCH_") && !k.endsWith("_URL") && v !== undefined && v !== "")
    .map(([k, v]) => `${k}=${shellWord(v ?? "")}`);
  return [...knobs, "npm run bench --", ...argv.map(shellWord)].join(" ");
}

/**
 * `abc1234`, with ` + local changes` when tracked files other than this README differ from it (the
 * README changes with every section written); "unknown" outside git.
 */
function commit(): string {
  const root = fileURLToPath(new URL("../../", import.meta.url));
  const git = (...args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
  try {
    const changed = git(
      "status",
      "--porcelain",
      "--untracked-files=no",
      "--",
      ".",
      ":(exclude)bench/README.md",
    );
    return `${git("rev-parse", "--short", "HEAD")}${changed ? " + local changes" : ""}`;
  } catch {
    return "unknown";
  }
}

const duration = (ms: number) => {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
};

/** The line above a section's table: the command, the machine, the load, when, which code, how long. */
export function stamp(o: {
  command: string;
  machine: MachineInfo;
  loadAtEnd: number;
  startedAt: Date;
  tookMs: number;
}): string {
  const m = o.machine;
  const when = `${o.startedAt.toISOString().slice(0, 16).replace("T", " ")} UTC`;
  return (
    `Produced by \`${o.command}\` on ${m.cpus} × ${m.cpuModel} (Node ${m.node}), load ${m.loadavg1} at ` +
    `start and ${o.loadAtEnd} at the end, ${when}, commit ${commit()}; it took ${duration(o.tookMs)}.`
  );
}
