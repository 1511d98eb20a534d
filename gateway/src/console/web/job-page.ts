import type { QueueActions } from "./actions.js";
import { type Api, ApiError } from "./api.js";
import { ATTEMPT_COLUMNS, type AttemptJson, attemptCells, noAttempts } from "./attempts-model.js";
import { h } from "./dom.js";
import { ExplainPanel } from "./explain-panel.js";
import { count } from "./format.js";
import { errorLine, type JobJson, stateName } from "./jobs-model.js";
import { preview } from "./payload-preview.js";
import { dateTime, timeOfDay } from "./time.js";

/** Protobuf JSON of a JobEvent. */
interface JobEventJson {
  eventType?: string;
  data?: Record<string, unknown>;
  createdAt?: string;
}

const POLL_MS = 2000;

/** Job states a cancel still applies to: waiting, or running (its worker is told to stop). */
const CANCELLABLE = ["scheduled", "queued", "running"];

/**
 * One job: its state, times, last error, headers, a preview of its payload and result, each attempt
 * (the failed ones with their errors, in order) and its events (ProducerService.GetJob, which observers
 * may call, and AdminService.ListJobEvents). An operator gets a Cancel button while the job waits or
 * runs, and Retry now once it failed. Polled every 2 s, so a running job is seen to finish.
 */
