import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";

/** A numbered migration file: tables and data, applied once per database. */
export interface Migration {
  version: number;
  file: string;
  text: string;
  /** sha256 of the text with CRLF as LF, so a checkout's line endings do not count as a change. */
  checksum: string;
}

/** A file of sql/: one function, view or trigger (or the grants), re-applied on every migrate. */
export interface Definition {
  file: string;
  text: string;
}

export function checksumOf(text: string): string {
  return createHash("sha256").update(text.replace(/\r\n/g, "\n")).digest("hex");
}

/** The numbered migrations of `dir` (NNNN_name.sql), by version. */
export async function readMigrations(dir: URL): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => {
      const text = await readFile(new URL(file, dir), "utf8");
      return { version: Number(file.slice(0, 4)), file, text, checksum: checksumOf(text) };
    }),
  );
}

/**
 * The files of `dir` in the order its order.txt lists them (one name a line, # comments). A file the
 * list leaves out, or a name without a file, is an error: a definition is applied or it is not there.
 */
export async function readDefinitions(dir: URL): Promise<Definition[]> {
  const manifest = await readFile(new URL("order.txt", dir), "utf8");
  const order = manifest
    .split(/\r?\n/)
    .map((line) => line.replace(/#.*/, "").trim())
    .filter((line) => line.length > 0);
  const present = new Set((await readdir(dir)).filter((f) => f.endsWith(".sql")));
  const listed = new Set(order);
  const problems = [
    ...[...present].filter((f) => !listed.has(f)).map((f) => `${f} is not listed in order.txt`),
    ...order.filter((f) => !present.has(f)).map((f) => `order.txt lists ${f}, which does not exist`),
    ...order.filter((f, i) => order.indexOf(f) !== i).map((f) => `order.txt lists ${f} twice`),
  ];
  if (problems.length > 0) throw new Error(`${dir.pathname}: ${problems.join("; ")}`);
  return Promise.all(order.map(async (file) => ({ file, text: await readFile(new URL(file, dir), "utf8") })));
}
