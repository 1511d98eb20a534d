/** An audit row's detail: the queue's settings before and after the action (nested objects for some). */
export interface AuditDetailJson {
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
}

/** One setting an action changed, its values as shown ("—" for none). */
export interface Change {
  /** Nested settings are dotted: `breaker.state`, `throttle.limit`. */
  field: string;
  before: string;
  after: string;
}

/**
 * The settings an action changed, one per leaf, sorted by field: a nested object (the throttle, the
 * breaker) is compared field by field, so a trip lists the few fields it moved rather than two copies
 * of the whole breaker as JSON.
 */
export function changes(detail: AuditDetailJson | undefined): Change[] {
  const out: Change[] = [];
  compare("", detail?.before ?? null, detail?.after ?? null, out);
  return out;
}

/** `field: before → after`, one line of the audit log's Changed column. */
export function changeLine(c: Change): string {
  return `${c.field}: ${c.before} → ${c.after}`;
}

function compare(path: string, before: unknown, after: unknown, out: Change[]): void {
  if (isObject(before) || isObject(after)) {
    // A missing object (a throttle set where there was none) compares as empty: each field appears.
    const b = isObject(before) ? before : {};
    const a = isObject(after) ? after : {};
    for (const key of [...new Set([...Object.keys(b), ...Object.keys(a)])].sort())
      compare(path ? `${path}.${key}` : key, b[key], a[key], out);
    return;
  }
  const was = show(before);
  const now = show(after);
  if (was !== now) out.push({ field: path, before: was, after: now });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function show(v: unknown): string {
  if (v === undefined || v === null) return "—";
  if (typeof v === "string") return v === "" ? '""' : v;
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}