export class JobPage {
  readonly element: HTMLElement;
  readonly #state = h("span", { class: "verdict" });
  readonly #facts = h("dl", { class: "flow-state job-facts" });
  readonly #payload = h("div");
  readonly #actions = h("div", { class: "actions" });
  readonly #attempts = h("tbody");
  readonly #events = h("tbody");
  readonly #updated = h("span", { class: "updated" });
  readonly #explain: ExplainPanel;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  constructor(
    private readonly api: Api,
    private readonly actions: QueueActions | null,
    private readonly queue: string,
    private readonly id: string,
  ) {
    this.#explain = new ExplainPanel(api, { jobId: id });
    this.element = h(
      "section",
      { "aria-labelledby": "job-title", class: "job-page" },
      h("p", {}, h("a", { href: `#/queue/${encodeURIComponent(queue)}` }, `← Queue ${queue}`)),
      h("div", { class: "bar" }, h("h2", { id: "job-title" }, `Job ${id}`), this.#state, this.#updated),
      actions ? this.#actions : null,
      h(
        "div",
        { class: "columns" },
        h(
          "section",
          { "aria-labelledby": "job-facts-title" },
          h("h3", { id: "job-facts-title" }, "Job"),
          this.#facts,
        ),
        h("section", { "aria-labelledby": "payload-title" }, this.#payload),
      ),
      this.#explain.element,
      h(
        "section",
        { "aria-labelledby": "job-attempts-title" },
        h("h3", { id: "job-attempts-title" }, "Attempts"),
        h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { class: "job-attempts" },
            h("thead", {}, h("tr", {}, ...ATTEMPT_COLUMNS.map((t) => h("th", { scope: "col" }, t)))),
            this.#attempts,
          ),
        ),
      ),
      h(
        "section",
        { "aria-labelledby": "job-events-title" },
        h("h3", { id: "job-events-title" }, "Events"),
        h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { class: "job-events" },
            h(
              "thead",
              {},
              h("tr", {}, ...["When", "Event", "Data"].map((t) => h("th", { scope: "col" }, t))),
            ),
            this.#events,
          ),
        ),
      ),
    );
  }

  start(): void {
    void this.refresh();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  async refresh(): Promise<void> {
    clearTimeout(this.#timer);
    // A tab in the background skips its polls, like the Queues page.
    if (document.hidden) {
      if (!this.#stopped) this.#timer = setTimeout(() => void this.refresh(), POLL_MS);
      return;
    }
    try {
      const [got, events] = await Promise.all([
        this.api.producer<{ job?: JobJson; attempts?: AttemptJson[] }>("GetJob", { jobId: this.id }),
        this.api.admin<{ events?: JobEventJson[] }>("ListJobEvents", { jobId: this.id }),
        this.#explain.refresh(),
      ]);
      const job = got.job ?? { id: this.id };
      this.#render(job, got.attempts ?? [], events.events ?? []);
      this.#updated.textContent = `updated ${timeOfDay(Date.now())}`;
      this.#updated.classList.remove("stale");
    } catch (err) {
      if (err instanceof ApiError && err.code === "not_found") {
        this.#facts.replaceChildren(
          h("p", { class: "error", role: "alert" }, `No job ${this.id}: ${err.message}`),
        );
        this.#actions.replaceChildren();
        return; // gone for good (deleted after its retention): stop polling
      }
      this.#updated.textContent = `not updated: ${(err as Error).message}`;
      this.#updated.classList.add("stale");
    }
    if (!this.#stopped) this.#timer = setTimeout(() => void this.refresh(), POLL_MS);
  }

  #render(job: JobJson, attempts: AttemptJson[], events: JobEventJson[]): void {
    const state = stateName(job.state);
    this.#state.className = `verdict job-${state}`;
    this.#state.textContent = state;
    const facts: [string, string][] = [
      ["Queue", job.queue ?? this.queue],
      ["State", `${state}${job.cancelRequested ? " (cancel requested)" : ""}`],
      ["Attempts", `${job.attempt ?? 0} of ${job.maxAttempts ?? 0}`],
      ["Priority", String(job.priority ?? 0)],
      ["Flow key", job.flowKey || "none"],
      ["Enqueued", dateTime(job.enqueuedAt)],
      ["Run at", dateTime(job.runAt)],
      ["Started", dateTime(job.startedAt) || "not yet"],
      ["Lease until", dateTime(job.leaseDeadline) || "—"],
      ["Finished", dateTime(job.finishedAt) || "not yet"],
      ["Expires", dateTime(job.expiresAt) || "never"],
      ["Worker", job.workerId || "—"],
      ["Outcome", job.outcome || "—"],
      ["Last error", errorLine(job.lastError) || "none"],
      [
        "Headers",
        Object.entries(job.headers ?? {})
          .map(([k, v]) => `${k}: ${v}`)
          .join("; ") || "none",
      ],
    ];
    this.#facts.replaceChildren(...facts.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
    this.#payload.replaceChildren(
      h("h3", { id: "payload-title" }, "Payload"),
      bytesBlock("payload", job.payload, job.contentType),
      h("h3", {}, "Result"),
      bytesBlock("result", job.result, ""),
    );
    this.#attempts.replaceChildren(
      ...(attempts.length
        ? attempts.map((a) =>
            h(
              "tr",
              { "data-attempt": a.attempt ?? 0 },
              // The error in monospace as the other error cells, wrapped: a message may be 16 KiB.
              ...attemptCells(a).map((text, i) =>
                h("td", { class: ATTEMPT_COLUMNS[i] === "Error" ? "diff" : undefined }, text),
              ),
            ),
          )
        : [h("tr", {}, h("td", { colspan: ATTEMPT_COLUMNS.length, class: "empty" }, noAttempts(job)))]),
    );
    if (this.actions) this.#renderActions(job, state, this.actions);
    this.#events.replaceChildren(
      ...(events.length
        ? events.map((e) =>
            h(
              "tr",
              {},
              h("td", {}, dateTime(e.createdAt)),
              h("td", {}, e.eventType ?? ""),
              h("td", { class: "diff" }, JSON.stringify(e.data ?? {})),
            ),
          )
        : [
            h(
              "tr",
              {},
              h(
                "td",
                { colspan: 3, class: "empty" },
                "No breaker events on this job: it opened or closed no breaker.",
              ),
            ),
          ]),
    );
  }

  /** Cancel while the job waits or runs and no cancel is pending; Retry now once it failed. */
  #renderActions(job: JobJson, state: string, a: QueueActions): void {
    const cancellable = CANCELLABLE.includes(state) && !job.cancelRequested;
    const focused = document.activeElement?.id;
    const queue = job.queue ?? this.queue;
    this.#actions.replaceChildren(
      ...(state === "failed"
        ? [
            h(
              "button",
              { type: "button", id: "retry-job", onclick: () => a.retryJob({ id: this.id, queue }) },
              "Retry now",
            ),
          ]
        : []),
      ...(cancellable
        ? [
            h(
              "button",
              {
                type: "button",
                id: "cancel-job",
                onclick: () => a.cancelJob({ id: this.id, queue, state }),
              },
              "Cancel job…",
            ),
          ]
        : []),
    );
    // Re-rendered at every poll: keep the focus on the button that had it.
    if (focused === "cancel-job" || focused === "retry-job") document.getElementById(focused)?.focus();
  }
}

/** A payload or result: its size and type, then text or a hex dump of its first 4 KiB. */
function bytesBlock(what: string, base64: string | undefined, contentType: string | undefined): HTMLElement {
  const p = preview(base64);
  if (p.kind === "empty") return h("p", { class: "hint" }, `No ${what}.`);
  const about = `${count(p.bytes)} bytes${contentType ? `, ${contentType}` : ""}${
    p.kind === "hex" ? ", binary (hex)" : ""
  }${p.truncated ? "; first 4 KiB shown" : ""}`;
  return h(
    "figure",
    {},
    h("figcaption", {}, about),
    h("pre", { class: "bytes", "aria-label": `${what} preview`, tabindex: 0 }, p.text),
  );
}
