import type { Api } from "./api.js";
import { h } from "./dom.js";

/** Protobuf JSON of a QueueAuditEntry. */
interface AuditEntryJson {
  id: string;
  eventType?: string;
  actor?: string;
  detail?: { before?: Record<string, unknown> | null; after?: Record<string, unknown> | null };
  createdAt?: string;
}

const PAGE = 20;

/**
 * A queue's operator audit log, newest first, a page at a time (ListQueueAudit's before_id). The
 * newest page reloads with the queue; an older page stays as it is until you go back.
 */
export class AuditLog {
  readonly element: HTMLElement;
  /** The before_id of each page shown so far: [undefined] is the newest page. */
  #cursors: (string | undefined)[] = [undefined];
  readonly #tbody = h("tbody");
  readonly #nav = h("nav", { class: "pager", "aria-label": "Pages of the audit log" });

  constructor(
    private readonly api: Api,
    private readonly queue: string,
  ) {
    this.element = h(
      "section",
      { "aria-labelledby": "audit-title" },
      h("h3", { id: "audit-title" }, "Audit log"),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "audit" },
          h(
            "thead",
            {},
            h("tr", {}, ...["When", "Actor", "Action", "Changed"].map((t) => h("th", { scope: "col" }, t))),
          ),
          this.#tbody,
        ),
      ),
      this.#nav,
    );
  }

  /** Reloads the page shown when it is the newest (older pages do not change). */
  async refresh(): Promise<void> {
    if (this.#cursors.length === 1) await this.#load();
  }

  async #load(): Promise<void> {
    const beforeId = this.#cursors.at(-1);
    const res = await this.api.admin<{ entries?: AuditEntryJson[] }>("ListQueueAudit", {
      queue: this.queue,
      limit: PAGE,
      ...(beforeId ? { beforeId } : {}),
    });
    const entries = res.entries ?? [];
    this.#tbody.replaceChildren(
      ...(entries.length
        ? entries.map((e) =>
            h(
              "tr",
              {},
              h("td", {}, e.createdAt ? new Date(e.createdAt).toLocaleString() : ""),
              h("td", {}, e.actor ?? ""),
              h("td", {}, e.eventType ?? ""),
              h("td", { class: "diff" }, changes(e.detail)),
            ),
          )
        : [h("tr", {}, h("td", { colspan: 4, class: "empty" }, "No operator actions on this queue."))]),
    );
    const older = entries.length === PAGE ? entries.at(-1)?.id : undefined;
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

/** The settings an action changed, as `key: before → after`. */
export function changes(detail: AuditEntryJson["detail"]): string {
  const before = detail?.before ?? {};
  const after = detail?.after ?? {};
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  const show = (v: unknown) => (v === undefined || v === null ? "—" : JSON.stringify(v));
  return keys
    .filter((k) => show(before[k]) !== show(after[k]))
    .map((k) => `${k}: ${show(before[k])} → ${show(after[k])}`)
    .join("; ");
}
