type Attrs = Record<string, string | number | boolean | undefined | ((ev: Event) => void)>;

/**
 * Builds an element: `on*` attributes become listeners, `false`/`undefined` attributes are left out,
 * strings among the children become text nodes (never HTML, so queue names cannot inject markup).
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Node | string | null | undefined | false)[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (typeof value === "function") el.addEventListener(key.slice(2).toLowerCase(), value);
    else if (value === true) el.setAttribute(key, "");
    else if (value !== false && value !== undefined) el.setAttribute(key, String(value));
  }
  for (const child of children)
    if (child !== null && child !== undefined && child !== false) el.append(child);
  return el;
}

/** The element with this id, which index.html must have. */
export function byId<T extends HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`index.html has no #${id}`);
  return el as T;
}

const ANNOUNCED_MS = 8000;
let fading: ReturnType<typeof setTimeout> | undefined;

/** Announces a result in the page's live region (screen readers read it; everyone sees it for 8 s). */
export function announce(message: string, kind: "ok" | "error" = "ok"): void {
  const status = byId("status");
  status.textContent = message;
  status.dataset.kind = kind;
  clearTimeout(fading);
  fading = setTimeout(() => {
    status.textContent = "";
  }, ANNOUNCED_MS);
}
