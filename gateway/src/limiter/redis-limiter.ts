import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  checkInt,
  checkRate,
  emissionIntervalUs,
  type Limiter,
  type RatePeek,
  type RateTakeResult,
  type ThrottlePeek,
  type ThrottleTakeOptions,
  type ThrottleTakeResult,
  throttleTakeArgs,
} from "./limiter.js";
import type { RedisClient } from "./redis-url.js";

/** The Lua scripts, `lua/<name>-<numKeys>.lua`, registered under these ioredis command names. */
export const SCRIPTS = {
  taskqThrottleTake: "throttle-take-1.lua",
  taskqThrottleRefund: "throttle-refund-1.lua",
  taskqThrottleConfirm: "throttle-confirm-1.lua",
  taskqRateTake: "rate-take-1.lua",
  taskqRateRefund: "rate-refund-1.lua",
  taskqRampTake: "ramp-take-1.lua",
  taskqRampRefund: "ramp-refund-1.lua",
} as const;

type ScriptName = keyof typeof SCRIPTS;
type Reply = [number, number, number, number?];

/** The client with the commands `defineCommand` added. */
type ScriptedRedis = RedisClient & {
  taskqThrottleTake(
    key: string,
    intervalMs: number,
    token: string,
    version: number,
    earlyUs: number,
    holdUs: number,
    peek?: number,
  ): Promise<Reply>;
  taskqThrottleRefund(key: string, token: string): Promise<number>;
  taskqThrottleConfirm(key: string, token: string): Promise<number>;
  taskqRateTake(key: string, tUs: number, burst: number, want: number): Promise<Reply>;
  taskqRateRefund(key: string, tUs: number, n: number): Promise<number>;
  taskqRampTake(
    key: string,
    startMs: number,
    windowMs: number,
    ratePerMinute: number,
    want: number,
  ): Promise<Reply>;
  taskqRampRefund(key: string, n: number): Promise<number>;
};

let sources: Record<ScriptName, string> | undefined;

/** Reads the Lua files once per process (on first use, not at import time). */
function scriptSources(): Record<ScriptName, string> {
  if (!sources) {
    const out = {} as Record<ScriptName, string>;
    for (const [name, file] of Object.entries(SCRIPTS) as [ScriptName, string][])
      out[name] = readFileSync(new URL(`./lua/${file}`, import.meta.url), "utf8");
    sources = out;
  }
  return sources;
}

/** Options of {@link RedisLimiter}. */
export interface RedisLimiterOptions {
  /** Prefix of every key (default `taskq:`); tests use a random one. Must not contain `{` or `}`. */
  prefix?: string;
}

/**
 * The cluster-wide limiter on Redis: every gateway sharing one Redis (or Redis Cluster) shares the
 * limits. Each operation is one atomic Lua script on one key whose hash tag (`<prefix>{throttle:<queue>}`,
 * `<prefix>{rate:<key>}`) puts it in one slot; time comes from Redis `TIME`, never this process's clock.
 * Every script takes exactly one key, so on a Redis Cluster each runs on the node owning that key's slot
 * (redis-cluster.test.ts runs each on a real one). Idle keys expire by themselves.
 * Takes ownership of `client` (one server or a Cluster): `close()` quits it.
 */
export class RedisLimiter implements Limiter {
  readonly #redis: ScriptedRedis;
  readonly #prefix: string;
  #closed = false;

  constructor(client: RedisClient, options: RedisLimiterOptions = {}) {
    const prefix = options.prefix ?? "taskq:";
    if (/[{}]/.test(prefix)) throw new RangeError(`limiter key prefix must not contain braces: ${prefix}`);
    this.#prefix = prefix;
    for (const [name, lua] of Object.entries(scriptSources()))
      client.defineCommand(name, { numberOfKeys: 1, lua });
    this.#redis = client as ScriptedRedis;
  }

  /** The Redis key of a queue's throttle slot (a hash). */
  throttleKey(queue: string): string {
    return `${this.#prefix}{throttle:${queue}}`;
  }

  /** The Redis key of a GCRA rate key's state (a string, the TAT in µs). */
  rateKey(key: string): string {
    return `${this.#prefix}{rate:${key}}`;
  }

