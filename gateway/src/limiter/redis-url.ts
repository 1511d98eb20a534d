import { Cluster, Redis, type RedisOptions } from "ioredis";

/**
 * What TASKQ_REDIS_URL names. One server: `redis://[user:password@]host[:port][/db]`, or `rediss://`
 * for TLS (ioredis reads these itself). A Redis Cluster: `redis+cluster://[user:password@]host:port,
 * host:port,...` (or `rediss+cluster://` for TLS), its seed nodes; the client learns the rest of the
 * cluster from them. A cluster has one database, so no `/db`.
 */
export type RedisTarget =
  | { readonly kind: "server"; readonly url: string }
  | {
      readonly kind: "cluster";
      readonly nodes: readonly { host: string; port: number }[];
      readonly username?: string;
      readonly password?: string;
      readonly tls: boolean;
    };

const CLUSTER = /^(rediss?)\+cluster:\/\/(?:([^@/]*)@)?([^/?#@]+)\/?$/i;

/** Reads a Redis URL; throws a RangeError saying what is wrong (never echoing a password). */
export function parseRedisUrl(url: string): RedisTarget {
  const cluster = CLUSTER.exec(url);
  if (cluster) {
    const [, scheme = "", auth, hosts = ""] = cluster;
    const nodes = hosts.split(",").map((h) => {
      const m = /^(\[[^\]]+\]|[^:,\s]+):(\d{1,5})$/.exec(h.trim());
      const port = Number(m?.[2]);
      if (!m?.[1] || !(port > 0 && port < 65536))
        throw new RangeError(`a Redis Cluster seed node must be host:port, got ${JSON.stringify(h)}`);
      return { host: m[1].replace(/^\[|\]$/g, ""), port };
    });
    let username: string | undefined;
    let password: string | undefined;
    if (auth) {
      const colon = auth.indexOf(":");
      username = decodeURIComponent(colon < 0 ? auth : auth.slice(0, colon)) || undefined;
      password = colon < 0 ? undefined : decodeURIComponent(auth.slice(colon + 1)) || undefined;
    }
    return {
      kind: "cluster",
      nodes,
      tls: scheme.toLowerCase() === "rediss",
      ...(username === undefined ? {} : { username }),
      ...(password === undefined ? {} : { password }),
    };
  }
  if (!URL.canParse(url) || !["redis:", "rediss:"].includes(new URL(url).protocol))
    throw new RangeError("a Redis URL must be redis://, rediss://, redis+cluster:// or rediss+cluster://");
  return { kind: "server", url };
}

/** A client of one server or of a Redis Cluster: both run the limiter's scripts alike. */
export type RedisClient = Redis | Cluster;

/**
 * A client for `url` with `options` on every connection. A cluster client fails a command fast while
 * the node owning its slot is down (no offline queue beyond `commandTimeout`), so the limiter fails
 * closed on those slots and keeps serving the others.
 */
export function redisClient(url: string, options: RedisOptions): RedisClient {
  const target = parseRedisUrl(url);
  if (target.kind === "server") return new Redis(url, options);
  const { lazyConnect, ...perNode } = options;
  return new Cluster([...target.nodes], {
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    // A slot moving between nodes answers MOVED or ASK once or twice; past that the call fails (and a
    // limiter call fails closed) rather than wander, 100 ms a retry.
    maxRedirections: 3,
    // A down node's slots stay with it until a replica takes over (or it comes back): try again soon,
    // and let the command timeout bound each call.
    retryDelayOnClusterDown: 100,
    retryDelayOnFailover: 100,
    slotsRefreshTimeout: 1000,
    redisOptions: {
      ...perNode,
      ...(target.username === undefined ? {} : { username: target.username }),
      ...(target.password === undefined ? {} : { password: target.password }),
      ...(target.tls ? { tls: {} } : {}),
    },
  });
}
