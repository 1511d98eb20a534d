import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import { type DescMessage, fromJsonString, type MessageShape, toJsonString } from "@bufbuild/protobuf";

/**
 * The runner <-> program framing: one message per line, in the proto JSON form. Lines are easy to
 * write and read in any language and to eyeball in a log; stdout carries nothing else.
 */
export function writeLine<D extends DescMessage>(out: Writable, schema: D, message: MessageShape<D>): void {
  out.write(`${toJsonString(schema, message)}\n`);
}

/** Every non-blank line of `input` parsed as `schema`; a line that isn't one goes to `invalid`. */
export async function* readLines<D extends DescMessage>(
  input: Readable,
  schema: D,
  invalid: (line: string, err: unknown) => void,
): AsyncGenerator<MessageShape<D>> {
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (line.trim() === "") continue;
    try {
      yield fromJsonString(schema, line);
    } catch (err) {
      invalid(line, err);
    }
  }
}
