import { create, fromJsonString, type MessageInitShape } from "@bufbuild/protobuf";
import { durationMs } from "@bufbuild/protobuf/wkt";
import {
  HandlerEventKind,
  type JobInstruction,
  JobInstructionSchema,
  ProgramMessageSchema,
  RunnerMessageSchema,
  type StartWorker,
  type StopWorker,
} from "@taskq/sdk/conformance";
import { readLines, writeLine } from "./json-lines.js";

/**
 * The program side of the protocol, for adapters written in TypeScript: read StartWorker, report
 * Ready, handler events and Stopped. Adapters in other languages do the same with their own JSON.
 */
export class ProgramSide {
  readonly #messages = readLines(process.stdin, RunnerMessageSchema, (line) => {
    process.stderr.write(`conformance adapter: ignoring a line that is not a RunnerMessage: ${line}\n`);
  });

  /** The next runner message of the wanted kind; throws if stdin ends first. */
  async #next<K extends "start" | "stop">(kind: K) {
    for (;;) {
      const r = await this.#messages.next();
      if (r.done) throw new Error(`stdin ended before a ${kind} message`);
      const m = r.value.message;
      if (m.case === kind) return m.value as K extends "start" ? StartWorker : StopWorker;
    }
  }

  start(): Promise<StartWorker> {
    return this.#next("start");
  }

  stop(): Promise<StopWorker> {
    return this.#next("stop");
  }

  /** Report Ready, naming the implementation and the optional features it has (e.g. "prefetch"). */
  ready(implementation: string, features: readonly string[] = []): void {
    this.#send({ case: "ready", value: { implementation, features: [...features] } });
  }

  handler(jobId: string, attempt: number, kind: HandlerEventKind): void {
    this.#send({ case: "handler", value: { jobId, attempt, kind } });
  }

  /** Report Stopped and exit 0 once stdout has flushed. */
  stoppedAndExit(): void {
    writeLine(
      process.stdout,
      ProgramMessageSchema,
      create(ProgramMessageSchema, { message: { case: "stopped", value: {} } }),
    );
    process.stdout.write("", () => process.exit(0));
  }

  #send(message: MessageInitShape<typeof ProgramMessageSchema>["message"]): void {
    writeLine(process.stdout, ProgramMessageSchema, create(ProgramMessageSchema, { message }));
  }
}

/** The job payload as an instruction. */
export function parseInstruction(payload: Uint8Array): JobInstruction {
  return fromJsonString(JobInstructionSchema, new TextDecoder().decode(payload));
}

/**
 * The generic handler's body: run for the instruction's time, stopping early when `signal` aborts
 * (unless it says to ignore aborts). Reports STARTED and FINISHED or ABORTED; resolves true when it
 * ran to the end.
 */
export async function runInstruction(
  side: ProgramSide,
  job: { id: string; attempt: number },
  ins: JobInstruction,
  signal: AbortSignal,
): Promise<boolean> {
  side.handler(job.id, job.attempt, HandlerEventKind.STARTED);
  const ms = ins.run ? durationMs(ins.run) : 0;
  const finished = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    if (ins.ignoreAbort) return;
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  side.handler(job.id, job.attempt, finished ? HandlerEventKind.FINISHED : HandlerEventKind.ABORTED);
  return finished;
}
