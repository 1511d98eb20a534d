import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { create } from "@bufbuild/protobuf";
import {
  HandlerEventKind,
  ProgramMessageSchema,
  RunnerMessageSchema,
  type StartWorker,
  type StopWorker,
} from "@taskq/sdk/conformance";
import { readLines, writeLine } from "../protocol/json-lines.js";
import type { Trace } from "./trace.js";

// Keep the end of the program's stderr for the report: that is where its logs and stack traces go.
const STDERR_KEEP_BYTES = 8 * 1024;

/** The program under test, launched once per case; its messages go into the trace. */
export class Program {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #trace: Trace;
  #stderr = "";
  readonly exited: Promise<void>;
  readonly #waiters: Array<{ type: string; resolve: () => void }> = [];
  readonly #startedWaiters: Array<{ jobId: string; resolve: () => void }> = [];

  constructor(command: readonly string[], trace: Trace, env: NodeJS.ProcessEnv = {}) {
    const [file, ...args] = command;
    if (!file) throw new Error("no program command given");
    this.#trace = trace;
    this.#child = spawn(file, args, { stdio: "pipe", env: { ...process.env, ...env } });
    this.#child.stderr.on("data", (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString("utf8")).slice(-STDERR_KEEP_BYTES);
    });
    // A program that exits early closes stdin; writes then fail with EPIPE, which the exit explains.
    this.#child.stdin.on("error", () => {});
    this.exited = new Promise((resolve) => {
      this.#child.once("close", (code, signal) => {
        trace.add("exit", { code, signal });
        this.#notify("exit");
        resolve();
      });
      this.#child.once("error", (err) => {
        trace.add("protocol_error", { detail: `could not start the program: ${err.message}` });
        trace.add("exit", { code: null, signal: null });
        this.#notify("exit");
        resolve();
      });
    });
    void this.#read();
  }

  /** The tail of what the program wrote to stderr. */
  get stderr(): string {
    return this.#stderr;
  }

  start(settings: StartWorker): void {
    writeLine(
      this.#child.stdin,
      RunnerMessageSchema,
      create(RunnerMessageSchema, { message: { case: "start", value: settings } }),
    );
  }

  stop(settings: StopWorker): void {
    this.#trace.add("stop_sent", {});
    writeLine(
      this.#child.stdin,
      RunnerMessageSchema,
      create(RunnerMessageSchema, { message: { case: "stop", value: settings } }),
    );
  }

  /** Resolves true when the trace gets an event of `type` (or already has one), false after `ms`. */
  waitFor(type: "ready" | "stopped" | "exit", ms: number): Promise<boolean> {
    if (this.#trace.first(type)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.#waiters.push({
        type,
        resolve: () => {
          clearTimeout(timer);
          resolve(true);
        },
      });
    });
  }

  /** Resolves when the handler of `jobId` reports STARTED. */
  handlerStarted(jobId: string): Promise<void> {
    return new Promise((resolve) => this.#startedWaiters.push({ jobId, resolve }));
  }

  kill(): void {
    this.#child.kill("SIGKILL");
  }

  #notify(type: string): void {
    for (const w of this.#waiters.filter((x) => x.type === type)) w.resolve();
  }

  async #read(): Promise<void> {
    const bad = (line: string, err: unknown) =>
      this.#trace.add("protocol_error", {
        detail: `stdout line is not a ProgramMessage (${(err as Error).message}): ${line.slice(0, 200)}`,
      });
    for await (const msg of readLines(this.#child.stdout, ProgramMessageSchema, bad)) {
      const m = msg.message;
      switch (m.case) {
        case "ready":
          this.#trace.add("ready", {
            implementation: m.value.implementation,
            features: [...m.value.features],
          });
          this.#notify("ready");
          break;
        case "handler":
          this.#trace.add("handler", { event: m.value });
          if (m.value.kind === HandlerEventKind.STARTED)
            for (const w of this.#startedWaiters) if (w.jobId === m.value.jobId) w.resolve();
          break;
        case "stopped":
          this.#trace.add("stopped", {});
          this.#notify("stopped");
          break;
        default:
          this.#trace.add("protocol_error", { detail: "empty ProgramMessage" });
      }
    }
  }
}
