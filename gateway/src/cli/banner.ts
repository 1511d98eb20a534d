import type { LogRecord } from "../log-text.js";

/**
 * What `taskq dev` and `taskq gateway` print on a terminal once they serve, from the fields of their
 * "taskq gateway listening" log record: where each port is, the console, psql and the data of the
 * embedded store, and whether callers need tokens.
 */
export function formatBanner(record: LogRecord): string {
  const httpUrl = String(record.httpUrl);
  const rows: [string, string][] = [
    ["gRPC", String(record.grpcUrl)],
    ["HTTP", httpUrl],
    ["console", `${httpUrl}/console/`],
  ];
  if (typeof record.devPgUrl === "string") rows.push(["psql", record.devPgUrl]);
  if (typeof record.dataDir === "string") {
    rows.push(["data", record.dataDir === "memory" ? "in memory: nothing is kept" : record.dataDir]);
  }
  rows.push([
    "auth",
    record.auth === "open" ? "open: no tokens, every caller may do everything" : "bearer tokens",
  ]);
  const title = `taskq ${record.mode === "dev" ? "dev" : "gateway"} is ready`;
  const lines = rows.map(([name, value]) => `  ${name.padEnd(8)} ${value}`);
  return `\n${title}\n\n${lines.join("\n")}\n\nCtrl-C stops it.\n\n`;
}
