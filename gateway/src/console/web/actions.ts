import { type Api, ApiError } from "./api.js";
import { announce, byId, h } from "./dom.js";
import { type DryRunJson, dryRunView } from "./dry-run-model.js";
import { count, period } from "./format.js";
import type { QueueRow } from "./queues-model.js";

/** One button of a dialog: what it does, and the message announced when it worked. */
interface DialogAction {
  label: string;
  run: () => Promise<string>;
  danger?: boolean;
}

/** A limit dialog's preview: the dry run of the value in the form (AdminService.DryRunLimit). */
type Preview = () => Promise<DryRunJson>;

const PREVIEW_LABEL = "Preview on the last hour";

/**
 * The operator's actions on one queue and its jobs. Each goes through the REST queue routes,
 * AdminService (redrive, breaker, a job's retry) or ProducerService (a job's cancel), which check the same role matrix
 * and write the same audit row as the CLI; `changed` refreshes the page after one worked.
 */
export class QueueActions {
  constructor(
    private readonly api: Api,
    private readonly changed: () => void,
  ) {}

  /** Pause or resume right away: both are undone by the other. */
  async togglePause(q: QueueRow): Promise<void> {
    const action = q.paused ? "resume" : "pause";
    try {
      await this.api.queue("POST", q.name, action);
      announce(q.paused ? `Resumed ${q.name}.` : `Paused ${q.name}: workers get PAUSED until you resume it.`);
      this.changed();
    } catch (err) {
      announce(explain(err), "error");
    }
  }

