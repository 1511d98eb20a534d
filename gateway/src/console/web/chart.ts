import { timeTicks, valueTicks } from "./axis.js";

const SVG = "http://www.w3.org/2000/svg";
const W = 400;
const H = 134;
/**
 * The plot's margins, in the viewBox' units: room for the value labels left, the unit above them, the
 * times and the time axis' title below.
 */
const LEFT = 34;
const RIGHT = 16;
const TOP = 16;
const BOTTOM = 30;

/** One line of a chart. */
export interface Series {
  label: string;
  /** CSS class of the line: its colour. */
  kind: string;
  /** [ms since the epoch, value], oldest first; null values leave a gap. */
  points: [number, number | null][];
}

/** A chart: its lines over the time window [from, to], what their values count, and which to headline. */
export interface ChartSpec {
  title: string;
  /** The values' unit, written above the value axis: "jobs/min", "ms". */
  unit: string;
  series: Series[];
  from: number;
  to: number;
  /**
   * The figures the caption shows: each line's value at `at`, named by `label` ("last full minute");
   * by default each line's last point, "latest".
   */
  headline?: { at: number | null; label: string };
}

/**
 * A small line chart as inline SVG (no library, no external asset): a time axis of round UTC clock
 * times below, titled so; a value axis from 0 to a round top above the largest value on the left, its
 * unit above it; grid lines. The caption and the accessible name state each line's headline figure.
 */
export function lineChart({ title, unit, series, from, to, headline }: ChartSpec): HTMLElement {
  const values = valueTicks(Math.max(1, ...series.flatMap((s) => s.points.map(([, v]) => v ?? 0))));
  const top = values.at(-1)?.at ?? 1;
  const x = (t: number) => LEFT + ((t - from) / Math.max(1, to - from)) * (W - LEFT - RIGHT);
  const y = (v: number) => H - BOTTOM - (v / top) * (H - TOP - BOTTOM);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img" });
  const figures = series.map((s) => {
    const point = headline ? s.points.find(([t]) => t === headline.at) : s.points.at(-1);
    return { s, value: point?.[1] ?? null };
  });
  const named = headline?.label ?? "latest";
  svg.setAttribute(
    "aria-label",
    `${title}, ${named}: ${figures.map(({ s, value }) => `${s.label} ${value ?? "none"} ${unit}`).join(", ")}`,
  );

  const valueAxis = svgEl("g", { class: "axis value-axis" });
  for (const tick of values) {
    valueAxis.append(
      svgEl("line", { class: "grid", x1: LEFT, x2: W - RIGHT, y1: y(tick.at), y2: y(tick.at) }),
      svgEl(
        "text",
        { x: LEFT - 4, y: y(tick.at), "text-anchor": "end", "dominant-baseline": "middle" },
        tick.label,
      ),
    );
  }
  const timeAxis = svgEl("g", { class: "axis time-axis" });
  for (const tick of timeTicks(from, to)) {
    timeAxis.append(
      svgEl("line", { class: "tick", x1: x(tick.at), x2: x(tick.at), y1: H - BOTTOM, y2: H - BOTTOM + 3 }),
      svgEl("text", { x: x(tick.at), y: H - BOTTOM + 14, "text-anchor": "middle" }, tick.label),
    );
  }
  const titles = svgEl("g", { class: "axis axis-titles" });
  titles.append(
    svgEl("text", { class: "value-unit", x: LEFT, y: TOP - 5 }, unit),
    svgEl(
      "text",
      { class: "time-title", x: (LEFT + W - RIGHT) / 2, y: H - 3, "text-anchor": "middle" },
      "time (UTC)",
    ),
  );
  svg.append(valueAxis, timeAxis, titles);

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
      if (lonely) svg.append(svgEl("circle", { cx: x(t), cy: y(v), r: 2.5, class: `dot ${s.kind}` }));
    });
    svg.append(svgEl("path", { d, class: `line ${s.kind}` }));
  }
  const figure = document.createElement("figure");
  const caption = document.createElement("figcaption");
  caption.append(`${title}, ${named}: `);
  for (const { s, value } of figures) {
    const key = document.createElement("span");
    key.className = `key ${s.kind}`;
    key.textContent = `${s.label} ${value ?? "—"}`;
    caption.append(key, " ");
  }
  figure.append(caption, svg);
  return figure;
}

function svgEl(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const el = document.createElementNS(SVG, tag) as SVGElement;
  for (const [key, value] of Object.entries(attrs))
    el.setAttribute(key, typeof value === "number" ? value.toFixed(1) : value);
  if (text !== undefined) el.textContent = text;
  return el;
}
