/**
 * The gRPC status message travels percent-encoded in the `grpc-message` trailer, and the gRPC HTTP/2
 * spec escapes only what a header cannot carry: `%` and bytes outside printable ASCII. connect-es
 * writes it with encodeURIComponent, which escapes `:` `,` `/` `=` and the like too, while grpc-js
 * (every Node gRPC client) decodes it with decodeURI, which leaves exactly those escaped: "authorization%3A
 * Bearer". Re-encoding to gRPC's minimum gives grpc-js, Python and connect clients the same text.
 */

const HEADER = "grpc-message";

/** Rewrites the trailer's grpc-message, if any, to gRPC's minimal percent-encoding. */
export function minimalGrpcMessage(trailer: Headers): void {
  const raw = trailer.get(HEADER);
  if (raw === null) return;
  let text: string;
  try {
    text = decodeURIComponent(raw);
  } catch {
    return;
  }
  trailer.set(HEADER, encodeGrpcMessage(text));
}

/**
 * `text` percent-encoded as grpc-message: printable ASCII (0x20 to 0x7E) as itself except `%`, every
 * other UTF-8 byte as %XX. A space at either end is escaped too: HTTP/2 field values may not start or
 * end with whitespace.
 */
export function encodeGrpcMessage(text: string): string {
  return encodeURIComponent(text)
    .replace(/%([2-7][0-9A-F])/g, (escaped, hex: string) =>
      hex === "25" || hex === "7F" ? escaped : String.fromCharCode(Number.parseInt(hex, 16)),
    )
    .replace(/^ | $/g, "%20");
}
