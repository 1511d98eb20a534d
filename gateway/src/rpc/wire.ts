import { create, type DescMessage, type Message, type MessageInitShape } from "@bufbuild/protobuf";
import { WireType } from "@bufbuild/protobuf/wire";
import type { HandlerContext } from "@connectrpc/connect";
import { ByteWriter } from "@taskq/sdk/internal";

/**
 * The hot path's responses for binary codecs: each entry of the hot repeated field is encoded by hand
 * (ByteWriter) into one buffer per response and handed to protobuf-es as unknown fields of an otherwise
 * ordinary message: `toBinary` writes unknown fields verbatim, so the receiver cannot tell the
 * difference. JSON codecs (Connect with JSON, curl) get real messages, since JSON drops unknown fields.
 * responses.test.ts holds the two encodings byte for byte equal.
 */

/** True when this request's codec is binary protobuf (gRPC, gRPC-Web, Connect proto), not JSON. */
export function binaryCodec(ctx: HandlerContext): boolean {
  return !isJsonContentType(ctx.requestHeader.get("content-type"));
}

/** Connect, gRPC and gRPC-Web name a JSON codec `…json` in the content type; binary is `…proto` or bare. */
export function isJsonContentType(contentType: string | null): boolean {
  return (contentType ?? "").includes("json");
}

/**
 * A message of `schema` built from `init`, whose repeated message field `fieldNo` holds `entries`
 * written by `encode` (each entry's fields only: the writer adds the field's tag and length).
 */
export function withEncodedEntries<Desc extends DescMessage, T>(
  schema: Desc,
  init: MessageInitShape<Desc>,
  fieldNo: number,
  entries: readonly T[],
  encode: (w: ByteWriter, entry: T) => void,
): Message {
  return addEncodedEntries(create(schema, init) as Message, fieldNo, entries, encode);
}

/** `msg`, its repeated message field `fieldNo` now also holding `entries` written by `encode`. */
export function addEncodedEntries<T>(
  msg: Message,
  fieldNo: number,
  entries: readonly T[],
  encode: (w: ByteWriter, entry: T) => void,
): Message {
  if (entries.length === 0) return msg;
  const w = new ByteWriter();
  // An unknown length-delimited field's data is written after its tag as is: it carries its length.
  const added = entries.map((e) => {
    const start = w.begin();
    encode(w, e);
    return { no: fieldNo, wireType: WireType.LengthDelimited, data: w.end(start) };
  });
  msg.$unknown = msg.$unknown ? [...msg.$unknown, ...added] : added;
  return msg;
}
