import { type Api, ApiError } from "./api.js";
import { h } from "./dom.js";
import { dateTime, timeOfDay } from "./time.js";

/** Protobuf JSON of a ConnectedWorker. */
interface WorkerJson {
  workerId?: string;
  gatewayId?: string;
  queues?: string[];
  held?: number;
  maxJobs?: number;
  concurrency?: number;
  prefetch?: number;
  lastPollAt?: string;
  verdictsLastMinute?: Record<string, string>;
}

const POLL_MS = 5000;

/**
 * Every worker connected to any gateway (AdminService.ListWorkers): its gateway, queues, jobs held of
 * its slots, last poll and the verdicts it was given in the last minute. Polled every 5 s; the records
 * behind it are written by each gateway every few seconds.
 */
export class WorkersPage {
  readonly element: HTMLElement;
  readonly #rows = h("tbody");
  readonly #updated = h("span", { class: "updated" });
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  constructor(private readonly api: Api) {
    this.element = h(
      "section",
      { "aria-labelledby": "workers-title" },
      h("p", {}, h("a", { href: "#/" }, "← Queues")),
      h("div", { class: "bar" }, h("h2", { id: "workers-title" }, "Workers"), this.#updated),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "workers" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ...[
                "Worker",
                "Gateway",
                "Queues",
                "Jobs held",
                "Asking",
                "Last poll",
                "Verdicts (last minute)",
              ].map((t) => h("th", { scope: "col" }, t)),
            ),
          ),
          this.#rows,
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
    if (!document.hidden) {
      try {
        const res = await this.api.admin<{ workers?: WorkerJson[] }>("ListWorkers", {});
        this.#render(res.workers ?? []);
        this.#updated.textContent = `updated ${timeOfDay(Date.now())}`;
        this.#updated.classList.remove("stale");
      } catch (err) {
        this.#updated.textContent = `not updated: ${err instanceof ApiError ? err.message : String(err)}`;
        this.#updated.classList.add("stale");
      }
    }
    if (!this.#stopped) this.#timer = setTimeout(() => void this.refresh(), POLL_MS);
  }

  #render(workers: WorkerJson[]): void {
    this.#rows.replaceChildren(
      ...(workers.length
        ? workers.map((w) =>
            h(
              "tr",
              { "data-worker": w.workerId ?? "" },
              h("td", {}, w.workerId || "(no id)"),
              h("td", {}, w.gatewayId ?? ""),
              h(
                "td",
                {},
                ...(w.queues ?? []).flatMap((q, i) => [
                  i ? ", " : "",
                  h("a", { href: `#/queue/${encodeURIComponent(q)}` }, q),
                ]),
              ),
              h(
                "td",
                {},
                `${w.held ?? 0}${w.concurrency ? ` of ${w.concurrency}${w.prefetch ? ` + ${w.prefetch} prefetch` : ""}` : ""}`,
              ),
              h("td", {}, String(w.maxJobs ?? 0)),
              h("td", {}, dateTime(w.lastPollAt)),
              h(
                "td",
                {},
                Object.entries(w.verdictsLastMinute ?? {})
                  .map(([reason, n]) => `${reason} ${n}`)
                  .join(", ") || "none",
              ),
            ),
          )
        : [h("tr", {}, h("td", { colspan: 7, class: "empty" }, "No worker is connected to any gateway."))]),
    );
  }
}
