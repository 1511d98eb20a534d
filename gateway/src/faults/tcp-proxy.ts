// A TCP proxy that fault scenarios put between gateways and Postgres or Redis, so a test can break the
// network to one service without touching the shared server processes other engineers' tests use.
import { once } from "node:events";
import { createConnection, createServer, type Server, type Socket } from "node:net";

/** How the proxy treats traffic right now. */
export type ProxyMode =
  /** Forward everything as it arrives. */
  | { kind: "pass" }
  /** Every connection reset, new ones reset on accept: the service is unreachable. */
  | { kind: "cut" }
  /** Connections stay open but nothing is forwarded (both ways) until the mode changes. */
  | { kind: "stall" }
  /** Each chunk is forwarded `delayMs` after it arrived, in order. */
  | { kind: "slow"; delayMs: number };

interface Pipe {
  client: Socket;
  upstream: Socket;
}

/** A proxy listening on 127.0.0.1 (a free port) in front of `target`; starts in `pass` mode. */
export class FaultProxy {
  readonly #server: Server;
  readonly #target: { host: string; port: number };
  readonly #pipes = new Set<Pipe>();
  #mode: ProxyMode = { kind: "pass" };
  /** Connections accepted since start (refused ones included). */
  accepted = 0;

  private constructor(server: Server, target: { host: string; port: number }) {
    this.#server = server;
    this.#target = target;
    server.on("connection", (client) => this.#accept(client));
  }

  /** Starts a proxy in front of `host:port`. */
  static async start(target: { host: string; port: number }): Promise<FaultProxy> {
    const server = createServer();
    const proxy = new FaultProxy(server, target);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return proxy;
  }

  /** The port clients connect to. */
  get port(): number {
    return (this.#server.address() as { port: number }).port;
  }

  /** Open proxied connections now. */
  get connections(): number {
    return this.#pipes.size;
  }

  get mode(): ProxyMode {
    return this.#mode;
  }

  /** `url` (postgres://…, redis://…) with its host and port replaced by this proxy's. */
  rewrite(url: string): string {
    const u = new URL(url);
    u.hostname = "127.0.0.1";
    u.port = String(this.port);
    return u.toString();
  }

  pass(): void {
    this.#set({ kind: "pass" });
  }

  cut(): void {
    this.#set({ kind: "cut" });
  }

  stall(): void {
    this.#set({ kind: "stall" });
  }

  slow(delayMs: number): void {
    this.#set({ kind: "slow", delayMs });
  }

  /** Resets every connection and stops listening. */
  async close(): Promise<void> {
    this.#set({ kind: "cut" });
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #set(mode: ProxyMode): void {
    this.#mode = mode;
    for (const pipe of this.#pipes) {
      if (mode.kind === "cut") this.#reset(pipe);
      else if (mode.kind === "stall") {
        pipe.client.pause();
        pipe.upstream.pause();
      } else {
        pipe.client.resume();
        pipe.upstream.resume();
      }
    }
  }

  #accept(client: Socket): void {
    this.accepted++;
    if (this.#mode.kind === "cut") {
      client.on("error", () => {});
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection(this.#target);
    const pipe: Pipe = { client, upstream };
    this.#pipes.add(pipe);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    this.#forward(client, upstream);
    this.#forward(upstream, client);
    const end = () => this.#reset(pipe);
    for (const s of [client, upstream]) {
      s.on("error", end);
      s.on("close", end);
    }
    if (this.#mode.kind === "stall") {
      client.pause();
      upstream.pause();
    }
  }

  /** Copies `from` to `to` chunk by chunk, honouring the mode at the time each chunk arrives. */
  #forward(from: Socket, to: Socket): void {
    from.on("data", (chunk: Buffer) => {
      const mode = this.#mode;
      if (mode.kind !== "slow") {
        to.write(chunk);
        return;
      }
      // Pausing until the delayed write keeps chunks in order.
      from.pause();
      setTimeout(() => {
        if (to.destroyed) return;
        to.write(chunk);
        if (this.#mode.kind !== "stall") from.resume();
      }, mode.delayMs);
    });
    from.on("end", () => to.end());
  }

  #reset(pipe: Pipe): void {
    if (!this.#pipes.delete(pipe)) return;
    for (const s of [pipe.client, pipe.upstream]) {
      s.on("error", () => {});
      if (!s.destroyed) s.resetAndDestroy();
    }
  }
}
