import type { QueueActions } from "./actions.js";
import type { Api } from "./api.js";
import { h } from "./dom.js";
import { age, count, period, words } from "./format.js";
import {
  type CountersJson,
  type HealthJson,
  mergeQueues,
  type QueueRow,
  type SettingsJson,
  selectPage,
} from "./queues-model.js";
import { timeOfDay } from "./time.js";

const POLL_MS = 2000;
const PAGE_SIZE = 50;

/**
 * The Queues page: every queue's health, levels, throughput, throttled verdicts, breaker and gates,
 * polled every 2 s, searchable and paged so 1,000 queues stay quick. `actions` is null for a token
 * that may only read: then there are no action buttons at all.
 */
export class QueuesPage {
  readonly element: HTMLElement;
  /** Null until the first answer: the table says it is loading (or why it could not) till then. */
  #rows: QueueRow[] | null = null;
  #search = "";
  #page = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  readonly #tbody = h("tbody");
  readonly #summary = h("p", { class: "summary", id: "queues-summary" });
  readonly #updated = h("span", { class: "updated" });
  readonly #pager = h("nav", { class: "pager", "aria-label": "Pages of queues" });
  readonly #columns: number;

  constructor(
    private readonly api: Api,
    private readonly actions: QueueActions | null,
  ) {
    const search = h("input", {
      id: "queue-search",
      type: "search",
      placeholder: "name or verdict",
      autocomplete: "off",
      oninput: (ev) => {
        this.#search = (ev.target as HTMLInputElement).value;
        this.#page = 0;
        this.#render();
      },
    });
    const headers = [
      "Queue",
      "Health",
      "Queued",
      "Scheduled",
      "Running / max",
      "Done / min",
      "Last hour",
      "Throttled (1 h)",
      "Breaker",
      "Throttle",
      "Rate",
    ];
    this.#columns = headers.length + (actions ? 1 : 0);
    this.element = h(
      "section",
      { "aria-labelledby": "queues-title" },
      h("div", { class: "bar" }, h("h2", { id: "queues-title" }, "Queues"), this.#updated),
      h("div", { class: "bar" }, h("label", { for: "queue-search" }, "Search queues"), search, this.#summary),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "queues", "aria-describedby": "queues-summary" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ...headers.map((t) => h("th", { scope: "col" }, t)),
              actions ? h("th", { scope: "col", class: "pinned" }, "Actions") : null,
            ),
          ),
          this.#tbody,
        ),
      ),
      this.#pager,
    );
    this.#render();
  }

  /** Loads now, then every 2 s until `stop()`. */
  start(): void {
    void this.refresh();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /** Reads every queue again (also right after an action) and re-renders. */
  async refresh(): Promise<void> {
    clearTimeout(this.#timer);
    // A tab in the background skips its polls: 1,000 queues are 250 kB of JSON every 2 s.
    if (document.hidden) {
      if (!this.#stopped) this.#timer = setTimeout(() => void this.refresh(), POLL_MS);
      return;
    }
    try {
      const [flow, health, counters] = await Promise.all([
        this.api.admin<{ queues?: SettingsJson[] }>("QueueFlow"),
        this.api.admin<{ rows?: HealthJson[] }>("QueueHealth"),
        this.api.admin<{ rows?: CountersJson[] }>("QueueCounters"),
      ]);
      this.#rows = mergeQueues(flow.queues ?? [], health.rows ?? [], counters.rows ?? []);
      this.#updated.textContent = `updated ${timeOfDay(Date.now())}`;
      this.#updated.classList.remove("stale");
      this.#render();
    } catch (err) {
      this.#updated.textContent = `not updated: ${(err as Error).message}`;
      this.#updated.classList.add("stale");
      if (!this.#rows)
        this.#message(
          `Could not load the queues: ${(err as Error).message}. Trying again every 2 s.`,
          "alert",
        );
    }
    if (!this.#stopped) this.#timer = setTimeout(() => void this.refresh(), POLL_MS);
  }

  /** One row across the table instead of queues: loading, or the first read's failure. */
  #message(text: string, role?: "alert"): void {
    this.#tbody.replaceChildren(
      h("tr", {}, h("td", { colspan: this.#columns, class: role ? "empty error" : "empty", role }, text)),
    );
  }

  #render(): void {
    if (!this.#rows) {
      this.#message("Loading…");
      return;
    }
    const page = selectPage(this.#rows, this.#search, this.#page, PAGE_SIZE);
    this.#page = page.page;
    this.#summary.textContent = this.#search
      ? `${count(page.matching)} of ${count(this.#rows.length)} queues match`
      : `${count(this.#rows.length)} queues`;
    // Keep focus where it was across a refresh: find the focused control's key, re-focus it after.
    const focused = (document.activeElement as HTMLElement | null)?.dataset?.key;
    this.#tbody.replaceChildren(
      ...(page.rows.length
        ? page.rows.map((q) => this.#row(q))
        : [h("tr", {}, h("td", { colspan: this.#columns, class: "empty" }, "No queues match."))]),
    );
    if (focused) this.#tbody.querySelector<HTMLElement>(`[data-key="${CSS.escape(focused)}"]`)?.focus();
    this.#renderPager(page.page, page.pages);
  }

  #row(q: QueueRow): HTMLTableRowElement {
    const verdict = h("span", { class: `verdict v-${q.verdict}` }, words(q.verdict));
    return h(
      "tr",
      { "data-queue": q.name },
      h("th", { scope: "row" }, h("a", { href: `#/queue/${encodeURIComponent(q.name)}` }, q.name)),
      h("td", {}, verdict),
      h(
        "td",
        { class: "num" },
        count(q.queued),
        q.oldestReadySeconds !== null
          ? h("small", { class: "nobreak" }, ` oldest ${age(q.oldestReadySeconds)}`)
          : null,
      ),
      h("td", { class: "num" }, count(q.scheduled)),
      h("td", { class: "num" }, `${count(q.running)} / ${q.maxRunning === null ? "∞" : count(q.maxRunning)}`),
      h("td", { class: "num" }, `${count(q.succeededLastMinute)} ok`, failed(q.failedLastMinute)),
      h("td", { class: "num" }, `${count(q.succeededLastHour)} ok`, failed(q.failedLastHour)),
      h("td", {}, ...throttled(q)),
      h("td", {}, breaker(q)),
      h("td", {}, throttle(q)),
      h("td", {}, q.rate ? `${count(q.rate.perMinute)}/min, burst ${count(q.rate.burst)}` : "—"),
      this.actions
        ? h("td", { class: "pinned" }, h("div", { class: "actions" }, ...this.#buttons(q, this.actions)))
        : null,
    );
  }

  #buttons(q: QueueRow, a: QueueActions): HTMLButtonElement[] {
    const button = (key: string, label: string, text: string, run: () => void) =>
      h(
        "button",
        { type: "button", "aria-label": `${label} ${q.name}`, "data-key": `${key}:${q.name}`, onclick: run },
        text,
      );
    return [
      q.paused
        ? button("resume", "Resume", "Resume", () => void a.togglePause(q))
        : button("pause", "Pause", "Pause", () => void a.togglePause(q)),
      button("clear", "Clear", "Clear…", () => a.clear(q)),
      button("concurrency", "Concurrency cap of", "Concurrency cap…", () => a.concurrency(q)),
      button("throttle", "Throttle of", "Throttle…", () => a.throttle(q)),
    ];
  }

  #renderPager(page: number, pages: number): void {
    const go = (to: number) => () => {
      this.#page = to;
      this.#render();
    };
    this.#pager.replaceChildren(
      h(
        "button",
        { type: "button", disabled: page === 0, "data-key": "prev", onclick: go(page - 1) },
        "Previous",
      ),
      h("span", { "aria-live": "polite" }, `Page ${page + 1} of ${pages}`),
      h(
        "button",
        { type: "button", disabled: page >= pages - 1, "data-key": "next", onclick: go(page + 1) },
        "Next",
      ),
    );
  }
}

function failed(n: number): Node | null {
  return n ? h("span", { class: "bad" }, ", ", h("span", { class: "nobreak" }, `${count(n)} failed`)) : null;
}

/** The throttled verdicts by reason, wrapping between reasons, never inside one. */
function throttled(q: QueueRow): (Node | string)[] {
  if (!q.throttled.length) return ["—"];
  return q.throttled.flatMap(([r, n], i) => [
    i ? ", " : "",
    h("span", { class: "nobreak" }, `${r} ${count(n)}`),
  ]);
}

function breaker(q: QueueRow): string {
  if (!q.breaker) return "—";
  const b = q.breaker;
  return b.state === "closed" ? `closed (${b.failureStreak}/${b.failureThreshold})` : words(b.state);
}

function throttle(q: QueueRow): Node | string {
  if (!q.throttle) return "—";
  const t = q.throttle;
  return h(
    "span",
    {
      title:
        t.source === "config"
          ? "Set in the gateway's config file: change it there (the API refuses, 409)."
          : "Set through the API (console, CLI or REST).",
    },
    `${count(t.limit)} / ${period(t.periodMs)} `,
    h("span", { class: `source s-${t.source}` }, t.source),
  );
}
