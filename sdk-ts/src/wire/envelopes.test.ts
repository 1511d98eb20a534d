import { ConnectError } from "@connectrpc/connect";
import { pipe, transformSplitEnvelope } from "@connectrpc/connect/protocol";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EnvelopeSplitter } from "./envelopes.js";

const LIMIT = 64;

/** An envelope's 5-byte prefix (flags, big-endian length) and data; `claimed` may lie about the length. */
const envelope = fc
  .record({
    flags: fc.integer({ min: 0, max: 255 }),
    data: fc.uint8Array({ maxLength: 80 }),
    lie: fc.option(fc.integer({ min: 0, max: 2 ** 32 - 1 }), { freq: 8, nil: undefined }),
  })
  .map(({ flags, data, lie }) => {
    const head = Buffer.alloc(5);
    head.writeUInt8(flags, 0);
    head.writeUInt32BE(lie ?? data.length, 1);
    return Buffer.concat([head, data]);
  });

/** Bytes cut into chunks at random points. */
const chunked = fc
  .tuple(
    fc.array(envelope, { maxLength: 6 }),
    fc.uint8Array({ maxLength: 3 }),
    fc.array(fc.nat(), { maxLength: 8 }),
  )
  .map(([envs, tail, cuts]) => {
    const bytes = Buffer.concat([...envs, tail]);
    const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
    return [0, ...at].map((start, i) => bytes.subarray(start, at[i] ?? bytes.length));
  });

type Outcome = { messages: [number, number[]][]; error?: [number, string] };

const failed = (err: unknown): [number, string] => {
  const e = ConnectError.from(err);
  return [e.code, e.rawMessage];
};

async function viaConnect(chunks: Uint8Array[]): Promise<Outcome> {
  const out: Outcome = { messages: [] };
  async function* source() {
    yield* chunks;
  }
  try {
    for await (const env of pipe(source(), transformSplitEnvelope(LIMIT)))
      out.messages.push([env.flags, [...env.data]]);
  } catch (err) {
    out.error = failed(err);
  }
  return out;
}

function viaSplitter(chunks: Uint8Array[]): Outcome {
  const out: Outcome = { messages: [] };
  const splitter = new EnvelopeSplitter(LIMIT);
  try {
    for (const chunk of chunks)
      for (const env of splitter.push(chunk)) out.messages.push([env.flags, [...env.data]]);
    splitter.end();
  } catch (err) {
    out.error = failed(err);
  }
  return out;
}

describe("EnvelopeSplitter", () => {
  it("cuts a body into the messages connect-es cuts, and refuses what it refuses", async () => {
    await fc.assert(
      fc.asyncProperty(chunked, async (chunks) => {
        expect(viaSplitter(chunks)).toEqual(await viaConnect(chunks));
      }),
      { numRuns: 5000 },
    );
  });

  it("ends quietly after a prefix whose message never came, as connect-es does", async () => {
    for (const body of [
      [0, 0, 0, 0, 1],
      [0, 0, 0, 0, 2, 7],
      [0, 0, 0],
    ]) {
      const chunks = [Buffer.from(body)];
      expect(viaSplitter(chunks)).toEqual(await viaConnect(chunks));
    }
  });
});
