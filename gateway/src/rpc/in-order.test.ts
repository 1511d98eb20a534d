import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { answerInOrder } from "./in-order.js";

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Requests arriving with the given gaps (ms). */
async function* arriving(gaps: readonly number[]): AsyncGenerator<number> {
  for (const [i, gap] of gaps.entries()) {
    await pause(gap);
    yield i;
  }
}

describe("answerInOrder", () => {
  it("answers in request order whatever order the work finishes in, never more than `ahead` at once", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat({ max: 3 }), fc.nat({ max: 6 })), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 1, max: 4 }),
        async (reqs, ahead) => {
          let running = 0;
          let most = 0;
          const out: number[] = [];
          const work = async (i: number) => {
            running++;
            most = Math.max(most, running);
            await pause(reqs[i]?.[1] ?? 0);
            running--;
            return i * 10;
          };
          for await (const a of answerInOrder(arriving(reqs.map((r) => r[0])), work, ahead)) out.push(a);
          expect(out).toEqual(reqs.map((_, i) => i * 10));
          expect(most).toBeLessThanOrEqual(ahead);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("starts the next request's work before the one before it is answered", async () => {
    const started: number[] = [];
    const answers: number[] = [];
    let release: () => void = () => {};
    const firstHeld = new Promise<void>((r) => (release = r));
    const work = async (i: number) => {
      started.push(i);
      if (i === 0) await firstHeld;
      return i;
    };
    const stream = answerInOrder(arriving([0, 0]), work);
    const first = stream.next();
    await pause(20);
    // Request 1 is being worked on while request 0 still waits: nothing answered yet.
    expect(started).toEqual([0, 1]);
    expect(answers).toEqual([]);
    release();
    answers.push((await first).value as number);
    answers.push((await stream.next()).value as number);
    expect(answers).toEqual([0, 1]);
    expect((await stream.next()).done).toBe(true);
  });

  it("ends with the first failure after the answers before it", async () => {
    const out: number[] = [];
    const work = async (i: number) => {
      if (i === 2) throw new Error("bad request 2");
      await pause(5);
      return i;
    };
    await expect(
      (async () => {
        for await (const a of answerInOrder(arriving([0, 0, 0, 0]), work)) out.push(a);
      })(),
    ).rejects.toThrow("bad request 2");
    expect(out).toEqual([0, 1]);
  });

  it("ends with an error of the requests themselves", async () => {
    async function* broken(): AsyncGenerator<number> {
      yield 0;
      throw new Error("stream reset");
    }
    const out: number[] = [];
    await expect(
      (async () => {
        for await (const a of answerInOrder(broken(), async (i) => i)) out.push(a);
      })(),
    ).rejects.toThrow("stream reset");
    expect(out).toEqual([0]);
  });
});
