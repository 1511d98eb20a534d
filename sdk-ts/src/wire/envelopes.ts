import { Code, ConnectError } from "@connectrpc/connect";

/** The envelope flag of a compressed message. */
const COMPRESSED = 0b1;

/**
 * Splits the bytes of a gRPC body into its messages (5-byte prefix: flags, big-endian length),
 * synchronously: chunks in, whole messages out. The same cuts and refusals as connect-es's envelope
 * decoder (envelopes.test.ts holds the two against each other), without an async generator per stage.
 */
export class EnvelopeSplitter {
  readonly #readMaxBytes: number;
  #chunks: Uint8Array[] = [];
  #buffered = 0;
  /** The message being read: its flags and length, once its prefix is in. */
  #head: { flags: number; length: number } | undefined;

  constructor(readMaxBytes: number) {
    this.#readMaxBytes = readMaxBytes;
  }

  /** Bytes received and not yet part of a whole message. */
  get buffered(): number {
    return this.#buffered;
  }

  /** The messages `chunk` completes, in order. Throws RESOURCE_EXHAUSTED for a message over the limit. */
  push(chunk: Uint8Array): { flags: number; data: Uint8Array }[] {
    this.#chunks.push(chunk);
    this.#buffered += chunk.byteLength;
    const out: { flags: number; data: Uint8Array }[] = [];
    for (;;) {
      if (!this.#head) {
        if (this.#buffered < 5) return out;
        const prefix = this.#take(5);
        const length =
          (prefix[1] ?? 0) * 2 ** 24 +
          (((prefix[2] ?? 0) << 16) | ((prefix[3] ?? 0) << 8) | (prefix[4] ?? 0));
        if (length > this.#readMaxBytes) {
          throw new ConnectError(
            `message size ${length} is larger than configured readMaxBytes ${this.#readMaxBytes}`,
            Code.ResourceExhausted,
          );
        }
        this.#head = { flags: prefix[0] ?? 0, length };
      }
      if (this.#buffered < this.#head.length) return out;
      out.push({ flags: this.#head.flags, data: this.#take(this.#head.length) });
      this.#head = undefined;
    }
  }

  /**
   * The messages `chunk` completes, for a stream that negotiated no compression: one flagged compressed
   * is refused with connect-es's INTERNAL, as its decompress step refuses it.
   */
  pushPlain(chunk: Uint8Array): Uint8Array[] {
    return this.push(chunk).map(({ flags, data }) => {
      if ((flags & COMPRESSED) === COMPRESSED)
        throw new ConnectError(
          "received compressed envelope, but do not know how to decompress",
          Code.Internal,
        );
      return data;
    });
  }

  /**
   * The body has ended: throws INVALID_ARGUMENT if bytes are left over. As in connect-es, a prefix whose
   * message never came is not among them (its bytes were taken): the body just ends.
   */
  end(): void {
    if (this.#buffered > 0)
      throw new ConnectError("protocol error: incomplete envelope", Code.InvalidArgument);
  }

  /** The next `n` buffered bytes (n ≤ buffered); a view of one chunk when they lie within it. */
  #take(n: number): Uint8Array {
    this.#buffered -= n;
    const first = this.#chunks[0];
    if (first && first.byteLength >= n) {
      if (first.byteLength === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = new Uint8Array(n);
    let at = 0;
    while (at < n) {
      const chunk = this.#chunks[0] as Uint8Array;
      const part = Math.min(chunk.byteLength, n - at);
      out.set(chunk.subarray(0, part), at);
      at += part;
      if (part === chunk.byteLength) this.#chunks.shift();
      else this.#chunks[0] = chunk.subarray(part);
    }
    return out;
  }
}
