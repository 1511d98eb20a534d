// Reads one sample from a gateway's Prometheus /metrics.

/** The value of `name{labels}` (labels in the order the gateway prints them), or 0 when absent. */
export async function scrape(httpUrl: string, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${httpUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const series = labels ? `${name}{${labels}}` : name;
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

/** taskq_open_streams summed over its rpcs (claim, settle, heartbeat): the gateway's open worker streams. */
export async function openStreams(httpUrl: string): Promise<number> {
  const text = await (await fetch(`${httpUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  let n = 0;
  for (const l of text.split("\n")) if (l.startsWith("taskq_open_streams{")) n += Number(l.split(" ").pop());
  return n;
}

/** Polls `openStreams` until `done(n)` or `withinMs`; the last count and how long it took, ms. */
export async function openStreamsUntil(
  httpUrl: string,
  done: (n: number) => boolean,
  withinMs: number,
): Promise<{ n: number; ms: number }> {
  const started = Date.now();
  let n = await openStreams(httpUrl);
  while (!done(n) && Date.now() - started < withinMs) {
    await new Promise((r) => setTimeout(r, 100));
    n = await openStreams(httpUrl);
  }
  return { n, ms: Date.now() - started };
}
