// The fleet of the `parked` scenario, in a process of its own: `--streams` Claim streams over
// `--connections` HTTP/2 connections to one gateway, each a plain @grpc/grpc-js worker as one in another
// language would be (stubs loaded from the .proto files, no SDK). Each stream polls one queue with
// max_jobs 1 and max_wait 60 s, and polls again as soon as it is answered; a job it receives is settled
// on that next poll. It tells its parent over IPC when every stream has sent its first poll, and, for
// each job, when it arrived (wall-clock ms, `performance.timeOrigin + performance.now()`, comparable
// with the parent's stamp in the payload on one machine).
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

export interface ParkedClientMessage {
  readonly type: "polling" | "job" | "error";
  readonly streams?: number;
  readonly sentAt?: number;
  readonly receivedAt?: number;
  readonly message?: string;
}

const PROTO_DIR = fileURLToPath(new URL("../../proto/", import.meta.url));
const now = (): number => performance.timeOrigin + performance.now();
const send = (m: ParkedClientMessage): void => {
  process.send?.(m);
};

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    token: { type: "string" },
    queue: { type: "string" },
    streams: { type: "string" },
    connections: { type: "string" },
  },
});

// biome-ignore lint/suspicious/noExplicitAny: dynamic stubs are untyped by nature.
type Stub = any;
const definition = protoLoader.loadSync("taskq/v1/worker.proto", {
  includeDirs: [PROTO_DIR],
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
const pkg = grpc.loadPackageDefinition(definition) as Stub;
const streams = Number(values.streams);
const connections = Number(values.connections);
const target = String(values.url).replace(/^https?:\/\//, "");
const bearer: grpc.Interceptor = (options, nextCall) =>
  new grpc.InterceptingCall(nextCall(options), {
    start(metadata, listener, next) {
      metadata.set("authorization", `Bearer ${values.token}`);
      next(metadata, listener);
    },
  });
// A local subchannel pool gives each client its own connection (grpc-js shares one per target otherwise).
const clients: Stub[] = Array.from(
  { length: connections },
  () =>
    new pkg.taskq.v1.WorkerService(target, grpc.credentials.createInsecure(), {
      interceptors: [bearer],
      "grpc.use_local_subchannel_pool": 1,
    }),
);

const poll = (settlements: object[]) => ({
  queues: [values.queue],
  max_jobs: 1,
  max_wait: { seconds: "60", nanos: 0 },
  worker_id: `parked-${process.pid}`,
  settlements,
});

function openStream(client: Stub): void {
  const call = client.Claim();
  call.on("data", (answer: Stub) => {
    const settlements: object[] = [];
    for (const job of answer.jobs ?? []) {
      const receivedAt = now();
      const sentAt = JSON.parse(Buffer.from(job.payload).toString()).sentAt as number;
      send({ type: "job", sentAt, receivedAt });
      settlements.push({ lease: { job_id: job.id, attempt: job.attempt }, success: {} });
    }
    call.write(poll(settlements));
  });
  call.on("error", (err: Error) => send({ type: "error", message: err.message }));
  call.write(poll([]));
}

for (let i = 0; i < streams; i++) openStream(clients[i % connections]);
send({ type: "polling", streams });
process.on("disconnect", () => process.exit(0));
