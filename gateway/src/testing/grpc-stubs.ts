import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/**
 * Plain @grpc/grpc-js stubs loaded from the .proto files at run time: how a worker in another
 * language sees the gateway, with no generated TypeScript in between.
 */
const protoDir = fileURLToPath(new URL("../../../proto/", import.meta.url));

// biome-ignore lint/suspicious/noExplicitAny: dynamic stubs are untyped by nature.
type Stub = any;

export interface GrpcStubs {
  worker: Stub;
  producer: Stub;
  admin: Stub;
  close(): void;
}

/** TLS of an https:// url: the CA to trust, and a client certificate for mutual TLS. */
export interface StubTls {
  ca: string;
  cert?: string;
  key?: string;
}

/**
 * Stubs of the three services at `url`; with a token, every call carries `authorization: Bearer <token>`.
 * An https:// url connects with TLS, trusting `tls.ca`.
 */
export function grpcStubs(
  url: string,
  token?: string,
  tls?: StubTls,
  /** Past gRPC's default 4 MiB, the largest message the stubs accept. */
  limits?: { maxReceiveBytes?: number },
): GrpcStubs {
  const def = protoLoader.loadSync(
    ["taskq/v1/worker.proto", "taskq/v1/producer.proto", "taskq/v1/admin.proto"],
    {
      includeDirs: [protoDir],
      keepCase: true,
      longs: String,
      enums: String,
      defaults: true,
      oneofs: true,
    },
  );
  const pkg = grpc.loadPackageDefinition(def) as Stub;
  const target = url.replace(/^https?:\/\//, "");
  const creds = url.startsWith("https://")
    ? grpc.credentials.createSsl(
        tls ? Buffer.from(tls.ca) : null,
        tls?.key ? Buffer.from(tls.key) : null,
        tls?.cert ? Buffer.from(tls.cert) : null,
      )
    : grpc.credentials.createInsecure();
  const bearer: grpc.Interceptor = (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set("authorization", `Bearer ${token}`);
        next(metadata, listener);
      },
    });
  const options = {
    ...(token ? { interceptors: [bearer] } : {}),
    ...(limits?.maxReceiveBytes ? { "grpc.max_receive_message_length": limits.maxReceiveBytes } : {}),
  };
  const worker = new pkg.taskq.v1.WorkerService(target, creds, options);
  const producer = new pkg.taskq.v1.ProducerService(target, creds, options);
  const admin = new pkg.taskq.v1.AdminService(target, creds, options);
  return {
    worker,
    producer,
    admin,
    close() {
      worker.close();
      producer.close();
      admin.close();
    },
  };
}

/** Calls a unary method and resolves with its response (or rejects with the grpc error). */
export function unary<T = Stub>(client: Stub, method: string, req: object): Promise<T> {
  return new Promise((resolve, reject) => {
    client[method](req, (err: grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res)));
  });
}

/** A bidi stream where each request gets exactly one response, in order. */
export function duplex(client: Stub, method: string) {
  const call = client[method]();
  const waiting: { resolve: (v: Stub) => void; reject: (e: Error) => void }[] = [];
  let failed: Error | undefined;
  call.on("data", (msg: Stub) => waiting.shift()?.resolve(msg));
  call.on("error", (err: Error) => {
    failed = err;
    for (const w of waiting.splice(0)) w.reject(err);
  });
  const status = new Promise<{ code: number; details: string }>((resolve) => call.on("status", resolve));
  return {
    /** The stream's final status, once the gateway has ended it. */
    status,
    /** Sends one request and resolves with its response. */
    send(req: object): Promise<Stub> {
      if (failed) return Promise.reject(failed);
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        call.write(req);
      });
    },
    end(): void {
      call.end();
    },
    cancel(): void {
      call.cancel();
    },
  };
}

export const seconds = (s: number) => ({ seconds: String(Math.floor(s)), nanos: Math.round((s % 1) * 1e9) });
