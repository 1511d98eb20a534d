import { WireType } from "@bufbuild/protobuf/wire";

// Hand-written protobuf encoding for the hot path (claimed jobs on the gateway, settlements in the SDK).
// Encoding an entry per job through protobuf-es's reflection (`create()`, then `toBinary`) cost more
// than everything else the gateway did for a claimed job; this writer appends the same bytes to one
// buffer. Tests hold its output byte for byte equal to protobuf-es's.

/**
 * Appends protobuf fields to one growing buffer. Fields at their proto3 default (0, "", empty bytes)
 * are skipped, as protobuf-es skips them. Nested messages are opened with `begin` and closed with
 * `end`, which writes their length in front.
 */
export class ByteWriter {
  #buf: Buffer;
  #pos = 0;

  /** `size`: the first buffer's bytes; it doubles as needed. */
  constructor(size = 4096) {
    this.#buf = Buffer.allocUnsafe(size);
  }

  /** Where the next byte goes, for `since`. */
  mark(): number {
    return this.#pos;
  }

  /** The bytes written since `mark` returned `start` (a whole message, without a length in front). */
  since(start: number): Uint8Array {
    return this.#buf.subarray(start, this.#pos);
  }

  /** Opens a length-delimited value; returns its start for `end`. */
  begin(): number {
    this.#ensure(1);
    return this.#pos++;
  }

  /** Closes the value opened at `start`: writes its length there; returns the bytes from `start`. */
  end(start: number): Uint8Array {
    const len = this.#pos - start - 1;
    const extra = varintSize(len) - 1;
    if (extra > 0) {
      this.#ensure(extra);
      this.#buf.copyWithin(start + 1 + extra, start + 1, this.#pos);
      this.#pos += extra;
    }
    const after = this.#pos;
    this.#pos = start;
    this.#varint(len);
    this.#pos = after;
    return this.#buf.subarray(start, after);
  }

  /** A nested message field: call `end` with the result once its fields are written. */
  message(no: number): number {
    this.#tag(no, WireType.LengthDelimited);
    return this.begin();
  }

  /** `always`: an element of a repeated field, which protobuf writes even when empty. */
  string(no: number, s: string, always = false): void {
    if (s === "" && !always) return;
    const len = Buffer.byteLength(s);
    this.#tag(no, WireType.LengthDelimited);
    this.#varint(len);
    this.#ensure(len);
    this.#pos += this.#buf.write(s, this.#pos, len, "utf8");
  }

  /** A map<string,string> entry: key and value are always written, as protobuf-es does. */
  mapEntry(no: number, key: string, value: string): void {
    const at = this.message(no);
    this.#tag(1, WireType.LengthDelimited);
    this.#rawString(key);
    this.#tag(2, WireType.LengthDelimited);
    this.#rawString(value);
    this.end(at);
  }

  bytes(no: number, b: Uint8Array): void {
    if (b.length === 0) return;
    this.#tag(no, WireType.LengthDelimited);
    this.#varint(b.length);
    this.#ensure(b.length);
    this.#buf.set(b, this.#pos);
    this.#pos += b.length;
  }

  /** uint32, uint64 or a non-negative int32/int64/enum below 2^53. */
  uint(no: number, n: number): void {
    if (n === 0) return;
    this.#tag(no, WireType.Varint);
    this.#varint(n);
  }

  /** int32 or enum: negative values take ten bytes (sign-extended to 64 bits), as protobuf requires. */
  int32(no: number, n: number): void {
    if (n === 0) return;
    this.#tag(no, WireType.Varint);
    if (n > 0) {
      this.#varint(n);
      return;
    }
    this.#ensure(10);
    let lo = n >>> 0;
    for (let i = 0; i < 4; i++) {
      this.#buf[this.#pos++] = (lo & 0x7f) | 0x80;
      lo >>>= 7;
    }
    // Bits 28-31 of the low word and the first three of the all-ones high word, then the rest.
    this.#buf[this.#pos++] = (lo & 0x0f) | 0x70 | 0x80;
    for (let i = 0; i < 4; i++) this.#buf[this.#pos++] = 0xff;
    this.#buf[this.#pos++] = 0x01;
  }

  bool(no: number, b: boolean): void {
    if (!b) return;
    this.#tag(no, WireType.Varint);
    this.#varint(1);
  }

  /** google.protobuf.Timestamp of epoch ms (whole ms), always present like a set message field. */
  timestampMs(no: number, ms: number): void {
    this.#secondsNanos(no, ms);
  }

  /**
   * google.protobuf.Duration of ms >= 0 (whole ms), always present like a set message field: the
   * encoding of protobuf-es's `durationFromMs`.
   */
  durationMs(no: number, ms: number): void {
    this.#secondsNanos(no, ms);
  }

  /** Both well-known types are { int64 seconds = 1; int32 nanos = 2; }. */
  #secondsNanos(no: number, ms: number): void {
    const whole = Math.floor(ms);
    const seconds = Math.floor(whole / 1000);
    const at = this.message(no);
    this.uint(1, seconds);
    this.uint(2, (whole - seconds * 1000) * 1_000_000);
    this.end(at);
  }

  #rawString(s: string): void {
    const len = Buffer.byteLength(s);
    this.#varint(len);
    this.#ensure(len);
    this.#pos += this.#buf.write(s, this.#pos, len, "utf8");
  }

  #tag(no: number, wireType: WireType): void {
    this.#varint((no << 3) | wireType);
  }

  #varint(n: number): void {
    this.#ensure(10);
    while (n > 0x7f) {
      this.#buf[this.#pos++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.#buf[this.#pos++] = n;
  }

  #ensure(n: number): void {
    if (this.#pos + n <= this.#buf.length) return;
    // Earlier `end` results keep the old buffer alive; they stay valid.
    const next = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#pos + n));
    this.#buf.copy(next, 0, 0, this.#pos);
    this.#buf = next;
  }
}

function varintSize(n: number): number {
  let size = 1;
  while (n > 0x7f) {
    n = Math.floor(n / 0x80);
    size++;
  }
  return size;
}
