import { AsyncQueue } from "./async-queue.js";

/** The stream ended although the SDK was still expecting an answer. */
export class StreamEndedError extends Error {
  constructor(what: string) {
    super(`${what} stream ended by the gateway`);
    this.name = "StreamEndedError";
  }
}

/** How to open one bidi call: connect's `client.claim` and friends fit this shape. */
export type OpenStream<I, O> = (
  requests: AsyncIterable<I>,
  options: { signal: AbortSignal },
) => AsyncIterable<O>;

/**
 * One bidi call as send/next: requests go through an AsyncQueue, responses are read one at a time.
 * The call is opened on the first `next()`, not before: connect starts a call as soon as it is made,
 * and a call aborted before anyone reads it rejects with nobody listening.
 */
export class BidiStream<I, O> {
  readonly #name: string;
  readonly #requests = new AsyncQueue<I>();
  readonly #abort = new AbortController();
  readonly #open: OpenStream<I, O>;
  #responses: AsyncIterator<O> | undefined;

  constructor(name: string, open: OpenStream<I, O>) {
    this.#name = name;
    this.#open = open;
  }

  send(request: I): void {
    this.#requests.push(request);
  }

  /** The next response; rejects with StreamEndedError when the gateway ends the stream. */
  async next(): Promise<O> {
    this.#responses ??= this.#open(this.#requests, { signal: this.#abort.signal })[Symbol.asyncIterator]();
    const r = await this.#responses.next();
    if (r.done) throw new StreamEndedError(this.#name);
    return r.value;
  }

  /** No more requests: the gateway answers what it has and ends the stream. */
  halfClose(): void {
    this.#requests.close();
  }

  /** Cancel the call; a pending `next()` rejects. */
  abort(): void {
    this.#requests.close();
    this.#abort.abort();
  }
}
