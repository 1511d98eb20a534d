/** What a producer may pass as a payload, or a handler may return as a result. */
export type PayloadInput = Uint8Array | string | object;

/** Bytes plus the MIME type that describes them ("" when the caller gave raw bytes). */
export interface EncodedPayload {
  bytes: Uint8Array;
  contentType: string;
}

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** Content type given to string payloads. */
export const TEXT_CONTENT_TYPE = "text/plain; charset=utf-8";
/** Content type given to object payloads, which are sent as JSON. */
export const JSON_CONTENT_TYPE = "application/json";

/**
 * Bytes as they are, strings as UTF-8, anything else as JSON; `undefined` and `null` as no bytes (a
 * handler that returns nothing).
 */
export function encodePayload(value: PayloadInput | null | undefined): EncodedPayload {
  if (value === undefined || value === null) return { bytes: new Uint8Array(0), contentType: "" };
  if (value instanceof Uint8Array) return { bytes: value, contentType: "" };
  if (typeof value === "string") return { bytes: utf8.encode(value), contentType: TEXT_CONTENT_TYPE };
  return { bytes: utf8.encode(JSON.stringify(value)), contentType: JSON_CONTENT_TYPE };
}

/** UTF-8 text of `bytes`. */
export function decodeText(bytes: Uint8Array): string {
  return utf8Decoder.decode(bytes);
}

/** `bytes` parsed as JSON; throws SyntaxError when they aren't JSON. */
export function decodeJson<T>(bytes: Uint8Array): T {
  return JSON.parse(decodeText(bytes)) as T;
}
