import { WireType } from "@bufbuild/protobuf/wire";

/**
 * Reads protobuf fields from one message's bytes: the decoding counterpart of ByteWriter, for the few
 * messages of the hot path (claimed jobs, settle answers) that a worker decodes by the thousand.
 * Bytes fields are views into the input (as protobuf-es returns them), strings are decoded as UTF-8.
 * protobuf-es's own BinaryReader does the same job at about twice the cost (it allocates a tuple per
 * field tag and decodes strings with TextDecoder).
 */
export class ByteReader {
  readonly #buf: Buffer;
  #pos: number;
  readonly #end: number;

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    this.#buf = Buffer.isBuffer(bytes)
      ? bytes
      : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.#pos = start;
    this.#end = end;
  }

  /** True once every field was read. */
  get done(): boolean {
    return this.#pos >= this.#end;
  }

  /** The next field's key: `(field number << 3) | wire type`. */
  key(): number {
    return this.varint();
  }

  /** An unsigned varint below 2^53 (uint32, uint64, int64 >= 0, enum >= 0). */
  varint(): number {
    let n = 0;
    let scale = 1;
    for (;;) {
      if (this.#pos >= this.#end) throw new RangeError("protobuf: varint runs past the end of the message");
      const b = this.#buf[this.#pos++] as number;
      n += (b & 0x7f) * scale;
      if (b < 0x80) return n;
      scale *= 0x80;
      if (scale > 2 ** 63) throw new RangeError("protobuf: varint longer than ten bytes");
    }
  }

  /** An int32 or enum: the low 32 bits of its varint, signed (negatives come as ten-byte varints). */
  int32(): number {
    return this.int64() | 0;
  }

  /** An int64 as a number (exact below 2^53 in magnitude); negatives come as ten-byte varints. */
  int64(): number {
    let lo = 0;
    let hi = 0;
    for (let shift = 0; ; shift += 7) {
      if (this.#pos >= this.#end) throw new RangeError("protobuf: varint runs past the end of the message");
      const b = this.#buf[this.#pos++] as number;
      if (shift < 28) lo |= (b & 0x7f) << shift;
      else if (shift === 28) {
        lo |= (b & 0x0f) << 28;
        hi |= (b & 0x7f) >> 4;
      } else hi |= (b & 0x7f) << (shift - 32);
      if (b < 0x80) break;
      if (shift > 63) throw new RangeError("protobuf: varint longer than ten bytes");
    }
    return hi < 0 ? -((~hi >>> 0) * 2 ** 32 + (~lo >>> 0) + 1) : hi * 2 ** 32 + (lo >>> 0);
  }

  bool(): boolean {
    return this.varint() !== 0;
  }

  /** A length-delimited value's bounds [start, end) in the input, after which reading continues. */
  delimited(): [number, number] {
    const len = this.varint();
    const start = this.#pos;
    const end = start + len;
    if (end > this.#end) throw new RangeError("protobuf: length-delimited field runs past the end");
    this.#pos = end;
    return [start, end];
  }

  /** A plain Uint8Array view (not a Buffer, whose methods differ), as protobuf-es gives. */
  bytes(): Uint8Array {
    const [start, end] = this.delimited();
    return new Uint8Array(this.#buf.buffer, this.#buf.byteOffset + start, end - start);
  }

  string(): string {
    const [start, end] = this.delimited();
    return this.#buf.toString("utf8", start, end);
  }

  /** A reader over a nested message's fields. */
  message(): ByteReader {
    const [start, end] = this.delimited();
    return new ByteReader(this.#buf, start, end);
  }

  /** A google.protobuf.Timestamp or Duration field: both are { int64 seconds = 1; int32 nanos = 2; }. */
  secondsNanos(): { seconds: number; nanos: number } {
    const r = this.message();
    const t = { seconds: 0, nanos: 0 };
    while (!r.done) {
      const key = r.key();
      if (key === ((1 << 3) | WireType.Varint)) t.seconds = r.int64();
      else if (key === ((2 << 3) | WireType.Varint)) t.nanos = r.int32();
      else r.skip(key);
    }
    return t;
  }

  /** The same as ms, rounded as protobuf-es's `timestampMs` rounds. */
  secondsNanosMs(): number {
    const { seconds, nanos } = this.secondsNanos();
    return seconds * 1000 + Math.round(nanos / 1_000_000);
  }

  /** Skips the value of a field this reader does not know (`key` as read by `key()`). */
  skip(key: number): void {
    switch (key & 7) {
      case WireType.Varint:
        this.varint();
        return;
      case WireType.Bit64:
        this.#advance(8);
        return;
      case WireType.LengthDelimited:
        this.delimited();
        return;
      case WireType.Bit32:
        this.#advance(4);
        return;
      default:
        throw new RangeError(`protobuf: cannot skip wire type ${key & 7}`);
    }
  }

  #advance(n: number): void {
    if (this.#pos + n > this.#end) throw new RangeError("protobuf: field runs past the end of the message");
    this.#pos += n;
  }
}
