/**
 * What a test run without service URLs finds on the default local ports, so its skip messages can tell
 * a newcomer the exact command that runs the skipped tests there. It only probes and reports: the tests
 * never use a service the environment did not name, since a Postgres or Redis that happens to listen
 * on this machine may be someone else's (the tests create and drop databases on it).
 *
 * Plain sockets, no vitest: the global setup (vitest's main process) runs it, and services.ts reads
 * its result in the test workers.
 */
import { createConnection } from "node:net";

/** A test service, as the guard in services.ts names it. */
export type Service = "postgres" | "redis";

/** Where each service's URL comes from, and the URL the README gives for its default local port. */
export const SERVICES: Record<Service, { label: string; env: string; localUrl: string; port: number }> = {
  postgres: {
    label: "Postgres",
    env: "TASKQ_TEST_DATABASE_URL",
    localUrl: "postgres://postgres@127.0.0.1:5432/postgres",
    port: 5432,
  },
  redis: { label: "Redis", env: "TASKQ_TEST_REDIS_URL", localUrl: "redis://127.0.0.1:6379", port: 6379 },
};

/** What the global setup found, handed to the test workers (vitest's provide/inject). */
export interface LocalServices {
  /** The services whose URL is not set but which answer on their default local port. */
  answering: Service[];
  /** The command to run again with those URLs set: this run's own, with the variables in front. */
  command: string;
}

/** The key the global setup provides {@link LocalServices} under. */
export const LOCAL_SERVICES_KEY = "taskqLocalServices";

declare module "vitest" {
  export interface ProvidedContext {
    taskqLocalServices: LocalServices;
  }
}

// A probe speaks the service's own protocol, so a port held by something else does not count: an
// SSLRequest, which any Postgres answers with one byte ("S" or "N") before authentication; a PING,
// which Redis answers with a simple string or an error (NOAUTH when it wants a password).
const PROBES: Record<Service, { hello: Buffer; answers: (first: Buffer) => boolean }> = {
  postgres: {
    hello: Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]),
    answers: (b) => b.length >= 1 && (b[0] === 0x53 || b[0] === 0x4e),
  },
  redis: {
    hello: Buffer.from("PING\r\n"),
    answers: (b) => b.length >= 1 && (b[0] === 0x2b || b[0] === 0x2d),
  },
};

/** True when `service` answers on 127.0.0.1 at its default port within `timeoutMs`. */
export function probe(service: Service, timeoutMs = 500): Promise<boolean> {
  const { hello, answers } = PROBES[service];
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port: SERVICES[service].port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("error", () => done(false));
    socket.once("connect", () => socket.write(hello));
    socket.once("data", (b: Buffer) => done(answers(b)));
  });
}

/** `VAR=url` for each service, in front of `command`. */
export function commandWith(services: readonly Service[], command: string): string {
  return [...services.map((s) => `${SERVICES[s].env}=${SERVICES[s].localUrl}`), command].join(" ");
}

/**
 * The command that started this run, to repeat with the URLs set: `npm test` (or `npm run <script>`)
 * under an npm script, else vitest's own arguments (npx names its own runs "npx").
 */
export function thisCommand(env: NodeJS.ProcessEnv = process.env, argv: readonly string[] = process.argv) {
  const script = env.npm_lifecycle_event;
  if (script && script !== "npx") return script === "test" ? "npm test" : `npm run ${script}`;
  const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`);
  return ["npx", "vitest", ...argv.slice(2).map(quote)].join(" ");
}

/**
 * Probes the services whose URL `env` does not set; returns what it found and the banner to print
 * once (null when every URL is set).
 */
export async function findLocalServices(
  env: NodeJS.ProcessEnv = process.env,
  command = thisCommand(env),
): Promise<{ found: LocalServices; banner: string | null }> {
  const unset = (Object.keys(SERVICES) as Service[]).filter((s) => !env[SERVICES[s].env]);
  const answering: Service[] = [];
  for (const [s, ok] of await Promise.all(unset.map(async (s) => [s, await probe(s)] as const)))
    if (ok) answering.push(s);
  const found = { answering, command };
  if (unset.length === 0) return { found, banner: null };
  const lines = unset.map((s) => {
    const { label, env: name, port } = SERVICES[s];
    const where = answering.includes(s)
      ? `answers on 127.0.0.1:${port}`
      : `does not answer on 127.0.0.1:${port}`;
    return `  ${name} is not set, and ${label} ${where}: the tests that need ${label} are skipped.`;
  });
  if (answering.length > 0)
    lines.push(
      "  They never use a service they were not given. To run them on the local ones:",
      `    ${commandWith(answering, command)}`,
    );
  return { found, banner: `\n*** taskq tests without services ***\n${lines.join("\n")}\n` };
}
