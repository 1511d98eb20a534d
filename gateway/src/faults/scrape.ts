// Reads one sample from a gateway's Prometheus /metrics.

/** The value of `name{labels}` (labels in the order the gateway prints them), or 0 when absent. */
export async function scrape(httpUrl: string, name: string, labels = ""): Promise<number> {
  const text = await (await fetch(`${httpUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const series = labels ? `${name}{${labels}}` : name;
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}
