import { explain } from "./actions.js";
import { type Api, ApiError } from "./api.js";
import { h } from "./dom.js";
import type { JobJson } from "./jobs-model.js";

/** A job id as the API takes it: a whole number from 1 (int64). */
const JOB_ID = /^[1-9]\d{0,18}$/;

/**
 * The header's "find a job by id" box. GetJob (which observers may call too) says which queue the job
 * is in, and its page opens; an id that is not a job's is said so beside the box.
 */
export function findJobForm(api: Api): HTMLFormElement {
  const input = h("input", {
    id: "find-job",
    type: "text",
    inputmode: "numeric",
    autocomplete: "off",
    placeholder: "job id",
    size: 12,
  });
  // Read out when it changes; not role=status, which is the page's one live region (#status).
  const result = h("span", { class: "find-result", id: "find-result", "aria-live": "polite" });
  const say = (message: string) => {
    result.textContent = message;
  };
  const find = async () => {
    const id = input.value.trim();
    say("");
    if (!JOB_ID.test(id)) {
      say("A job id is a whole number, e.g. 1234.");
      return;
    }
    try {
      const got = await api.producer<{ job?: JobJson }>("GetJob", { jobId: id });
      input.value = "";
      location.hash = `#/queue/${encodeURIComponent(got.job?.queue ?? "")}/job/${id}`;
    } catch (err) {
      say(
        err instanceof ApiError && err.code === "not_found"
          ? `No job ${id}: never enqueued, or deleted after its retention.`
          : explain(err),
      );
    }
  };
  return h(
    "form",
    {
      class: "find",
      role: "search",
      "aria-label": "Find a job",
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        void find();
      },
    },
    h("label", { for: "find-job" }, "Find job"),
    input,
    h("button", { type: "submit" }, "Open"),
    result,
  );
}
