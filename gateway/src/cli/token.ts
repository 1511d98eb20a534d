import { hashToken, newToken, parseTokens, type TokenEntry } from "../auth/tokens.js";
import { UsageError } from "./args.js";
import { type Command, command } from "./command.js";

/** Checks a token entry with the config's own rules, naming the flag on failure. */
function entry(raw: Record<string, unknown>): TokenEntry {
  try {
    const [e] = parseTokens([raw]);
    if (!e) throw new Error("no entry");
    return e;
  } catch (err) {
    throw new UsageError((err as Error).message.replace(/^\[0\]\.?/, "--"));
  }
}

/** The entry as it goes in the config file: `queues` only when the token is scoped. */
const configEntry = (e: TokenEntry) => ({
  name: e.name,
  ...(e.roles.length === 1 ? { role: e.roles[0] } : { roles: e.roles }),
  ...(e.queues ? { queues: e.queues } : {}),
  sha256: e.sha256,
});

const create = command({
  name: "new",
  args: [],
  summary: "Make a bearer token: prints the token once, and the hashed entry for the gateway's config",
  details: `The gateway stores only the SHA-256: add the printed entry to "tokens" in its config file (or to
TASKQ_TOKENS) and restart it; hand the token to whoever uses it.
Example: taskq token new --name mail-worker --role worker --queues mail,mail-bulk`,
  options: {
    name: { type: "string", value: "NAME", help: "Unique name, the audit log's actor (e.g. ops-alice)" },
    role: {
      type: "string",
      value: "ROLE[,ROLE]",
      help: "operator, observer, housekeeper, worker or producer (a worker that enqueues: worker,producer)",
    },
    queues: { type: "string", value: "Q1,Q2", help: "Worker and producer tokens: limit to these queues" },
  },
  async run({ args, out }) {
    if (!args.has("name")) throw new UsageError("missing --name");
    if (!args.has("role")) throw new UsageError("missing --role");
    const token = newToken();
    const roles = args.str("role")?.split(",") ?? [];
    const e = entry({
      name: args.str("name"),
      ...(roles.length === 1 ? { role: roles[0] } : { roles }),
      ...(args.has("queues") ? { queues: args.str("queues")?.split(",") } : {}),
      sha256: hashToken(token),
    });
    if (out.jsonMode) return out.line(JSON.stringify({ token, entry: configEntry(e) }));
    out.line(`token: ${token}`);
    out.line("(shown once: taskq keeps only its hash)");
    out.line(`config entry for "tokens": ${JSON.stringify(configEntry(e))}`);
  },
});

const hash = command({
  name: "hash",
  args: [],
  summary: "Print the SHA-256 the config stores for a token read from stdin (e.g. a rotated secret)",
  details: 'Example: printf %s "$TOKEN" | taskq token hash',
  options: {},
  async run({ out }) {
    let text = "";
    for await (const chunk of process.stdin) text += chunk;
    const token = text.trim();
    if (!token) throw new UsageError("no token on stdin");
    const sha256 = hashToken(token);
    out.line(out.jsonMode ? JSON.stringify({ sha256 }) : sha256);
  },
});

/** `taskq token …`: make tokens and their hashes; works offline, talks to no gateway. */
export const tokenCommands: readonly Command[] = [create, hash];
