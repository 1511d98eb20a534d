import { describe, expect, it } from "vitest";
import { AsyncQueue } from "./async-queue.js";

async function collect<T>(q: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const v of q) out.push(v);
  return out;
}

describe("AsyncQueue", () => {
  it("yields items pushed before and after the reader waits, in order, and ends on close", async () => {
    const q = new AsyncQueue<number>();
    q.push(1);
    const done = collect(q);
    q.push(2);
    await new Promise((r) => setTimeout(r, 5));
    q.push(3);
    q.close();
    expect(await done).toEqual([1, 2, 3]);
  });

  it("drains queued items after close, then ignores pushes", async () => {
    const q = new AsyncQueue<string>();
    q.push("a");
    q.push("b");
    q.close();
    q.push("c");
    expect(await collect(q)).toEqual(["a", "b"]);
  });

  it("ends a pending read when closed", async () => {
    const q = new AsyncQueue<number>();
    const it = q[Symbol.asyncIterator]();
    const pending = it.next();
    q.close();
    expect(await pending).toEqual({ value: undefined, done: true });
  });

  it("closes when the reader stops early", async () => {
    const q = new AsyncQueue<number>();
    q.push(1);
    q.push(2);
    for await (const v of q) {
      expect(v).toBe(1);
      break;
    }
    expect(q.closed).toBe(true);
  });

  it("implements throw, as connect requires to abort a request stream: closes and rethrows", async () => {
    const q = new AsyncQueue<number>();
    const it = q[Symbol.asyncIterator]();
    const boom = new Error("abort");
    await expect(it.throw?.(boom)).rejects.toBe(boom);
    expect(q.closed).toBe(true);
  });
});
