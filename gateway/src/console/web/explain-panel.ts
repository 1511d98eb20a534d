import type { Api } from "./api.js";
import { h } from "./dom.js";
import { dateTime } from "./time.js";

/** Protobuf JSON of an ExplainReason. */
interface ReasonJson {
  gate?: string;
  verdict?: string;
  blocking?: boolean;
  summary?: string;
  nextAt?: string;
}

/** Protobuf JSON of an Explanation. */
export interface ExplanationJson {
  jobId?: string;
  reasons?: ReasonJson[];
  firstBlocking?: string;
  estimatedStart?: string;
  summary?: string;
}

/**
 * "Why is it not running?": AdminService.ExplainJob (or ExplainQueue) as a panel — the one-line summary
 * (estimated start, first blocking reason), then every reason in the order claims apply them, the
 * blocking ones marked. Reads only, so a page may refresh it with each of its polls.
 */
export class ExplainPanel {
  readonly element: HTMLElement;
  readonly #summary = h("p", { class: "explain-summary" });
  readonly #reasons = h("tbody");

  constructor(
    private readonly api: Api,
    private readonly target: { jobId: string } | { queue: string },
  ) {
    this.element = h(
      "section",
      { "aria-labelledby": "explain-title", class: "explain" },
      h(
        "h3",
        { id: "explain-title" },
        "jobId" in target ? "Why is it not running?" : "Why is this queue stuck?",
      ),
      this.#summary,
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "explain-reasons" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ...["Gate", "Verdict", "Next lets through", "Why"].map((t) => h("th", { scope: "col" }, t)),
            ),
          ),
          this.#reasons,
        ),
      ),
    );
  }

  /** Asks again and shows the answer; throws what the call throws (the page shows it as stale). */
  async refresh(): Promise<void> {
    const res = await this.api.admin<{ explanation?: ExplanationJson }>(
      "jobId" in this.target ? "ExplainJob" : "ExplainQueue",
      this.target,
    );
    this.render(res.explanation ?? {});
  }

  render(e: ExplanationJson): void {
    this.#summary.textContent = e.summary ?? "";
    const reasons = e.reasons ?? [];
    this.#reasons.replaceChildren(
      ...(reasons.length
        ? reasons.map((r) =>
            h(
              "tr",
              { class: r.blocking ? "blocking" : undefined, "data-gate": r.gate },
              h("td", {}, r.gate ?? ""),
              h("td", {}, (r.verdict ?? "").replace(/^THROTTLE_REASON_/, "")),
              h("td", {}, dateTime(r.nextAt) || "—"),
              h("td", {}, `${r.blocking ? "Blocking: " : ""}${r.summary ?? ""}`),
            ),
          )
        : [h("tr", {}, h("td", { colspan: 4, class: "empty" }, "Nothing to explain: see the summary."))]),
    );
  }
}