  /** Asks first, naming how many waiting jobs would go. */
  clear(q: QueueRow): void {
    const waiting = q.queued + q.scheduled;
    this.#dialog(
      `Clear ${q.name}?`,
      [
        h(
          "p",
          {},
          `This deletes the ${count(waiting)} waiting ${waiting === 1 ? "job" : "jobs"} of ${q.name} `,
          `(${count(q.queued)} queued, ${count(q.scheduled)} scheduled). Running jobs are left alone. `,
          "This cannot be undone.",
        ),
      ],
      [
        {
          label: `Delete ${count(waiting)} waiting ${waiting === 1 ? "job" : "jobs"}`,
          danger: true,
          run: async () => {
            const res = await this.api.queue<{ cleared: number }>("POST", q.name, "clear");
            return `Cleared ${q.name}: ${count(res.cleared)} waiting ${res.cleared === 1 ? "job" : "jobs"} deleted.`;
          },
        },
      ],
    );
  }

  /**
   * Sets or removes the concurrency cap (max_running). The dialog says what the cap is now; removing
   * it is its own button, as the CLI's `set-concurrency --off` is its own flag.
   */
  concurrency(q: QueueRow): void {
    const input = h("input", {
      id: "max-running",
      type: "number",
      min: 1,
      max: 1_000_000,
      step: 1,
      required: true,
      value: q.maxRunning ?? "",
    });
    const actions: DialogAction[] = [
      {
        label: "Set cap",
        run: async () => {
          const value = wholeNumber(input, "Max running jobs");
          await this.api.queue("PUT", q.name, "concurrency", { concurrency: value });
          return `${q.name}: at most ${count(value)} running jobs, fleet-wide.`;
        },
      },
    ];
    if (q.maxRunning !== null) {
      actions.push({
        label: "Remove cap",
        run: async () => {
          // `null` removes the cap (an unset max_running through AdminService does the same).
          await this.api.queue("PUT", q.name, "concurrency", { concurrency: null });
          return `${q.name}: running jobs are no longer capped.`;
        },
      });
    }
    this.#dialog(
      `Concurrency cap of ${q.name}`,
      [
        h(
          "p",
          {},
          `The most jobs of ${q.name} that may run at once, across every gateway (max_running). `,
          "Further claims wait until a running job finishes.",
        ),
        h(
          "p",
          { id: "concurrency-now" },
          q.maxRunning === null
            ? "Now: no cap."
            : `Now: at most ${count(q.maxRunning)} running. Remove cap lets any number run.`,
        ),
        h("label", { for: "max-running" }, "Max running jobs (1 to 1,000,000)"),
        input,
      ],
      actions,
      "Cancel",
      () =>
        this.api.admin<DryRunJson>("DryRunLimit", {
          maxRunning: { queue: q.name, maxRunning: wholeNumber(input, "Max running jobs") },
        }),
    );
  }

  /**
   * Turns the adaptive limit on (or moves its bounds) and off, as `taskq queue set-adaptive`. While it
   * is on, max_running is its value; the cap set before is kept aside and comes back with Turn off.
   */
  adaptive(q: QueueRow): void {
    const a = q.adaptive;
    const field = (id: string, max: number, value: number | undefined) =>
      h("input", { id, type: "number", min: 1, max, step: 1, required: true, value: value ?? "" });
    const min = field("adaptive-min", 1_000_000, a?.min ?? 2);
    const max = field("adaptive-max", 1_000_000, a?.max);
    const target = field("adaptive-target", 3_600_000, a?.targetLatencyMs);
    const form = () => {
      const bounds = { min: wholeNumber(min, "Lowest limit"), max: wholeNumber(max, "Highest limit") };
      if (bounds.max < bounds.min) throw new FormError("Highest limit must be at least the lowest limit.");
      return { ...bounds, targetLatencyMs: wholeNumber(target, "Target run time") };
    };
    const actions: DialogAction[] = [
      {
        label: a ? "Update adaptive limit" : "Turn on",
        run: async () => {
          const f = form();
          await this.api.queue("PUT", q.name, "adaptive", {
            min: f.min,
            max: f.max,
            target_latency_ms: f.targetLatencyMs,
          });
          return `${q.name}: max_running now moves between ${count(f.min)} and ${count(f.max)}, keeping the average run time under ${count(f.targetLatencyMs)} ms.`;
        },
      },
    ];
    if (a) {
      actions.push({
        label: "Turn off",
        run: async () => {
          await this.api.queue("PUT", q.name, "adaptive", { min: null });
          return `${q.name}: the adaptive limit is off; max_running is the cap set before it.`;
        },
      });
    }
    this.#dialog(
      `Adaptive limit of ${q.name}`,
      [
        h(
          "p",
          {},
          `Lets max_running of ${q.name} find its own level: it starts at the lowest limit and grows while `,
          "jobs run faster than the target and few fail; it backs off when they slow down or fail.",
        ),
        h(
          "p",
          { id: "adaptive-now" },
          a
            ? `Now: at most ${count(q.maxRunning ?? a.min)} running, moving between ${count(a.min)} and ${count(a.max)}; target ${count(a.targetLatencyMs)} ms.`
            : q.maxRunning === null
              ? "Now: off, and no fixed cap (none once it is turned off again)."
              : `Now: off; the fixed cap of ${count(q.maxRunning)} is kept aside while it is on and comes back when it is turned off.`,
        ),
        h("label", { for: "adaptive-min" }, "Lowest limit (1 to 1,000,000)"),
        min,
        h("label", { for: "adaptive-max" }, "Highest limit (lowest to 1,000,000)"),
        max,
        h("label", { for: "adaptive-target" }, "Target average run time, ms (1 to 3,600,000)"),
        target,
      ],
      actions,
      "Cancel",
      () => this.api.admin<DryRunJson>("DryRunLimit", { adaptive: { queue: q.name, ...form() } }),
    );
  }

  /** Sets or removes the throttle; a config-sourced one says where to change it. */
  throttle(q: QueueRow): void {
    const limit = h("input", {
      id: "throttle-limit",
      type: "number",
      min: 1,
      max: 100_000,
      step: 1,
      required: true,
      value: q.throttle?.limit ?? "",
    });
    const seconds = h("input", {
      id: "throttle-period",
      type: "number",
      min: 1,
      max: 86_400,
      step: "any",
      required: true,
      value: q.throttle ? q.throttle.periodMs / 1000 : 60,
    });
    const fromConfig = q.throttle?.source === "config";
    const form = () => {
      const l = wholeNumber(limit, "Claims");
      const periodMs = Math.round(Number(seconds.value) * 1000);
      if (!seconds.checkValidity() || !(periodMs >= 1000))
        throw new FormError("Per seconds must be from 1 to 86,400.");
      return { l, periodMs };
    };
    const actions: DialogAction[] = [
      {
        label: "Set throttle",
        run: async () => {
          const { l, periodMs } = form();
          await this.api.queue("PUT", q.name, "throttle", { limit: l, period_ms: periodMs });
          return `${q.name}: at most ${count(l)} claims per ${period(periodMs)}, cluster-wide.`;
        },
      },
    ];
    if (q.throttle) {
      actions.push({
        label: "Remove throttle",
        run: async () => {
          await this.api.queue("DELETE", q.name, "throttle");
          return `${q.name}: throttle removed.`;
        },
      });
    }
    this.#dialog(
      `Throttle of ${q.name}`,
      [
        fromConfig
          ? h(
              "p",
              { class: "notice", id: "config-throttle-notice" },
              "This throttle is defined in the gateway's config file (queues.",
              q.name,
              ".throttle): change it there. The API refuses to change it (409 / FAILED_PRECONDITION).",
            )
          : h("p", {}, "Claims of this queue allowed per period, across every gateway."),
        h("label", { for: "throttle-limit" }, "Claims (1 to 100,000)"),
        limit,
        h("label", { for: "throttle-period" }, "Per seconds (1 to 86,400)"),
        seconds,
      ],
      actions,
      "Cancel",
      // A config-sourced throttle is the config's: its dry run would be refused as the change is.
      fromConfig
        ? undefined
        : () => {
            const { l, periodMs } = form();
            return this.api.admin<DryRunJson>("DryRunLimit", {
              throttle: { queue: q.name, limit: l, periodMs },
            });
          },
    );
  }

  /** Forces the breaker open (planned downstream maintenance); asks first. */
  tripBreaker(queue: string): void {
    this.#dialog(
      `Trip the breaker of ${queue}?`,
      [
        h(
          "p",
          {},
          `Every worker gets BREAKER_OPEN for ${queue} at once. After the cooldown one probe job goes out; `,
          "its success closes the breaker again, or close it by hand.",
        ),
      ],
      [
        {
          label: "Trip breaker",
          danger: true,
          run: async () => {
            await this.api.admin("TripBreaker", { queue });
            return `Tripped the breaker of ${queue}: workers get BREAKER_OPEN until it closes.`;
          },
        },
      ],
    );
  }

  /** Forces the breaker closed, then slow start; asks first. */
  closeBreaker(queue: string): void {
    this.#dialog(
      `Close the breaker of ${queue}?`,
      [
        h(
          "p",
          {},
          `Workers may claim ${queue} again at once, through the slow-start ramp when one is set. `,
          "Close it when the downstream is back.",
        ),
      ],
      [
        {
          label: "Close breaker",
          run: async () => {
            await this.api.admin("CloseBreaker", { queue });
            return `Closed the breaker of ${queue}.`;
          },
        },
      ],
    );
  }

  /** Moves failed jobs back to waiting, spread over a smear; asks first, naming how many failed. */
  redrive(queue: string, failed: number): void {
    const limit = h("input", {
      id: "redrive-limit",
      type: "number",
      min: 1,
      max: 100_000,
      step: 1,
      required: true,
      value: Math.min(Math.max(failed, 1), 100_000),
    });
    const smear = h("input", {
      id: "redrive-smear",
      type: "number",
      min: 0,
      max: 86_400,
      step: 1,
      required: true,
      value: 60,
    });
    this.#dialog(
      `Redrive failed jobs of ${queue}?`,
      [
        h(
          "p",
          {},
          `${queue} has ${count(failed)} failed ${failed === 1 ? "job" : "jobs"}. Redrive moves them back to waiting, `,
          "oldest first, each with its attempt budget again; the smear spreads their start over that many ",
          "seconds so the downstream is not hit all at once (0: ready now).",
        ),
        h("label", { for: "redrive-limit" }, "Jobs to redrive (1 to 100,000)"),
        limit,
        h("label", { for: "redrive-smear" }, "Smear over seconds (0 to 86,400)"),
        smear,
      ],
      [
        {
          label: "Redrive failed jobs",
          run: async () => {
            const n = wholeNumber(limit, "Jobs to redrive");
            const seconds = wholeNumber(smear, "Smear over seconds");
            const res = await this.api.admin<{ redriven?: string }>("RedriveFailed", {
              queue,
              limit: n,
              smearSeconds: seconds,
            });
            const moved = Number(res.redriven ?? 0);
            return `Redrove ${count(moved)} failed ${moved === 1 ? "job" : "jobs"} of ${queue}${
              seconds ? `, spread over ${count(seconds)} s` : ", ready now"
            }.`;
          },
        },
      ],
    );
  }

  /**
   * Cancels one job (ProducerService.CancelJob, as `taskq job cancel`); asks first. A waiting job is
   * cancelled at once; a running one is told at its next heartbeat and ends when its worker stops.
   */
  cancelJob(job: { id: string; queue: string; state: string }): void {
    const reason = h("input", { id: "cancel-reason", type: "text", maxlength: 4096 });
    const running = job.state === "running";
    this.#dialog(
      `Cancel job ${job.id}?`,
      [
        h(
          "p",
          {},
          running
            ? `Job ${job.id} of ${job.queue} is running: its worker is told to stop at its next heartbeat, and the job is cancelled when the worker gives it up (or its lease expires).`
            : `Job ${job.id} of ${job.queue} is ${job.state}: it is cancelled at once and never runs. This cannot be undone.`,
        ),
        h("label", { for: "cancel-reason" }, "Reason (optional, kept as the job's last error)"),
        reason,
      ],
      [
        {
          label: "Cancel job",
          danger: true,
          run: async () => {
            await this.api.producer("CancelJob", { jobId: job.id, reason: reason.value });
            return running
              ? `Asked job ${job.id} to stop: it is cancelled when its worker gives it up.`
              : `Cancelled job ${job.id}.`;
          },
        },
      ],
      "Keep job",
    );
  }

  /**
   * Retries one failed job now (AdminService.RetryJob, as `taskq job retry`): right away, as a resume is,
   * since it destroys nothing: the job waits in its queue again, with its attempt budget again.
   */
  async retryJob(job: { id: string; queue: string }): Promise<void> {
    try {
      await this.api.admin("RetryJob", { jobId: job.id });
      announce(`Job ${job.id} is back in ${job.queue}, ready now, with its attempts granted again.`);
      this.changed();
    } catch (err) {
      announce(explain(err), "error");
    }
  }

  /**
   * A modal dialog: the body, the action buttons, and one that closes it (`dismiss`). With `preview`,
   * a button first shows what the value in the form would have done over the queue's last hour (a
   * dry run: nothing changes), so the operator sees it before confirming.
   */
  #dialog(title: string, body: Node[], actions: DialogAction[], dismiss = "Cancel", preview?: Preview): void {
    const dialog = byId<HTMLDialogElement>("dialog");
    const error = h("p", { class: "error", role: "alert" });
    const previewed = h("div", { id: "dry-run-preview", class: "dry-run", "aria-live": "polite" });
    const previewButton = preview ? h("button", { type: "button" }, PREVIEW_LABEL) : null;
    previewButton?.addEventListener("click", async () => {
      error.textContent = "";
      previewButton.disabled = true;
      previewed.replaceChildren(h("p", {}, "Replaying the queue's last hour…"));
      try {
        previewed.replaceChildren(...previewNodes(await (preview as Preview)()));
      } catch (err) {
        previewed.replaceChildren();
        error.textContent = explain(err);
      } finally {
        previewButton.disabled = false;
      }
    });
    const buttons = actions.map((a) =>
      h("button", { type: "button", class: a.danger ? "danger" : undefined }, a.label),
    );
    buttons.forEach((button, i) => {
      const action = actions[i] as DialogAction;
      button.addEventListener("click", async () => {
        error.textContent = "";
        for (const b of buttons) b.disabled = true;
        try {
          const message = await action.run();
          dialog.close();
          announce(message);
          this.changed();
        } catch (err) {
          error.textContent = explain(err);
        } finally {
          for (const b of buttons) b.disabled = false;
        }
      });
    });
    const cancel = h("button", { type: "button", onclick: () => dialog.close() }, dismiss);
    dialog.setAttribute("aria-labelledby", "dialog-title");
    dialog.replaceChildren(
      h("h2", { id: "dialog-title" }, title),
      ...body,
      ...(previewButton ? [h("div", { class: "buttons" }, previewButton), previewed] : []),
      error,
      h("div", { class: "buttons" }, ...buttons, cancel),
    );
    dialog.showModal();
  }
}

