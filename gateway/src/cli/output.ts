import { type DescMessage, type MessageShape, toJsonString } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate } from "@bufbuild/protobuf/wkt";

/** Something to write text to (process.stdout, or a buffer in tests). */
export interface Sink {
  write(text: string): unknown;
}

/** A cell value: empty, undefined and null print as "-". */
export type Cell = string | number | bigint | boolean | undefined | null;

/** How a command prints: human tables and `key: value` lines, or protobuf JSON with `--json`. */
export class Output {
  constructor(
    readonly stdout: Sink,
    /** True with `--json`: commands print their response with `json()` instead of text. */
    readonly jsonMode: boolean,
    /** Where progress goes (stderr), apart from the answer, so `--json` output stays one document. */
    readonly progress: Sink = { write: () => true },
  ) {}

  /** A line of progress on `progress`, in either mode. */
  note(text: string): void {
    this.progress.write(`${text}\n`);
  }

  /** One line of text. */
  line(text: string): void {
    this.stdout.write(`${text}\n`);
  }

  /** The response as protobuf JSON (camelCase fields, defaults included), for scripts. */
  json<D extends DescMessage>(schema: D, message: MessageShape<D>): void {
    this.stdout.write(`${toJsonString(schema, message, { alwaysEmitImplicit: true, prettySpaces: 2 })}\n`);
  }

  /** Prints `message` as JSON in `--json` mode, else calls `human` to print it as text. */
  respond<D extends DescMessage>(schema: D, message: MessageShape<D>, human: () => void): void {
    if (this.jsonMode) this.json(schema, message);
    else human();
  }

  /** A table with a header row; columns padded to their widest cell. */
  table(headers: readonly string[], rows: readonly (readonly Cell[])[]): void {
    const text = [headers, ...rows.map((r) => r.map(cell))];
    const widths = headers.map((_, i) => Math.max(...text.map((r) => (r[i] ?? "").length)));
    for (const r of text) {
      this.line(
        r
          .map((c, i) => (i === r.length - 1 ? c : (c ?? "").padEnd(widths[i] ?? 0)))
          .join("  ")
          .trimEnd(),
      );
    }
  }

  /** `key: value` lines, values aligned. */
  fields(pairs: readonly (readonly [string, Cell])[]): void {
    const width = Math.max(...pairs.map(([k]) => k.length)) + 1;
    for (const [k, v] of pairs) this.line(`${`${k}:`.padEnd(width)} ${cell(v)}`);
  }
}

/** Text of a cell: "-" for nothing, yes/no for booleans. */
export function cell(v: Cell): string {
  if (v === undefined || v === null || v === "") return "-";
  if (typeof v === "boolean") return v ? "yes" : "no";
  return String(v);
}

/** ISO 8601 of a timestamp, undefined when unset. */
export function isoTime(t: Timestamp | undefined): string | undefined {
  return t ? timestampDate(t).toISOString() : undefined;
}
