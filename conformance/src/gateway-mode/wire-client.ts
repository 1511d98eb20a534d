import { type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";

/** TLS of an https:// gateway: PEM CA to trust (else the system's), client certificate and key for mTLS. */
export interface WireTls {
  ca?: Buffer | undefined;
  cert?: Buffer | undefined;
  key?: Buffer | undefined;
}

/**
 * The reference worker client of gateway mode: plain @grpc/grpc-js calls (an HTTP/2 gRPC stack
 * independent of the gateway's), with messages (de)serialized from the .proto contract.
 */
export class WireClient {
  readonly #client: grpc.Client;
  readonly #metadata: grpc.Metadata;

  constructor(url: string, token: string | undefined, tls?: WireTls) {
    const target = url.replace(/^https?:\/\//, "");
    const creds = url.startsWith("https://")
      ? grpc.credentials.createSsl(tls?.ca ?? null, tls?.key ?? null, tls?.cert ?? null)
      : grpc.credentials.createInsecure();
    this.#client = new grpc.Client(target, creds);
    this.#metadata = new grpc.Metadata();
    if (token) this.#metadata.set("authorization", `Bearer ${token}`);
  }

  unary<I extends DescMessage, O extends DescMessage>(
    path: string,
    input: I,
    output: O,
    req: MessageShape<I>,
  ): Promise<MessageShape<O>> {
    return new Promise((resolve, reject) => {
      this.#client.makeUnaryRequest(
        path,
        serialize(input),
        deserialize(output),
        req,
        this.#metadata,
        (err: grpc.ServiceError | null, res?: MessageShape<O>) => (err || !res ? reject(err) : resolve(res)),
      );
    });
  }

  /** A bidi stream where each request gets exactly one response, in order. */
  bidi<I extends DescMessage, O extends DescMessage>(path: string, input: I, output: O): OrderedStream<I, O> {
    const call = this.#client.makeBidiStreamRequest(
      path,
      serialize(input),
      deserialize(output),
      this.#metadata,
    );
    return new OrderedStream(call);
  }

  close(): void {
    this.#client.close();
  }
}

export class OrderedStream<I extends DescMessage, O extends DescMessage> {
  readonly #waiting: Array<{ resolve: (m: MessageShape<O>) => void; reject: (e: Error) => void }> = [];
  #failed: Error | undefined;
  #halfClosed = false;

  constructor(readonly call: grpc.ClientDuplexStream<MessageShape<I>, MessageShape<O>>) {
    call.on("data", (m: MessageShape<O>) => this.#waiting.shift()?.resolve(m));
    const fail = (err: Error) => {
      this.#failed = err;
      for (const w of this.#waiting.splice(0)) w.reject(err);
    };
    call.on("error", fail);
    call.on("end", () => fail(new Error("the gateway ended the stream")));
  }

  get failed(): boolean {
    return this.#failed !== undefined;
  }

  /** Half-closed: it takes no more requests, but outstanding ones still get their answers. */
  get halfClosed(): boolean {
    return this.#halfClosed;
  }

  send(req: MessageShape<I>): Promise<MessageShape<O>> {
    if (this.#failed) return Promise.reject(this.#failed);
    if (this.#halfClosed) return Promise.reject(new Error("the stream was half-closed"));
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      this.call.write(req);
    });
  }

  /** Send no more requests (a draining worker): the gateway answers what is outstanding and ends. */
  halfClose(): void {
    if (this.#halfClosed) return;
    this.#halfClosed = true;
    this.call.end();
  }

  cancel(): void {
    this.call.cancel();
  }
}

const serialize =
  <D extends DescMessage>(schema: D) =>
  (m: MessageShape<D>) =>
    Buffer.from(toBinary(schema, m));

const deserialize =
  <D extends DescMessage>(schema: D) =>
  (b: Buffer) =>
    fromBinary(schema, b);

/** The gRPC status code name of an error ("INVALID_ARGUMENT"), or undefined if it carries none. */
export function statusName(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "number") return undefined;
  return grpc.status[code];
}
