/** A binary min-heap under `before` (true when a comes out first): the replay's event queues. */
export class Heap<T> {
  readonly #items: T[] = [];

  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    const a = this.#items;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(a[i] as T, a[parent] as T)) break;
      [a[i], a[parent]] = [a[parent] as T, a[i] as T];
      i = parent;
    }
  }

  pop(): T | undefined {
    const a = this.#items;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || last === undefined) return top;
    a[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let best = i;
      if (l < a.length && this.before(a[l] as T, a[best] as T)) best = l;
      if (r < a.length && this.before(a[r] as T, a[best] as T)) best = r;
      if (best === i) return top;
      [a[i], a[best]] = [a[best] as T, a[i] as T];
      i = best;
    }
  }
}
