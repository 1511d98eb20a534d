import type { Api } from "./api.js";
import { h } from "./dom.js";
import { dateTime } from "./time.js";

/** Protobuf JSON of a BreakerEvent. */
interface BreakerEventJson {
  eventType?: string;
  jobId?: string;
  actor?: string;
  data?: Record<string, unknown>;
  createdAt?: string;
}

const SHOWN = 20;

/** What each transition is called on the page. */
const NAMES: Record<string, string> = {
  breaker_opened: "opened (tripped)",
  breaker_reopened: "re-opened",
  breaker_half_open: "half-open (probe out)",
  breaker_closed: "closed",
  "queue.trip_breaker": "tripped by hand",
  "queue.close_breaker": "closed by hand",
};

/**
 * The queue's last 20 breaker transitions, newest first: automatic ones name the job that caused them
 * (linked) and what triggered them; manual ones name who.
 */
export class BreakerEvents {
  readonly element: HTMLElement;
  readonly #tbody = h("tbody");

  constructor(
    private readonly api: Api,
    private readonly queue: string,
  ) {
    this.element = h(
      "section",
      { "aria-labelledby": "breaker-events-title" },
      h("h3", { id: "breaker-events-title" }, "Breaker events"),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "breaker-events" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ...["When", "Transition", "Job", "By", "Why"].map((t) => h("th", { scope: "col" }, t)),
            ),
          ),
          this.#tbody,
        ),
      ),
    );
  }

  async refresh(): Promise<void> {
    const res = await this.api.admin<{ events?: BreakerEventJson[] }>("ListBreakerEvents", {
      queue: this.queue,
      limit: SHOWN,
    });
    const events = res.events ?? [];
    this.#tbody.replaceChildren(
      ...(events.length
        ? events.map((e) =>
            h(
              "tr",
              {},
              h("td", {}, dateTime(e.createdAt)),
              h("td", {}, NAMES[e.eventType ?? ""] ?? e.eventType ?? ""),
              h(
                "td",
                {},
                e.jobId
                  ? h("a", { href: `#/queue/${encodeURIComponent(this.queue)}/job/${e.jobId}` }, e.jobId)
                  : "",
              ),
              h("td", {}, e.actor || (e.jobId ? "breaker" : "")),
              h("td", { class: "diff" }, why(e.data ?? {})),
            ),
          )
        : [h("tr", {}, h("td", { colspan: 5, class: "empty" }, "The breaker has not changed state."))]),
    );
  }
}

/** The trigger's figures in one line: "streak: failure_streak 5, failure_threshold 5". */
export function why(data: Record<string, unknown>): string {
  const { trigger, ...figures } = data;
  const rest = Object.entries(figures)
    .map(([k, v]) => `${k} ${typeof v === "object" ? JSON.stringify(v) : String(v)}`)
    .join(", ");
  return trigger ? `${String(trigger)}${rest ? `: ${rest}` : ""}` : rest;
}
