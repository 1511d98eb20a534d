import type { DescMethodStreaming, DescMethodUnary, MessageShape } from "@bufbuild/protobuf";
import { type OrderedStream, WireClient, type WireTls } from "./wire-client.js";

type Unary = DescMethodUnary;
type Streaming = DescMethodStreaming;
const path = (m: Unary | Streaming) => `/${m.parent.typeName}/${m.name}`;

/** What one gateway case knows: its queue, its named jobs, its streams (opened on first use). */
export class Session {
  readonly client: WireClient;
  /** Named job -> id. */
  readonly jobIds = new Map<string, string>();
  /** Job id -> the attempt it was last claimed with. */
  readonly attempts = new Map<string, number>();
  /** Job id -> the last lease deadline seen (epoch ms). */
  readonly deadlines = new Map<string, number>();
  /** Enqueues running in the background; a poll waits for them before naming jobs. */
  readonly background: Promise<unknown>[] = [];
  readonly #streams = new Map<string, OrderedStream<never, never>>();

  constructor(
    url: string,
    token: string | undefined,
    readonly queue: string,
    tls?: WireTls,
  ) {
    this.client = new WireClient(url, token, tls);
  }

  call<M extends Unary>(method: M, req: MessageShape<M["input"]>): Promise<MessageShape<M["output"]>> {
    return this.client.unary(path(method), method.input, method.output, req) as Promise<
      MessageShape<M["output"]>
    >;
  }

  /**
   * Send on the session's stream of `method`, reopening it if an earlier error or half-close ended it.
   * With `halfCloseAfterMs`, half-close the stream that long after sending (the next send reopens it).
   */
  send<M extends Streaming>(
    method: M,
    req: MessageShape<M["input"]>,
    opts: { halfCloseAfterMs?: number } = {},
  ): Promise<MessageShape<M["output"]>> {
    let s = this.#streams.get(method.name) as OrderedStream<M["input"], M["output"]> | undefined;
    if (!s || s.failed || s.halfClosed) {
      s = this.client.bidi(path(method), method.input, method.output);
      this.#streams.set(method.name, s as unknown as OrderedStream<never, never>);
    }
    const answer = s.send(req);
    if (opts.halfCloseAfterMs !== undefined) {
      const stream = s;
      const timer = setTimeout(() => stream.halfClose(), opts.halfCloseAfterMs);
      void answer.then(
        () => clearTimeout(timer),
        () => clearTimeout(timer),
      );
    }
    return answer;
  }

  jobId(name: string): string {
    const id = this.jobIds.get(name);
    if (id === undefined) throw new Error(`the case names job "${name}" before enqueueing it`);
    return id;
  }

  close(): void {
    for (const s of this.#streams.values()) s.cancel();
    this.client.close();
  }
}
