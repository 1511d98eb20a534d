import { readFileSync } from "node:fs";
import type { Sql } from "./db.js";

/** The line that marks a section to be planned at each call (see the header of queries/jobs.sql). */
const EACH_CALL = /^-- plan: each call$/m;

/**
 * Reads `-- name: X` sections of a .sql file into named statements, prepared once per connection. A
 * section with the line `-- plan: each call` is left unnamed instead: Postgres plans it at every call,
 * from the table as it is then.
 */
export function loadQueries<N extends string>(file: string, names: readonly N[]): Record<N, Sql> {
  const text = readFileSync(new URL(`./queries/${file}`, import.meta.url), "utf8");
  const found = new Map<string, string>();
  for (const section of text.split(/^-- name: /m).slice(1)) {
    const newline = section.indexOf("\n");
    found.set(
      section.slice(0, newline).trim(),
      section
        .slice(newline + 1)
        .trim()
        .replace(/;$/, ""),
    );
  }
  const out = {} as Record<N, Sql>;
  for (const name of names) {
    const sql = found.get(name);
    if (sql === undefined) throw new Error(`query ${name} missing from ${file}`);
    out[name] = { name: EACH_CALL.test(sql) ? "" : `taskq_${name}`, text: sql };
  }
  return out;
}
