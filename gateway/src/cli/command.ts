import { type Args, globalOptions, type OptionSpec, UsageError } from "./args.js";
import type { Clients } from "./client.js";
import type { Output } from "./output.js";

/** What a command's `run` gets: its parsed arguments, gateway clients and where to print. */
export interface Context<K extends string> {
  readonly args: Args<K | keyof typeof globalOptions>;
  readonly clients: Clients;
  readonly out: Output;
}

/** One operator verb, e.g. `taskq queue pause <queue>`. */
export interface Command<K extends string = string> {
  /** The word after the group (or after `taskq` for a top-level verb), e.g. "pause". */
  readonly name: string;
  /** Required positional arguments as shown in usage, e.g. ["<queue>"]. */
  readonly args: readonly string[];
  /** One line for the group's command list. */
  readonly summary: string;
  /** Extra help text printed after the flags, e.g. an example. */
  readonly details?: string;
  readonly options: Record<K, OptionSpec>;
  run(ctx: Context<K>): Promise<void>;
}

/** Defines a command with its flag names checked at compile time in `run`. */
export function command<K extends string = never>(c: Command<K>): Command {
  return c as unknown as Command;
}

/** A named set of commands (`taskq queue …`); a top-level verb is a group of one with `verb` set. */
export interface Group {
  readonly name: string;
  readonly summary: string;
  readonly commands: readonly Command[];
  /** True when the group is itself the verb (`taskq enqueue <queue>`), with one command. */
  readonly verb?: boolean;
}

/** The usage line and flag table of one command. */
export function commandHelp(group: Group, c: Command): string {
  const words = group.verb ? `taskq ${group.name}` : `taskq ${group.name} ${c.name}`;
  const flags = Object.entries<OptionSpec>({ ...c.options, ...globalOptions }).map(([name, o]) => [
    `${name === "help" ? "-h, " : ""}--${name}${o.type === "string" ? ` ${o.value ?? "VALUE"}` : ""}`,
    o.help,
  ]);
  const width = Math.max(...flags.map(([f]) => f?.length ?? 0));
  const lines = flags.map(([f = "", h]) => `  ${f.padEnd(width)}  ${h}`);
  return `${c.summary}\n\nUsage: ${[words, ...c.args].join(" ")} [flags]\n\nFlags:\n${lines.join("\n")}\n${
    c.details ? `\n${c.details}\n` : ""
  }`;
}

/** The command list of a group. */
export function groupHelp(group: Group): string {
  const width = Math.max(...group.commands.map((c) => c.name.length));
  const lines = group.commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
  return `${group.summary}\n\nUsage: taskq ${group.name} <command> [flags]\n\nCommands:\n${lines.join(
    "\n",
  )}\n\nRun "taskq ${group.name} <command> --help" for a command's flags.\n`;
}

/** Picks the group's command from `argv`; throws UsageError for an unknown one. */
export function findCommand(
  group: Group,
  argv: readonly string[],
): { cmd: Command | "help"; rest: string[] } {
  if (group.verb) {
    const [only] = group.commands;
    if (!only) throw new Error(`group ${group.name} has no command`);
    return { cmd: only, rest: [...argv] };
  }
  const [word, ...rest] = argv;
  if (word === undefined || word === "--help" || word === "-h" || word === "help") {
    if (word === undefined) throw new UsageError(`missing command\n\n${groupHelp(group)}`);
    return { cmd: "help", rest };
  }
  const cmd = group.commands.find((c) => c.name === word);
  if (!cmd) throw new UsageError(`unknown command "${word}"\n\n${groupHelp(group)}`);
  return { cmd, rest };
}
