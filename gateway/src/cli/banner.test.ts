import { describe, expect, it } from "vitest";
import { logFormatFor } from "../log.js";
import { textLine, textStream } from "../log-text.js";
import { LISTENING } from "../server.js";
import { formatBanner } from "./banner.js";

const listening = {
  level: 30,
  time: Date.UTC(2025, 0, 1, 12, 0, 0),
  service: "taskq",
  grpcUrl: "http://127.0.0.1:7070",
  httpUrl: "http://127.0.0.1:7071",
  devPgUrl: "postgres://postgres@127.0.0.1:7072/postgres",
  dataDir: "/home/ada/taskq/.taskq/data",
  mode: "dev",
  auth: "open",
  transport: "plaintext-loopback",
  instanceId: "host/1/abcdef",
  msg: LISTENING,
};

describe("the start-up banner", () => {
  it("names every address, the absolute data folder and the auth mode of taskq dev", () => {
    expect(formatBanner(listening)).toBe(
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
    const { devPgUrl: _, dataDir: __, ...rest } = listening;
    const banner = formatBanner({
      ...rest,
      mode: "gateway",
      auth: "tokens",
      grpcUrl: "https://10.0.0.5:7070",
    });
    expect(banner).toMatch(/^\ntaskq gateway is ready\n/);
    expect(banner).toContain("  gRPC     https://10.0.0.5:7070\n");
    expect(banner).toContain("  auth     bearer tokens\n");
    expect(banner).not.toMatch(/psql|data/);
  });

  it("says an in-memory store keeps nothing", () => {
    expect(formatBanner({ ...listening, dataDir: "memory" })).toContain(
      "  data     in memory: nothing is kept\n",
    );
  });
});

describe("log format", () => {
  it("auto is text on a terminal and json elsewhere; json and text are what they say", () => {
    expect(logFormatFor("auto", true)).toBe("text");
    expect(logFormatFor("auto", false)).toBe("json");
    expect(logFormatFor("json", true)).toBe("json");
    expect(logFormatFor("text", false)).toBe("text");
  });

  it("text prints one line per record, and the listening record as the banner", () => {
    let out = "";
    const stream = textStream({ write: (t: string) => (out += t) }, { [LISTENING]: formatBanner });
    const warn = {
      level: 40,
      time: listening.time,
      service: "taskq",
      dataDir: "/a b/data",
      n: 3,
      err: { type: "Error", message: "boom", stack: "Error: boom\n    at x" },
      msg: "dev mode",
    };
    stream.write(`${JSON.stringify(warn)}\n`);
    const time = new Date(listening.time).toTimeString().slice(0, 8);
    expect(out).toBe(`${time} WARN  dev mode  dataDir="/a b/data" n=3 err="boom"\n`);
    out = "";
    stream.write(`${JSON.stringify(listening)}\n`);
    expect(out).toBe(formatBanner(listening));
    expect(textLine({ level: 30, time: listening.time, msg: "stopped" })).toBe(`${time} INFO  stopped\n`);
  });
});
