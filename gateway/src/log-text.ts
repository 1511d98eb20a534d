// Log records as short lines for a person at a terminal (logFormat text): time, level, message, then the
// fields as key=value. No colours and no dependency: pino hands each record over as one JSON line.

/** A parsed pino record. */
export type LogRecord = Readonly<Record<string, unknown>>;

const LEVELS: Readonly<Record<number, string>> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};

/** Fields every record carries, which the line shows otherwise or not at all. */
const SHOWN_ELSEWHERE = new Set(["level", "time", "msg", "service", "pid", "hostname"]);

/** One record as one line: `12:04:05 WARN  message  key=value …`. */
export function textLine(record: LogRecord): string {
  const time = new Date(Number(record.time)).toTimeString().slice(0, 8);
  const level = (LEVELS[Number(record.level)] ?? String(record.level)).padEnd(5);
  const fields = Object.entries(record)
    .filter(([key]) => !SHOWN_ELSEWHERE.has(key))
    .map(([key, value]) => `${key}=${show(value)}`);
  return `${time} ${level} ${String(record.msg ?? "")}${fields.length > 0 ? `  ${fields.join(" ")}` : ""}\n`;
}

function show(value: unknown): string {
  if (typeof value === "string") return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  // An Error as pino serializes it: its message is the line's worth.
  if (typeof value === "object" && value !== null && "message" in value && "stack" in value) {
    return JSON.stringify(value.message);
  }
  return JSON.stringify(value);
}

/** A pino destination writing each record to `out` as a line, but records whose message is `hidden`. */
export function textStream(out: { write(text: string): unknown }, hidden: readonly string[] = []) {
  return {
    write(json: string): void {
      const record = JSON.parse(json) as LogRecord;
      if (!hidden.includes(String(record.msg))) out.write(textLine(record));
    },
  };
}
