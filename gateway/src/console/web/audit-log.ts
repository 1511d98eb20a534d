import type { Api } from "./api.js";
import { type AuditDetailJson, changeLine, changes } from "./audit-changes.js";
import { h } from "./dom.js";
import { dateTime } from "./time.js";

/** Protobuf JSON of a QueueAuditEntry. */
interface AuditEntryJson {
  id: string;
  eventType?: string;
  actor?: string;
  detail?: AuditDetailJson;
  createdAt?: string;
}

const PAGE = 20;
/** Changes shown in a row before the rest fold away under "N more". */
const LINES = 4;

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
              h("td", {}, dateTime(e.createdAt)),
              h("td", { title: e.actor ?? "" }, e.actor ?? ""),
              h("td", {}, e.eventType ?? ""),
              changedCell(e.detail),
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

/**
 * The Changed cell: one line per setting, each cut to the column's width with its full text on hover;
 * past four lines the rest fold into a "N more" disclosure, so a row stays a few lines tall.
 */
function changedCell(detail: AuditDetailJson | undefined): HTMLTableCellElement {
  const lines = changes(detail).map(changeLine);
  const shown = lines.length > LINES ? LINES - 1 : lines.length;
  const list = (some: string[]) => h("ul", {}, ...some.map((line) => h("li", { title: line }, line)));
  return h(
    "td",
    { class: "diff" },
    list(lines.slice(0, shown)),
    lines.length > shown
      ? h("details", {}, h("summary", {}, `${lines.length - shown} more`), list(lines.slice(shown)))
      : null,
  );
}
