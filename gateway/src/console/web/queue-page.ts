import type { QueueActions } from "./actions.js";
import { type ActivityMinuteJson, activitySeries } from "./activity-model.js";
import { type AdaptiveChangeJson, adaptiveSteps } from "./adaptive-model.js";
import { type Api, ApiError } from "./api.js";
import { AuditLog } from "./audit-log.js";
import { BreakerEvents } from "./breaker-events.js";
import { lineChart, type Series } from "./chart.js";
import { h } from "./dom.js";
import { ExplainPanel } from "./explain-panel.js";
import { flowState } from "./flow-state.js";
import { count, words } from "./format.js";
import { JobsPanel } from "./jobs-panel.js";
import {
  type CountersJson,
  type HealthJson,
  mergeQueues,
  type QueueRow,
  type SettingsJson,
} from "./queues-model.js";
import { Samples } from "./samples.js";
import { timeOfDay } from "./time.js";

const POLL_MS = 2000;
const WINDOW_MS = 5 * 60_000;
const ACTIVITY_MINUTES = 15;
/** Per-minute figures change slowly and cost a scan of the window's jobs: read every 10 s, not 2. */
const ACTIVITY_EVERY_MS = 10_000;
/** Line colours for the throttle reasons, in order of their totals. */
const KINDS = ["c4", "c1", "c3", "c2"];

/**
 * One queue: its flow state (every gate, the breaker with its trip figures, ramp progress, aging) and
 * breaker events, per-minute charts of the last 15 minutes from the database (claims, throttled
 * verdicts by reason, settle outcomes and run time), levels sampled by this page's polls, the jobs by
 * state, the actions (redrive of failed jobs among them), and the audit log. Polled every 2 s.
 */
