/**
 * `read`, with the calls made while one is in flight answered by that one: callers that ask together
 * (the collectors of one metrics scrape, the probes of one health check) share one read.
 */
export function sharedWhileInFlight<T>(read: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | undefined;
  return () => {
    inFlight ??= read().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
}
