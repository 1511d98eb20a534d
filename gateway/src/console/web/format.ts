/** 1234567 → "1,234,567". */
export function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** A period in ms as the shortest exact unit: 60000 → "1 min", 1500 → "1.5 s". */
export function period(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}

/** Seconds waited, rounded to the unit that matters: 42 → "42 s", 3900 → "65 min". */
export function age(seconds: number): string {
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

/** A count and its noun, singular for exactly one: (1, "time") → "1 time", (3, "time") → "3 times". */
export function counted(n: number, one: string, many = `${one}s`): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}

/** "breaker_open" → "breaker open". */
export function words(snake: string): string {
  return snake.replaceAll("_", " ");
}