export class QueuePage {
  readonly element: HTMLElement;
  readonly #samples = new Samples(WINDOW_MS);
  readonly #audit: AuditLog;
  readonly #breakerEvents: BreakerEvents;
  readonly #jobs: JobsPanel;
  readonly #explain: ExplainPanel;
  readonly #activity = h("div", { class: "charts" });
  #minutes: { at: number; rows: ActivityMinuteJson[] } | null = null;
  /** The adaptive limit's changes (newest first) and its value now; null while it is off. */
  #adaptive: { changes: AdaptiveChangeJson[]; current: number | null } | null = null;
  readonly #verdict = h("span", { class: "verdict" });
  readonly #actions = h("div", { class: "actions" });
  readonly #flow = h("div");
  readonly #charts = h("div", { class: "charts" });
  readonly #throttled = h("p");
  readonly #updated = h("span", { class: "updated" });
  /** Everything below the title: hidden, and the actions removed, while the queue is not found. */
  readonly #content: HTMLElement;
  readonly #missing = h("p", { class: "error", id: "queue-missing", hidden: true });
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  constructor(
    private readonly api: Api,
    private readonly actions: QueueActions | null,
    private readonly name: string,
  ) {
    this.#audit = new AuditLog(api, name);
    this.#breakerEvents = new BreakerEvents(api, name);
    this.#jobs = new JobsPanel(api, name);
    this.#explain = new ExplainPanel(api, { queue: name });
    this.#content = h(
      "div",
      {},
      h(
        "div",
        { class: "columns" },
        h(
          "section",
          { "aria-labelledby": "flow-title" },
          h("h3", { id: "flow-title" }, "Flow state"),
          this.#flow,
          this.#breakerEvents.element,
        ),
        h(
          "section",
          { "aria-labelledby": "activity-title" },
          h("h3", { id: "activity-title" }, `Last ${ACTIVITY_MINUTES} minutes`),
          h(
            "p",
            { class: "hint" },
            "Per minute, across every gateway, read every 10 s. The figures beside each title are the last full minute; the line's last point is the current one, still filling.",
          ),
          this.#activity,
          h("h4", {}, "Throttled verdicts, last hour"),
          this.#throttled,
          h("h3", { id: "live-title" }, "Levels, last 5 minutes"),
          h("p", { class: "hint" }, "Sampled every 2 s while this page is open."),
          this.#charts,
        ),
      ),
      this.#explain.element,
      this.#jobs.element,
      this.#audit.element,
    );
    this.element = h(
      "section",
      { "aria-labelledby": "queue-title", class: "queue-page" },
      h("p", {}, h("a", { href: "#/" }, "← All queues")),
      h("div", { class: "bar" }, h("h2", { id: "queue-title" }, name), this.#verdict, this.#updated),
      actions ? this.#actions : null,
      this.#missing,
      this.#content,
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
      const only = { queue: this.name };
      const [flow, health, counters, activity, failed] = await Promise.all([
        // A queue never enqueued to (a typed address) is not found: shown as idle, every gate off.
        this.api
          .admin<{ queues?: SettingsJson[] }>("QueueFlow", only)
          .catch((err) =>
            err instanceof ApiError && err.code === "not_found" ? { queues: [] } : Promise.reject(err),
          ),
        this.api.admin<{ rows?: HealthJson[] }>("QueueHealth", only),
        this.api.admin<{ rows?: CountersJson[] }>("QueueCounters", only),
        this.#activityMinutes(),
        // Only the count, for an operator: it names how many a redrive would move.
        this.actions
          ? this.api.admin<{ total?: string }>("ListJobs", { ...only, state: "JOB_STATE_FAILED", limit: 1 })
          : { total: "0" },
        this.#audit.refresh(),
        this.#breakerEvents.refresh(),
        this.#jobs.refresh(),
        // A queue never seen has nothing to explain: the page says it is not found.
        this.#explain
          .refresh()
          .catch((err) =>
            err instanceof ApiError && err.code === "not_found" ? undefined : Promise.reject(err),
          ),
      ]);
      const now = Date.now();
      const settings = flow.queues?.[0] ?? null;
      // The adaptive limit's changes, for its chart: only while the queue has one.
      const changes = settings?.adaptive
        ? ((
            await this.api.admin<{ changes?: AdaptiveChangeJson[] }>("ListAdaptiveChanges", {
              ...only,
              limit: 500,
            })
          ).changes ?? [])
        : null;
      this.#adaptive = changes ? { changes, current: settings?.maxRunning ?? null } : null;
      const healthRow = health.rows?.[0] ?? null;
      const known = mergeQueues(settings ? [settings] : [], health.rows ?? [], counters.rows ?? [])[0];
      // None of the three knows the name: a queue with only old finished jobs still exists (idle);
      // otherwise it is not found, as the API's verbs say, and offers nothing to act on.
      const row = known ?? ((await this.#hasJobs()) ? idle(this.name) : null);
      this.#showFound(row !== null);
      if (!row) {
        this.#verdict.className = "verdict v-not_found";
        this.#verdict.textContent = "not found";
        this.#missing.textContent =
          `Queue ${this.name} not found: it has no settings and no jobs. ` +
          "Enqueuing a job or ensuring the queue (taskq queue ensure) creates it.";
        this.#updated.textContent = `checked ${timeOfDay(now)}`;
        this.#updated.classList.remove("stale");
      } else {
        this.#render(row, settings, healthRow, activity, Number(failed.total ?? 0), now);
      }
    } catch (err) {
      this.#updated.textContent = `not updated: ${(err as Error).message}`;
      this.#updated.classList.add("stale");
    }
    if (!this.#stopped) this.#timer = setTimeout(() => void this.refresh(), POLL_MS);
  }

  /** Whether the queue has any job at all, in any state: it then exists even with nothing to show. */
  async #hasJobs(): Promise<boolean> {
    const res = await this.api.admin<{ total?: string }>("ListJobs", { queue: this.name, limit: 1 });
    return Number(res.total ?? 0) > 0;
  }

  #showFound(found: boolean): void {
    this.#missing.hidden = found;
    this.#content.hidden = !found;
    if (!found) this.#actions.replaceChildren();
  }

  #render(
    row: QueueRow,
    settings: SettingsJson | null,
    healthRow: HealthJson | null,
    activity: readonly ActivityMinuteJson[],
    failed: number,
    now: number,
  ): void {
    this.#samples.add(row, now);
    this.#verdict.className = `verdict v-${row.verdict}`;
    this.#verdict.textContent = words(row.verdict);
    this.#flow.replaceChildren(flowState(settings, healthRow, now));
    this.#renderCharts(now);
    this.#renderActivity(activity, now);
    this.#throttled.textContent = row.throttled.length
      ? row.throttled.map(([reason, n]) => `${reason} ${count(n)}`).join(", ")
      : "none";
    if (this.actions) this.#renderActions(row, failed, this.actions);
    this.#updated.textContent = `updated ${timeOfDay(now)}`;
    this.#updated.classList.remove("stale");
  }

