import { describe, expect, it } from "vitest";
import { untilRefused } from "./until-refused.js";

/** A client that sends `first`, then never another message. */
async function* client(first: string[]): AsyncGenerator<string> {
  yield* first;
  await new Promise(() => {});
}

describe("untilRefused", () => {
  it("passes messages on, then fails the read waiting for the next one with the refusal", async () => {
    const refusal = new AbortController();
    const it = untilRefused(client(["a", "b"]), refusal.signal);
    expect(await it.next()).toEqual({ value: "a", done: false });
    expect(await it.next()).toEqual({ value: "b", done: false });
    const waiting = it.next();
    refusal.abort(new Error("token t has been revoked"));
    await expect(waiting).rejects.toThrow("token t has been revoked");
    expect(await it.next()).toEqual({ value: undefined, done: true });
  });

  it("fails at once when refused before the first read, and ends with the requests otherwise", async () => {
    const refusal = new AbortController();
    refusal.abort(new Error("refused"));
    await expect(untilRefused(client([]), refusal.signal).next()).rejects.toThrow("refused");
    async function* two() {
      yield* ["x", "y"];
    }
    const read: string[] = [];
    for await (const m of untilRefused(two(), new AbortController().signal)) read.push(m);
    expect(read).toEqual(["x", "y"]);
  });
});
