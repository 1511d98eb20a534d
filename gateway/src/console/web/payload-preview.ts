/** What the job page shows of a payload (or result): text when it decodes as UTF-8, else hex. */
export interface Preview {
  kind: "text" | "hex" | "empty";
  text: string;
  /** Bytes in all; the preview shows at most `max` of them. */
  bytes: number;
  truncated: boolean;
}

/**
 * Decodes protobuf JSON bytes (base64) for display: JSON is pretty-printed, other valid UTF-8 is
 * shown as is, anything else as a hex dump. Only the first `max` bytes are shown, so a 1 MiB
 * payload does not freeze the page.
 */
export function preview(base64: string | undefined, max = 4096): Preview {
  const all = Uint8Array.from(atob(base64 ?? ""), (c) => c.charCodeAt(0));
  if (all.length === 0) return { kind: "empty", text: "", bytes: 0, truncated: false };
  const shown = all.subarray(0, max);
  const truncated = all.length > max;
  let text: string;
  try {
    // A cut inside a multi-byte character is not an error: the decoder stops before it.
    text = new TextDecoder("utf-8", { fatal: true }).decode(shown, { stream: truncated });
  } catch {
    const hex = [...shown].map((b) => b.toString(16).padStart(2, "0"));
    const lines: string[] = [];
    for (let i = 0; i < hex.length; i += 16) lines.push(hex.slice(i, i + 16).join(" "));
    return { kind: "hex", text: lines.join("\n"), bytes: all.length, truncated };
  }
  if (!truncated) {
    try {
      text = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      // Not JSON: shown as it is.
    }
  }
  return { kind: "text", text, bytes: all.length, truncated };
}
