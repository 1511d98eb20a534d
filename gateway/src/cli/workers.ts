import { timestampDate } from "@bufbuild/protobuf/wkt";
import { AdminService } from "@taskq/sdk/proto";
import { type Command, command } from "./command.js";
import type { Cell } from "./output.js";

const rpc = AdminService.method;

const ls = command({
  name: "ls",
  args: [],
  summary: "Every worker connected to any gateway: queues, jobs held, last poll, recent verdicts",
  details: `From the records each gateway writes every workerRecordsFlushMs (default 5 s): a stopped
worker drops out at its gateway's next write, a worker of a gateway that died after 3 of them.
HELD is jobs leased to the worker (running or in its prefetch buffer) of SLOTS (its concurrency, plus
its prefetch buffer after a "+"), when its polls say; ASKING is what its poll asks for now.
  taskq worker ls
  taskq worker ls --queue mail --json`,
  options: { queue: { type: "string", value: "NAME", help: "Only the workers polling this queue" } },
  async run({ args, clients, out }) {
    const res = await clients.admin.listWorkers({ queue: args.str("queue") ?? "" });
    const now = Date.now();
    out.respond(rpc.listWorkers.output, res, () =>
      out.table(
        ["WORKER", "GATEWAY", "QUEUES", "HELD", "SLOTS", "ASKING", "LAST_POLL", "VERDICTS_1M"],
        res.workers.map((w): Cell[] => [
          w.workerId || "(none)",
          w.gatewayId,
          w.queues.join(","),
          w.held,
          w.concurrency === undefined ? undefined : `${w.concurrency}${w.prefetch ? `+${w.prefetch}` : ""}`,
          w.maxJobs,
          w.lastPollAt
            ? `${Math.max(0, Math.round((now - timestampDate(w.lastPollAt).getTime()) / 1000))} s ago`
            : undefined,
          Object.entries(w.verdictsLastMinute)
            .map(([reason, n]) => `${reason} ${n}`)
            .join(", "),
        ]),
      ),
    );
  },
});

/** `taskq worker …` verbs. */
export const workerCommands: readonly Command[] = [ls];
