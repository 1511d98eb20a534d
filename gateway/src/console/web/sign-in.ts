import { Api, ApiError, type Me } from "./api.js";
import { h } from "./dom.js";

/**
 * The sign-in form: checks the token with WhoAmI before keeping it, so a typo is refused here rather
 * than on the first action. Calls `signedIn` with the token and who it is.
 */
export function signInForm(notice: string | null, signedIn: (token: string, me: Me) => void): HTMLElement {
  const input = h("input", {
    id: "token",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
  });
  const error = h("p", { class: "error", role: "alert" }, notice ?? "");
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    { class: "sign-in", "aria-labelledby": "sign-in-title" },
    h("h2", { id: "sign-in-title" }, "Sign in"),
    h(
      "p",
      {},
      "Paste a bearer token (",
      h("code", {}, "taskq token new"),
      " makes one). Operators may act; observers see everything and change nothing.",
    ),
    h("label", { for: "token" }, "Bearer token"),
    input,
    error,
    submit,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    if (!token) return;
    submit.disabled = true;
    error.textContent = "";
    try {
      signedIn(token, await new Api(token).whoAmI());
    } catch (err) {
      error.textContent =
        err instanceof ApiError && err.status === 401
          ? "The gateway does not know this token."
          : `Could not sign in: ${(err as Error).message}`;
    } finally {
      submit.disabled = false;
    }
  });
  queueMicrotask(() => input.focus());
  return form;
}
