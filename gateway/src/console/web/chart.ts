const SVG = "http://www.w3.org/2000/svg";
const W = 320;
const H = 80;

/** One line of a chart. */
export interface Series {
  label: string;
  /** CSS class of the line: its colour. */
  kind: string;
  /** [ms since the epoch, value], oldest first; null values leave a gap. */
  points: [number, number | null][];
}

/**
 * A small line chart over the time window [from, to], scaled to its largest value, as inline SVG (no
 * library, no external asset). Its accessible name states each line's latest value.
 */
export function lineChart(title: string, series: Series[], from: number, to: number): HTMLElement {
  const max = Math.max(1, ...series.flatMap((s) => s.points.map(([, v]) => v ?? 0)));
  const x = (t: number) => ((t - from) / Math.max(1, to - from)) * W;
  const y = (v: number) => H - 2 - (v / max) * (H - 4);
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("class", "chart");
  svg.setAttribute("role", "img");
  const latest = series.map((s) => `${s.label} ${s.points.at(-1)?.[1] ?? "none"}`).join(", ");
  svg.setAttribute("aria-label", `${title}: ${latest}`);
  for (const s of series) {
    let d = "";
    let pen = "M";
    s.points.forEach(([t, v], i) => {
      if (v === null) {
        pen = "M";
        return;
      }
      d += `${pen}${x(t).toFixed(1)},${y(v).toFixed(1)}`;
      pen = "L";
      // A value between gaps draws no line: a dot shows it (a per-minute run time, say).
      const lonely = (s.points[i - 1]?.[1] ?? null) === null && (s.points[i + 1]?.[1] ?? null) === null;
      if (lonely) {
        const dot = document.createElementNS(SVG, "circle");
        dot.setAttribute("cx", x(t).toFixed(1));
        dot.setAttribute("cy", y(v).toFixed(1));
        dot.setAttribute("r", "2.5");
        dot.setAttribute("class", `dot ${s.kind}`);
        svg.append(dot);
      }
    });
    const path = document.createElementNS(SVG, "path");
    path.setAttribute("d", d);
    path.setAttribute("class", `line ${s.kind}`);
    svg.append(path);
  }
  const figure = document.createElement("figure");
  const caption = document.createElement("figcaption");
  caption.append(title, " ");
  for (const s of series) {
    const key = document.createElement("span");
    key.className = `key ${s.kind}`;
    key.textContent = `${s.label} ${s.points.at(-1)?.[1] ?? "—"}`;
    caption.append(key, " ");
  }
  const top = document.createElement("small");
  top.textContent = `(max ${max})`;
  caption.append(top);
  figure.append(caption, svg);
  return figure;
}
