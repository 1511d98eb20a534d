import { describe, expect, it } from "vitest";
import { preview } from "./payload-preview.js";

const b64 = (bytes: Uint8Array | string) =>
  btoa(String.fromCharCode(...(typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes)));

describe("preview", () => {
  it("pretty-prints JSON, shows other text as is, and dumps binary as hex", () => {
    expect(preview(b64('{"to":"a@b.c","n":1}'))).toEqual({
      kind: "text",
      text: '{\n  "to": "a@b.c",\n  "n": 1\n}',
      bytes: 20,
      truncated: false,
    });
    expect(preview(b64("héllo"))).toMatchObject({ kind: "text", text: "héllo", bytes: 6 });
    expect(preview(b64(new Uint8Array([0xff, 0x00, 0x10])))).toMatchObject({ kind: "hex", text: "ff 00 10" });
    expect(preview(undefined)).toMatchObject({ kind: "empty", bytes: 0 });
  });

  it("shows only the first bytes of a large payload, never splitting a character", () => {
    const p = preview(b64("ab€cd"), 4);
    expect(p).toEqual({ kind: "text", text: "ab", bytes: 7, truncated: true });
  });
});
