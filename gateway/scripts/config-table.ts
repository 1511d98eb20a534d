import * as v from "valibot";
import { type SchemaContext, settingMeta, settingsSchema } from "../src/config-schema.js";

/** The page whose settings table `npm run docs:config` writes, from the repository root. */
export const CONFIG_DOC = "docs/configuration.md";
export const TABLE_BEGIN = "<!-- config:begin -->";
export const TABLE_END = "<!-- config:end -->";

const noFile = () => null;
const dev: SchemaContext = { mode: "dev", fileVersion: noFile };
const gateway: SchemaContext = { mode: "gateway", fileVersion: noFile };

/** The settings table: one row per setting, everything in it read from the schema. */
export function configTable(): string {
  const inDev = settingsSchema(dev);
  const inGateway = settingsSchema(gateway);
  const rows = Object.entries(inDev).map(([name, schema]) => {
    const meta = settingMeta(name, schema);
    const other = inGateway[name as keyof typeof inGateway];
    const fallback = meta.defaultText ?? defaultText(v.getDefault(schema), v.getDefault(other));
    const env = meta.env ? code(meta.env) : "(file only)";
    // The stricter rule: taskq gateway checks the URLs that taskq dev takes as they are.
    const allowed = settingMeta(name, other).allowed;
    return [code(meta.file), env, fallback, cell(allowed), cell(meta.description)];
  });
  return aligned(["Setting (file key)", "Environment", "Default", "Allowed", "What it is"], rows);
}

/** A Markdown table padded the way the formatter (biome) keeps it. */
function aligned(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** `doc` with the text between the markers replaced by the current table. */
export function withConfigTable(doc: string): string {
  const begin = doc.indexOf(TABLE_BEGIN);
  const end = doc.indexOf(TABLE_END);
  if (begin < 0 || end < begin) throw new Error(`${CONFIG_DOC} lacks ${TABLE_BEGIN} … ${TABLE_END}`);
  return `${doc.slice(0, begin + TABLE_BEGIN.length)}\n${configTable()}\n${doc.slice(end)}`;
}

function defaultText(inDev: unknown, inGateway: unknown): string {
  if (inGateway === undefined) return `${value(inDev)}; required by \`taskq gateway\``;
  if (JSON.stringify(inDev) === JSON.stringify(inGateway)) return value(inDev);
  return `${value(inDev)} in \`taskq dev\`, ${value(inGateway)} in \`taskq gateway\``;
}

function value(x: unknown): string {
  if (x === null || (Array.isArray(x) && x.length === 0)) return "none";
  if (typeof x === "object" && Object.keys(x as object).length === 0) return "none";
  return code(typeof x === "string" ? x : JSON.stringify(x));
}

const code = (s: string) => `\`${s}\``;
const cell = (s: string) => s.replaceAll("|", "\\|");
