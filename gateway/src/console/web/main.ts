import { QueueActions } from "./actions.js";
import { Api, ApiError, type Me } from "./api.js";
import { byId, h } from "./dom.js";
import { findJobForm } from "./find-job.js";
import { JobPage } from "./job-page.js";
import { QueuePage } from "./queue-page.js";
import { QueuesPage } from "./queues-page.js";
import { session } from "./session.js";
import { signInForm } from "./sign-in.js";
import { WorkersPage } from "./workers-page.js";

/** Roles that may read the queues; of those only an operator may act. */
const READERS = ["operator", "observer"];

/**
 * The page shown, each polling: the Queues page (`#/`), one queue's (`#/queue/<name>`), one job's
 * (`#/queue/<name>/job/<id>`) or the connected workers (`#/workers`).
 */
let page: QueuesPage | QueuePage | JobPage | WorkersPage | null = null;
/** How to show a page for the signed-in caller; null while signed out. */
let show: (() => void) | null = null;

window.addEventListener("hashchange", () => show?.());

/** Shows the sign-in form, forgetting any token; `notice` says why (a refused token). */
function showSignIn(notice: string | null): void {
  page?.stop();
  page = null;
  show = null;
  session.signOut();
  byId("who").replaceChildren();
  byId("find").replaceChildren();
  byId("main").replaceChildren(
    signInForm(notice, (token, me) => {
      session.signIn(token);
      showConsole(token, me);
    }),
  );
}

/** The console for the caller `me`: what it may read, and actions only when it may act. */
function showConsole(token: string | null, me: Me): void {
  const api = new Api(token, () => showSignIn("The gateway refused your token (401): sign in again."));
  const canAct = me.open || me.roles.includes("operator");
  byId("who").replaceChildren(
    me.open
      ? h("span", { class: "open", role: "note" }, "Open gateway: no tokens are configured, anyone may act")
      : h(
          "span",
          {},
          "Signed in as ",
          h("strong", { id: "actor" }, me.actor),
          ` (${me.roles.join(", ")})`,
          canAct ? "" : " — read only",
        ),
    me.open ? "" : h("button", { type: "button", onclick: () => showSignIn(null) }, "Sign out"),
  );
  if (!me.open && !me.roles.some((r) => READERS.includes(r))) {
    byId("main").replaceChildren(
      h(
        "p",
        { class: "error", role: "alert" },
        `Token ${me.actor} (${me.roles.join(", ")}) may not read queues: sign in with an operator or observer token.`,
      ),
    );
    return;
  }
  byId("find").replaceChildren(findJobForm(api));
  const actions = canAct ? new QueueActions(api, () => void page?.refresh()) : null;
  show = () => {
    page?.stop();
    const [, queue, job] = /^#\/queue\/([^/]+)(?:\/job\/(\d+))?$/.exec(location.hash) ?? [];
    page =
      location.hash === "#/workers"
        ? new WorkersPage(api)
        : !queue
          ? new QueuesPage(api, actions)
          : job
            ? new JobPage(api, actions, decodeURIComponent(queue), job)
            : new QueuePage(api, actions, decodeURIComponent(queue));
    byId("main").replaceChildren(page.element);
    page.start();
  };
  show();
}

/** On load: a stored token, or none on an open gateway, goes straight in; otherwise sign in. */
async function boot(): Promise<void> {
  const token = session.token();
  try {
    showConsole(token, await new Api(token).whoAmI());
  } catch (err) {
    if (err instanceof ApiError && err.status === 401)
      showSignIn(token ? "The gateway no longer accepts your token: sign in again." : null);
    else byId("main").replaceChildren(h("p", { class: "error", role: "alert" }, (err as Error).message));
  }
}

void boot();
