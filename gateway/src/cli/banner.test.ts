import { describe, expect, it } from "vitest";
import { logFormatFor } from "../log.js";
import { textLine, textStream } from "../log-text.js";
import { formatBanner } from "./banner.js";

const dev = {
  mode: "dev",
  grpcUrl: "http://127.0.0.1:7070",
  httpUrl: "http://127.0.0.1:7071",
  devPgUrl: "postgres://postgres@127.0.0.1:7072/postgres",
  dataDir: "/home/ada/taskq/.taskq/data",
  open: true,
} as const;

describe("the start-up banner", () => {
  it("names every address, the absolute data folder and the auth mode of taskq dev", () => {
    expect(formatBanner(dev)).toBe(
      [
        "",
        "taskq dev is ready",
        "",
        "  gRPC     http://127.0.0.1:7070",
        "  HTTP     http://127.0.0.1:7071",
        "  console  http://127.0.0.1:7071/console/",
        "  psql     postgres://postgres@127.0.0.1:7072/postgres",
        "  data     /home/ada/taskq/.taskq/data",
        "  auth     open: no tokens, every caller may do everything",
        "",
        "Ctrl-C stops it.",
        "",
        "",
      ].join("\n"),
    );
  });

  it("of taskq gateway: no psql or data rows, tokens", () => {
    const banner = formatBanner({
      mode: "gateway",
      grpcUrl: "https://10.0.0.5:7070",
      httpUrl: "https://10.0.0.5:7071",
      devPgUrl: null,
      dataDir: null,
      open: false,
    });
    expect(banner).toMatch(/^\ntaskq gateway is ready\n/);
    expect(banner).toContain("  console  https://10.0.0.5:7071/console/\n");
    expect(banner).toContain("  auth     bearer tokens\n");
    expect(banner).not.toMatch(/psql|data/);
  });

  it("says an in-memory store keeps nothing", () => {
    expect(formatBanner({ ...dev, dataDir: "memory" })).toContain("  data     in memory: nothing is kept\n");
  });
});

describe("log format", () => {
  it("auto is text on a terminal and json elsewhere; json and text are what they say", () => {
    expect(logFormatFor("auto", true)).toBe("text");
    expect(logFormatFor("auto", false)).toBe("json");
    expect(logFormatFor("json", true)).toBe("json");
    expect(logFormatFor("text", false)).toBe("text");
  });

  it("text prints one short line per record, fields as key=value, and leaves hidden messages out", () => {
    let out = "";
    const stream = textStream({ write: (t: string) => (out += t) }, ["taskq gateway listening"]);
    const at = Date.UTC(2025, 0, 1, 12, 0, 0);
    const time = new Date(at).toTimeString().slice(0, 8);
    const record = (level: number, msg: string, fields: object = {}) =>
      `${JSON.stringify({ level, time: at, service: "taskq", ...fields, msg })}\n`;
    stream.write(
      record(40, "dev mode", {
        dataDir: "/a b/data",
        n: 3,
        err: { type: "Error", message: "boom", stack: "Error: boom\n    at x" },
      }),
    );
    stream.write(record(30, "taskq gateway listening", { grpcUrl: "http://127.0.0.1:7070" }));
    stream.write(record(30, "became maintenance leader", { component: "maintenance", leader: true }));
    expect(out).toBe(
      `${time} WARN  dev mode  dataDir="/a b/data" n=3 err="boom"\n` +
        `${time} INFO  became maintenance leader  component=maintenance leader=true\n`,
    );
    expect(textLine({ level: 30, time: at, msg: "stopped" })).toBe(`${time} INFO  stopped\n`);
  });
});