/** A dry run's report: the sentence, the two replays side by side, the caveats. */
function previewNodes(report: DryRunJson): Node[] {
  const v = dryRunView(report);
  return [
    h("p", { class: "dry-run-summary" }, v.summary),
    h(
      "table",
      {},
      h(
        "thead",
        {},
        h("tr", {}, h("th", {}, "Last hour"), h("th", {}, "Now"), h("th", {}, "With this change")),
      ),
      h(
        "tbody",
        {},
        ...v.rows.map((r) => h("tr", {}, h("th", {}, r[0]), h("td", {}, r[1]), h("td", {}, r[2]))),
      ),
    ),
    ...v.notes.map((n) => h("p", { class: "dry-run-note" }, n)),
    h("p", { class: "dry-run-note" }, "A dry run: nothing was changed."),
  ];
}

/** A value the form itself rejects, before asking the gateway. */
class FormError extends Error {}

function wholeNumber(input: HTMLInputElement, label: string): number {
  const value = Number(input.value);
  if (input.value === "" || !input.checkValidity() || !Number.isInteger(value))
    throw new FormError(`${label} must be a whole number from ${input.min} to ${input.max}.`);
  return value;
}

/** A refusal in words, with the status for those who know what 409 means. */
export function explain(err: unknown): string {
  if (err instanceof FormError) return err.message;
  if (!(err instanceof ApiError)) return `Failed: ${(err as Error).message}`;
  const what = err.status === 0 ? err.code : `${err.status} ${err.code}`;
  const why: Record<number, string> = {
    403: "your token's role may not do this.",
    409: "the gateway's config file owns this setting.",
  };
  return `Refused (${what}): ${err.message}${why[err.status] ? ` — ${why[err.status]}` : ""}`;
}