  #renderCharts(now: number): void {
    const s = this.#samples.all;
    const from = now - WINDOW_MS;
    this.#charts.replaceChildren(
      lineChart({
        title: "Waiting jobs",
        unit: "jobs",
        series: [{ label: "waiting", kind: "c1", points: s.map((x) => [x.at, x.queued]) }],
        from,
        to: now,
      }),
      lineChart({
        title: "Running vs max",
        unit: "jobs",
        series: [
          { label: "running", kind: "c1", points: s.map((x) => [x.at, x.running]) },
          { label: "max", kind: "c3", points: s.map((x) => [x.at, x.maxRunning]) },
        ],
        from,
        to: now,
      }),
      // From the limit's recorded changes, so it covers the window even when the page just opened.
      this.#adaptive
        ? lineChart({
            title: "Adaptive limit",
            unit: "jobs",
            series: [
              {
                label: "limit",
                kind: "c2",
                points: adaptiveSteps(this.#adaptive.changes, this.#adaptive.current, from, now),
              },
            ],
            from,
            to: now,
          })
        : "",
    );
  }

  /** QueueActivity's minutes, read again when the last read is 10 s old. */
  async #activityMinutes(): Promise<ActivityMinuteJson[]> {
    if (this.#minutes && Date.now() - this.#minutes.at < ACTIVITY_EVERY_MS) return this.#minutes.rows;
    const res = await this.api.admin<{ minutes?: ActivityMinuteJson[] }>("QueueActivity", {
      queue: this.name,
      minutes: ACTIVITY_MINUTES,
    });
    this.#minutes = { at: Date.now(), rows: res.minutes ?? [] };
    return this.#minutes.rows;
  }

  #renderActivity(minutes: readonly ActivityMinuteJson[], now: number): void {
    const a = activitySeries(minutes, now);
    const from = a.claimsPerSecond[0]?.[0] ?? now;
    const throttled: Series[] = a.throttled.map(([reason, points], i) => ({
      label: reason,
      kind: KINDS[i % KINDS.length] as string,
      points,
    }));
    // The current minute is still filling: each chart's figures are the last full one.
    const chart = (title: string, unit: string, series: Series[]) =>
      lineChart({
        title,
        unit,
        series,
        from,
        to: now,
        headline: { at: a.lastFullMinute, label: "last full minute" },
      });
    this.#activity.replaceChildren(
      chart("Claims per second", "claims/s", [{ label: "claims/s", kind: "c1", points: a.claimsPerSecond }]),
      chart(
        "Throttled verdicts per minute",
        "verdicts/min",
        // No reason at all: one flat line at zero, so the chart says "none declined" rather than nothing.
        throttled.length
          ? throttled
          : [{ label: "declined", kind: "c3", points: a.claimsPerSecond.map(([t]) => [t, 0]) }],
      ),
      chart("Settled per minute", "jobs/min", [
        { label: "succeeded", kind: "c2", points: a.succeeded },
        { label: "failed", kind: "c4", points: a.failed },
        { label: "cancelled", kind: "c3", points: a.cancelled },
      ]),
      chart("Run time", "ms", [
        { label: "avg", kind: "c1", points: a.avgRunMs },
        { label: "max", kind: "c3", points: a.maxRunMs },
      ]),
    );
  }

  #renderActions(q: QueueRow, failed: number, a: QueueActions): void {
    // Rebuilt each poll with the latest row, keeping focus on the same button.
    const focused = (document.activeElement as HTMLElement | null)?.dataset?.key;
    const button = (key: string, text: string, run: () => void, disabled = false) =>
      h("button", { type: "button", "data-key": key, onclick: run, disabled }, text);
    this.#actions.replaceChildren(
      q.paused
        ? button("resume", "Resume", () => void a.togglePause(q))
        : button("pause", "Pause", () => void a.togglePause(q)),
      button("clear", `Clear ${count(q.queued + q.scheduled)} waiting…`, () => a.clear(q)),
      button("concurrency", "Concurrency cap…", () => a.concurrency(q)),
      button("adaptive", "Adaptive limit…", () => a.adaptive(q)),
      button("throttle", "Throttle…", () => a.throttle(q)),
      button("redrive", `Redrive ${count(failed)} failed…`, () => a.redrive(q.name, failed), failed === 0),
      // With a breaker: trip it unless open, close it unless closed (both while half-open).
      ...(q.breaker && q.breaker.state !== "open"
        ? [button("trip-breaker", "Trip breaker…", () => a.tripBreaker(q.name))]
        : []),
      ...(q.breaker && q.breaker.state !== "closed"
        ? [button("close-breaker", "Close breaker…", () => a.closeBreaker(q.name))]
        : []),
    );
    if (focused) this.#actions.querySelector<HTMLElement>(`[data-key="${CSS.escape(focused)}"]`)?.focus();
  }
}

function idle(name: string): QueueRow {
  return mergeQueues([], [{ queue: name, verdict: "idle" }], [])[0] as QueueRow;
}
