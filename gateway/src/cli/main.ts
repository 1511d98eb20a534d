import { ConnectError } from "@connectrpc/connect";
import { Args, UsageError } from "./args.js";
import { connect } from "./client.js";
import { type Command, commandHelp, findCommand, type Group, groupHelp } from "./command.js";
import { jobExplainCommands, queueExplainCommands } from "./explain.js";
import { flowLimitCommands } from "./flow-limits.js";
import { enqueue, jobCommands } from "./job.js";
import { jobListCommands } from "./job-list.js";
import { maintenanceCommands, observeCommands } from "./observe.js";
import { Output, type Sink } from "./output.js";
import { queueCommands } from "./queue.js";
import { queueActivityCommands } from "./queue-activity.js";
import { queueAdaptiveCommands } from "./queue-adaptive.js";
import { describeRpcError } from "./rpc-error.js";
import { redrive, scheduleCommands } from "./schedule.js";
import { describeTlsMismatch } from "./tls-mismatch.js";
import { tokenCommands } from "./token.js";
import { workerCommands } from "./workers.js";

/**
 * The operator command groups. A new verb is one `command({...})` in its group's file, listed here;
 * a new group (e.g. `schedule`, `maintenance`) is one more entry.
 */
export const groups: readonly Group[] = [
  {
    name: "queue",
    summary: "Queue settings and flow control",
    commands: [
      ...queueCommands,
      ...queueAdaptiveCommands,
      redrive,
      ...flowLimitCommands,
      ...observeCommands,
      ...queueActivityCommands,
      ...queueExplainCommands,
    ],
  },
  { name: "schedule", summary: "Cron schedules that enqueue jobs", commands: scheduleCommands },
  { name: "enqueue", summary: "Enqueue one job and print its id", commands: [enqueue], verb: true },
  {
    name: "job",
    summary: "List, look at, explain, cancel and retry jobs",
    commands: [...jobListCommands, ...jobCommands, ...jobExplainCommands],
  },
  { name: "worker", summary: "The workers connected to the fleet", commands: workerCommands },
  { name: "maintenance", summary: "Housekeeping", commands: maintenanceCommands },
  { name: "token", summary: "Bearer tokens for the gateway's config (offline)", commands: tokenCommands },
];

/** Where a run reads its settings and writes its output. */
export interface Io {
  readonly stdout: Sink;
  readonly stderr: Sink;
  /** TASKQ_URL and TASKQ_TOKEN are read from here. */
  readonly env: Record<string, string | undefined>;
}

/** The group `argv[0]` names, if it is an operator group. */
export function operatorGroup(word: string | undefined): Group | undefined {
  return groups.find((g) => g.name === word);
}

/**
 * Runs `taskq <group> …` and returns the exit code: 0 success, 1 the gateway refused or failed,
 * 2 bad command line (the message names the flag or argument).
 */
export async function runOperator(argv: readonly string[], io: Io): Promise<number> {
  const [groupName, ...rest] = argv;
  const group = operatorGroup(groupName);
  if (!group) throw new Error(`not an operator group: ${groupName}`);
  let where = `taskq ${group.name}`;
  let cmd: Command | "help" | undefined;
  try {
    const found = findCommand(group, rest);
    cmd = found.cmd;
    if (cmd === "help") {
      io.stdout.write(groupHelp(group));
      return 0;
    }
    if (!group.verb) where += ` ${cmd.name}`;
    const args = Args.parse(found.rest, cmd.options, cmd.args);
    if (args.flag("help")) {
      io.stdout.write(commandHelp(group, cmd));
      return 0;
    }
    const clients = connect(
      {
        url: args.str("url"),
        token: args.str("token"),
        caFile: args.str("ca-file"),
        certFile: args.str("cert-file"),
        keyFile: args.str("key-file"),
      },
      io.env,
    );
    try {
      await cmd.run({ args, clients, out: new Output(io.stdout, args.flag("json"), io.stderr) });
    } catch (err) {
      if (!(err instanceof ConnectError)) throw err;
      const message =
        (await describeTlsMismatch(err, clients.url)) ??
        describeRpcError(err, clients.url, "create" in cmd.options);
      io.stderr.write(`${where}: ${message}\n`);
      return 1;
    }
    return 0;
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    const hint = cmd && cmd !== "help" ? `\nRun "${where} --help" for usage.` : "";
    io.stderr.write(`${where}: ${err.message}${hint}\n`);
    return 2;
  }
}

/** The lines `taskq --help` shows for the operator groups: each group's summary and its verbs. */
export function operatorUsage(): string {
  return groups
    .map((g) => {
      const head = `  ${g.name.padEnd(9)}  ${g.summary}`;
      if (g.verb) return `${head}\n`;
      return `${head}:\n${wrap(g.commands.map((c) => c.name).join(", "), 96, " ".repeat(13))}\n`;
    })
    .join("");
}

function wrap(text: string, width: number, indent: string): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && line.length + word.length + 1 > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.map((l) => indent + l).join("\n");
}
