import type { NewJob } from "../store/types.js";

/** A job for the store's enqueue: empty payload, ready now, 5 attempts; `over` changes any field. */
export const newJob = (queue: string, over: Partial<NewJob> = {}): NewJob => ({
  queue,
  payload: new Uint8Array(),
  contentType: "",
  priority: 0,
  flowKey: null,
  runAt: null,
  delayMs: null,
  ttlSeconds: 0,
  maxAttempts: 5,
  idempotencyKey: null,
  headers: {},
  ...over,
});