  async throttleTake(
    queue: string,
    intervalMs: number,
    options: ThrottleTakeOptions = {},
  ): Promise<ThrottleTakeResult> {
    checkInt("intervalMs", intervalMs, 1);
    const o = throttleTakeArgs(options);
    const token = randomUUID();
    const [code, ms, nowMs] = await this.#redis.taskqThrottleTake(
      this.throttleKey(queue),
      intervalMs,
      token,
      o.version,
      o.earlyUs,
      o.holdUs,
    );
    return code === 1
      ? { admitted: true, token, nowMs, waitMs: ms }
      : { admitted: false, pending: code === 2, retryAfterMs: ms, nowMs };
  }

  async throttlePeek(
    queue: string,
    intervalMs: number,
    options: ThrottleTakeOptions = {},
  ): Promise<ThrottlePeek> {
    checkInt("intervalMs", intervalMs, 1);
    const o = throttleTakeArgs(options);
    const [code, ms, atMs] = await this.#redis.taskqThrottleTake(
      this.throttleKey(queue),
      intervalMs,
      "",
      o.version,
      o.earlyUs,
      o.holdUs,
      1,
    );
    // Refused: atMs is now and the slot frees ms later; free (3): atMs is the slot's own time.
    return code === 3
      ? { free: true, held: false, nextMs: atMs, nowMs: atMs - ms }
      : { free: false, held: code === 2, nextMs: atMs + ms, nowMs: atMs };
  }

  async throttleConfirm(queue: string, token: string): Promise<void> {
    await this.#redis.taskqThrottleConfirm(this.throttleKey(queue), token);
  }

  async throttleRefund(queue: string, token: string): Promise<void> {
    await this.#redis.taskqThrottleRefund(this.throttleKey(queue), token);
  }

  async throttleReset(queue: string): Promise<void> {
    await this.#redis.del(this.throttleKey(queue));
  }

  async rateTake(key: string, ratePerMinute: number, burst: number, want: number): Promise<RateTakeResult> {
    checkRate(ratePerMinute);
    checkInt("burst", burst, 1);
    checkInt("want", want, 1);
    const [admitted, retryAfterMs, nowMs] = await this.#redis.taskqRateTake(
      this.rateKey(key),
      emissionIntervalUs(ratePerMinute),
      burst,
      want,
    );
    return { admitted, retryAfterMs, nowMs };
  }

  async ratePeek(key: string, ratePerMinute: number, burst: number): Promise<RatePeek> {
    checkRate(ratePerMinute);
    checkInt("burst", burst, 1);
    const [, retryAfterMs, nowMs, left] = await this.#redis.taskqRateTake(
      this.rateKey(key),
      emissionIntervalUs(ratePerMinute),
      burst,
      0,
    );
    return { available: left ?? 0, retryAfterMs: left ? 0 : retryAfterMs, nowMs };
  }

  async rateRefund(key: string, ratePerMinute: number, n: number): Promise<void> {
    checkRate(ratePerMinute);
    checkInt("n", n, 0);
    if (n === 0) return;
    await this.#redis.taskqRateRefund(this.rateKey(key), emissionIntervalUs(ratePerMinute), n);
  }

  async rateReset(key: string): Promise<void> {
    await this.#redis.del(this.rateKey(key));
  }

  /** The Redis key of a queue's ramp counter, one per ramp start. */
  rampKey(queue: string, startMs: number): string {
    return `${this.#prefix}{ramp:${queue}:${startMs}}`;
  }

  async rampTake(
    queue: string,
    startMs: number,
    windowMs: number,
    ratePerMinute: number,
    want: number,
  ): Promise<RateTakeResult> {
    checkRate(ratePerMinute);
    checkInt("windowMs", windowMs, 1);
    checkInt("want", want, 1);
    const [admitted, retryAfterMs, nowMs] = await this.#redis.taskqRampTake(
      this.rampKey(queue, startMs),
      startMs,
      windowMs,
      ratePerMinute,
      want,
    );
    return { admitted, retryAfterMs, nowMs };
  }

  async rampPeek(queue: string, startMs: number, windowMs: number, ratePerMinute: number): Promise<RatePeek> {
    checkRate(ratePerMinute);
    checkInt("windowMs", windowMs, 1);
    const [, retryAfterMs, nowMs, left] = await this.#redis.taskqRampTake(
      this.rampKey(queue, startMs),
      startMs,
      windowMs,
      ratePerMinute,
      0,
    );
    return { available: left ?? 0, retryAfterMs, nowMs };
  }

  async rampRefund(queue: string, startMs: number, n: number): Promise<void> {
    checkInt("n", n, 0);
    if (n > 0) await this.#redis.taskqRampRefund(this.rampKey(queue, startMs), n);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#redis.quit();
  }
}
