import { parseArgs } from "node:util";

/** Bad command-line input (unknown flag, missing argument, malformed value): exit code 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** One flag a command accepts, as shown in its `--help`. */
export interface OptionSpec {
  readonly type: "string" | "boolean";
  /** Placeholder shown after a string flag in help, e.g. "N" or "JSON". */
  readonly value?: string;
  /** One line of help. */
  readonly help: string;
}

/** Flags every operator command accepts. */
export const globalOptions = {
  url: {
    type: "string",
    value: "URL",
    help: "Gateway gRPC address (env TASKQ_URL, default http://127.0.0.1:7070)",
  },
  token: { type: "string", value: "TOKEN", help: "Bearer token (env TASKQ_TOKEN)" },
  "ca-file": {
    type: "string",
    value: "FILE",
    help: "PEM CA to trust for an https:// --url instead of the system's (env TASKQ_CA_FILE)",
  },
  "cert-file": {
    type: "string",
    value: "FILE",
    help: "PEM client certificate, for a gateway with mutual TLS (env TASKQ_CERT_FILE)",
  },
  "key-file": { type: "string", value: "FILE", help: "PEM key of --cert-file (env TASKQ_KEY_FILE)" },
  json: { type: "boolean", help: "Print the response as protobuf JSON" },
  help: { type: "boolean", help: "Show this help" },
} as const satisfies Record<string, OptionSpec>;

const UINT32_MAX = 4_294_967_295;

/** A command's parsed command line, read through typed accessors that name the flag in every error. */
export class Args<K extends string> {
  private constructor(
    readonly positionals: readonly string[],
    private readonly values: Record<string, string | boolean | undefined>,
  ) {}

  /**
   * Parses `argv` strictly against `options` (plus the global ones); `arity` is the positional
   * arguments' names: "<name>" required, "[name]" optional (after the required ones).
   */
  static parse<K extends string>(
    argv: readonly string[],
    options: Record<K, OptionSpec>,
    arity: readonly string[],
  ): Args<K | keyof typeof globalOptions> {
    let parsed: ReturnType<typeof parseArgs>;
    try {
      parsed = parseArgs({
        args: attachNegativeValues(argv, { ...globalOptions, ...options }),
        allowPositionals: true,
        strict: true,
        options: {
          ...stripHelp(globalOptions),
          ...stripHelp(options),
          help: { type: "boolean", short: "h" },
        },
      });
    } catch (err) {
      throw usageFromParseError(err);
    }
    const args = new Args<K | keyof typeof globalOptions>(
      parsed.positionals,
      // No option is `multiple`, so every value is a string or a boolean.
      parsed.values as Record<string, string | boolean | undefined>,
    );
    if (args.flag("help")) return args;
    // "[name]" arguments are optional and come last.
    const required = arity.filter((a) => !a.startsWith("[")).length;
    if (parsed.positionals.length < required) {
      throw new UsageError(`missing argument ${arity[parsed.positionals.length]}`);
    }
    if (parsed.positionals.length > arity.length) {
      throw new UsageError(`unexpected argument "${parsed.positionals[arity.length]}"`);
    }
    return args;
  }

  /** Positional argument `i` (its presence was checked by `parse`). */
  arg(i: number): string {
    return this.positionals[i] ?? "";
  }

  /** Optional positional argument `i`, undefined when not given. */
  optionalArg(i: number): string | undefined {
    return this.positionals[i];
  }

  /** A boolean flag. */
  flag(name: K): boolean {
    return this.values[name] === true;
  }

  /** A string flag, undefined when absent. */
  str(name: K): string | undefined {
    const v = this.values[name];
    return typeof v === "string" ? v : undefined;
  }

  /** Whether the flag was given at all. */
  has(name: K): boolean {
    return this.values[name] !== undefined;
  }

  /**
   * A whole-number flag within [min, max] (default: what a uint32 holds), undefined when absent.
   * Ranges are mostly left to the gateway, so its message stays the one source of truth; a flag whose
   * help states a range passes it, so a typo ("--limit ten") is answered with the range help shows.
   * `off` says what `--off` does instead, for a command where it removes what the flag sets: a
   * value out of range names it ("--off removes the cap").
   */
  int(name: K, range: IntRange = {}): number | undefined {
    const raw = this.str(name);
    if (raw === undefined) return undefined;
    const { min = 0, max = UINT32_MAX } = range;
    const n = /^[+-]?\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      const off = range.off ? ` (--off ${range.off})` : "";
      throw new UsageError(
        `--${name} must be a whole number from ${grouped(min)} to ${grouped(max)}${off}, got "${raw}"`,
      );
    }
    return n;
  }

  /** Like `int`, but the flag is required. */
  requiredInt(name: K, range?: IntRange): number {
    const n = this.int(name, range);
    if (n === undefined) throw new UsageError(`missing --${name}`);
    return n;
  }

  /** Exactly one of `a` and `b` must be given (e.g. a value or `--off`). */
  oneOf(a: K, b: K): void {
    if (this.has(a) === this.has(b)) throw new UsageError(`give exactly one of --${a} and --${b}`);
  }
}

/** The values `Args.int` takes; see there. */
export interface IntRange {
  min?: number;
  max?: number;
  off?: string;
}

/**
 * `--max-running -1` as `--max-running=-1`: parseArgs calls a value that starts with a dash ambiguous
 * (it might be a flag), so a negative number after a flag that takes a value is joined to it, and is
 * then judged as a value (out of range, say) by the flag's own check.
 */
function attachNegativeValues(argv: readonly string[], options: Record<string, OptionSpec>): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] ?? "";
    if (token === "--") return [...out, ...argv.slice(i)];
    const next = argv[i + 1];
    const takesValue = token.startsWith("--") && options[token.slice(2)]?.type === "string";
    if (takesValue && next !== undefined && /^-(\d|\.\d)/.test(next)) {
      out.push(`${token}=${next}`);
      i++;
    } else out.push(token);
  }
  return out;
}

/** 100000 as "100,000", as help text writes numbers. */
function grouped(n: number): string {
  return n.toLocaleString("en-US");
}

function stripHelp(options: Record<string, OptionSpec>): Record<string, { type: "string" | "boolean" }> {
  return Object.fromEntries(Object.entries(options).map(([k, o]) => [k, { type: o.type }]));
}

/**
 * node:util parseArgs errors already name the flag ("Unknown option '--bogus'", "Option '--payload'
 * argument is ambiguous … use '--payload=-XYZ'"); kept on one line, without the positional hint.
 */
function usageFromParseError(err: unknown): Error {
  const e = err as { code?: string; message?: string };
  if (typeof e?.code === "string" && e.code.startsWith("ERR_PARSE_ARGS")) {
    const text = (e.message ?? "").replace(/\. To specify a positional argument[\s\S]*$/, "");
    return new UsageError(text.replace(/\s*\n\s*/g, " "));
  }
  return err as Error;
}
