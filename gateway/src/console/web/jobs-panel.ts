import type { Api } from "./api.js";
import { h } from "./dom.js";
import { count } from "./format.js";
import { errorLine, JOB_STATES, type JobJson, type JobStateName, wireState } from "./jobs-model.js";
import { dateTime } from "./time.js";

const PAGE = 20;
/** The state last picked per queue, so coming back from a job's page shows the same list. */
const picked = new Map<string, JobStateName>();

/**
 * The jobs of one queue in one state (the one last picked for the queue, else queued), newest first,
 * a page at a time (ListJobs' before_id), each linking to its job page. The newest page reloads with the queue; an older page stays until you go
 * back, like the audit log.
 */
export class JobsPanel {
  readonly element: HTMLElement;
  #state: JobStateName;
  #cursors: (string | undefined)[] = [undefined];
  readonly #states = h("div", { class: "states", role: "group", "aria-label": "Job state" });
  readonly #total = h("p", { class: "summary", id: "jobs-total" });
  readonly #tbody = h("tbody");
  readonly #nav = h("nav", { class: "pager", "aria-label": "Pages of jobs" });

  constructor(
    private readonly api: Api,
    private readonly queue: string,
  ) {
    this.#state = picked.get(queue) ?? "queued";
    this.element = h(
      "section",
      { "aria-labelledby": "jobs-title" },
      h("h3", { id: "jobs-title" }, "Jobs"),
      this.#states,
      this.#total,
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "jobs" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ...["Job", "Attempts", "Enqueued", "Run at", "Finished", "Outcome", "Last error"].map((t) =>
                h("th", { scope: "col" }, t),
              ),
            ),
          ),
          this.#tbody,
        ),
      ),
      this.#nav,
    );
    this.#renderStates();
  }

  /** Reloads the page shown when it is the newest. */
  async refresh(): Promise<void> {
    if (this.#cursors.length === 1) await this.#load();
  }

  #renderStates(): void {
    this.#states.replaceChildren(
      ...JOB_STATES.map((state) =>
        h(
          "button",
          {
            type: "button",
            "aria-pressed": String(state === this.#state),
            onclick: () => {
              this.#state = state;
              picked.set(this.queue, state);
              this.#cursors = [undefined];
              this.#renderStates();
              void this.#load();
            },
          },
          state,
        ),
      ),
    );
  }

  async #load(): Promise<void> {
    const state = this.#state;
    const beforeId = this.#cursors.at(-1);
    const res = await this.api.admin<{ jobs?: JobJson[]; total?: string }>("ListJobs", {
      queue: this.queue,
      state: wireState(state),
      limit: PAGE,
      ...(beforeId ? { beforeId } : {}),
    });
    if (state !== this.#state) return; // another state was picked meanwhile
    const jobs = res.jobs ?? [];
    const total = Number(res.total ?? 0);
    this.#total.textContent = `${count(total)} ${state} ${total === 1 ? "job" : "jobs"}`;
    const link = (id: string) =>
      h("a", { href: `#/queue/${encodeURIComponent(this.queue)}/job/${id}`, "aria-label": `Job ${id}` }, id);
    this.#tbody.replaceChildren(
      ...(jobs.length
        ? jobs.map((j) =>
            h(
              "tr",
              { "data-job": j.id },
              h("td", {}, link(j.id)),
              h("td", { class: "num" }, `${j.attempt ?? 0} / ${j.maxAttempts ?? 0}`),
              h("td", {}, dateTime(j.enqueuedAt)),
              h("td", {}, dateTime(j.runAt)),
              h("td", {}, dateTime(j.finishedAt)),
              h("td", {}, j.outcome ?? ""),
              h("td", { class: "diff" }, errorLine(j.lastError)),
            ),
          )
        : [h("tr", {}, h("td", { colspan: 7, class: "empty" }, `No ${state} jobs.`))]),
    );
    const older = jobs.length === PAGE ? jobs.at(-1)?.id : undefined;
    this.#nav.replaceChildren(
      h(
        "button",
        {
          type: "button",
          disabled: this.#cursors.length === 1,
          onclick: () => {
            this.#cursors = [undefined];
            void this.#load();
          },
        },
        "Newest",
      ),
      h(
        "button",
        {
          type: "button",
          disabled: !older,
          onclick: () => {
            this.#cursors.push(older);
            void this.#load();
          },
        },
        "Older",
      ),
    );
  }
}
