/** What the banner shows: a started gateway's addresses, store and auth mode. */
export interface BannerFacts {
  readonly mode: "dev" | "gateway";
  readonly grpcUrl: string;
  readonly httpUrl: string;
  /** The psql port's URL (taskq dev), else null. */
  readonly devPgUrl: string | null;
  /** The embedded store's absolute path or "memory" (taskq dev), else null. */
  readonly dataDir: string | null;
  /** No tokens: every caller may do everything. */
  readonly open: boolean;
}

/**
 * What `taskq dev` and `taskq gateway` print on a terminal once they serve, instead of the
 * "taskq gateway listening" log line: where each port is, the console, psql and the data of the
 * embedded store, and whether callers need tokens.
 */
export function formatBanner(f: BannerFacts): string {
  const rows: [string, string][] = [
    ["gRPC", f.grpcUrl],
    ["HTTP", f.httpUrl],
    ["console", `${f.httpUrl}/console/`],
  ];
  if (f.devPgUrl) rows.push(["psql", f.devPgUrl]);
  if (f.dataDir) rows.push(["data", f.dataDir === "memory" ? "in memory: nothing is kept" : f.dataDir]);
  rows.push(["auth", f.open ? "open: no tokens, every caller may do everything" : "bearer tokens"]);
  const lines = rows.map(([name, value]) => `  ${name.padEnd(8)} ${value}`);
  return `\ntaskq ${f.mode} is ready\n\n${lines.join("\n")}\n\nCtrl-C stops it.\n\n`;
}
