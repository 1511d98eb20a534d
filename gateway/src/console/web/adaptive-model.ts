/** Protobuf JSON of an AdaptiveChange (ListAdaptiveChanges): unset fields are absent. */
export interface AdaptiveChangeJson {
  /** RFC 3339. */
  at: string;
  limitBefore?: number;
  limitAfter?: number;
  reason?: string;
}

/**
 * The adaptive limit over [from, now] as a step line for lineChart: flat between changes, a vertical
 * step at each. `changes` come newest first, as the RPC answers; `current` is the limit now (the queue's
 * max_running). The line starts at `from` with the value in force then: the first change's before, when
 * it happened in the window, else the last change's after.
 */
export function adaptiveSteps(
  changes: readonly AdaptiveChangeJson[],
  current: number | null,
  from: number,
  now: number,
): [number, number | null][] {
  const oldestFirst = [...changes].reverse().map((c) => ({ ...c, at: Date.parse(c.at) }));
  const before = oldestFirst.filter((c) => c.at <= from);
  const inWindow = oldestFirst.filter((c) => c.at > from && c.at <= now);
  const start = before.at(-1)?.limitAfter ?? inWindow[0]?.limitBefore ?? current;
  const points: [number, number | null][] = [[from, start ?? null]];
  for (const c of inWindow) points.push([c.at, c.limitBefore ?? null], [c.at, c.limitAfter ?? null]);
  points.push([now, current]);
  return points;
}
