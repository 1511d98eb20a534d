/**
 * Answers a stream's requests without making each wait for the one before it: `work` starts on every
 * request as soon as it arrives (at most `ahead` unanswered at once), and the answers are yielded in
 * request order, as a bidi stream's client expects them. A worker sends its next Settle batch while
 * the last one is still in Postgres; processed one after the other, each batch's round trip added to
 * the next one's, and the worker's finished jobs waited on both.
 *
 * The first failure (of `work` or of reading the requests) ends the stream with that error once the
 * answers before it are out; work already started still runs to its end.
 */
export async function* answerInOrder<Req, Res>(
  requests: AsyncIterable<Req>,
  work: (req: Req) => Promise<Res>,
  ahead = 16,
): AsyncGenerator<Res> {
  const started: Promise<Res>[] = [];
  let readError: { error: unknown } | undefined;
  let ended = false;
  let wake: (() => void) | undefined;
  let room: (() => void) | undefined;
  let stopped = false;
  const notify = () => {
    wake?.();
    wake = undefined;
  };

  void (async () => {
    try {
      for await (const req of requests) {
        const answer = work(req);
        answer.catch(() => {}); // awaited in order below; this only keeps it from counting as unhandled
        started.push(answer);
        notify();
        while (started.length >= ahead && !stopped) await new Promise<void>((resolve) => (room = resolve));
        if (stopped) break;
      }
    } catch (error) {
      readError = { error };
    } finally {
      ended = true;
      notify();
    }
  })();

  try {
    for (;;) {
      const oldest = started[0];
      if (oldest === undefined) {
        if (readError) throw readError.error;
        if (ended) return;
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      const answer = await oldest;
      started.shift();
      room?.();
      room = undefined;
      yield answer;
    }
  } finally {
    // The stream is over (answered, failed or cancelled): the reader stops taking requests.
    stopped = true;
    room?.();
  }
}
