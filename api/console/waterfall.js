// A tree's time: the runs of a flow (GET /v1/flows/{id}/waterfall) or of a session's sub-agent tree (GET
// /v1/sessions/{key}/waterfall) as a waterfall, one bar per run indented by its depth: queued (accepted ->
// started), running (started -> ended, or now), its model steps marked on it, and where it went on after a
// park or a wait. Drawn from clawbus's own run records: no tracing backend needed. When a run parked is not
// recorded, so parked time is not drawn.
import { useEffect, useState } from "preact/hooks";
import { get, sessionPath } from "./api.js";
import { html, link, TERMINAL, when } from "./ui.js";

const REFRESH_MS = 2000;
const TICKS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 1800000, 3600000];

// #/waterfall/flow/<id>, #/waterfall/session/<key> (the app's router hands over "flow/<id>").
export const waterfallLink = (of, id) => `#/waterfall/${of}/${encodeURIComponent(id)}`;

export function seconds(ms) {
  if (ms < 1000) return `${Math.max(Math.round(ms), 0)} ms`;
  const s = ms / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 120) return `${Math.round(s)} s`;
  const m = Math.floor(s / 60);
  return m < 120 ? `${m} min ${Math.round(s % 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

// The span the bars are drawn over: from the first run's acceptance to the last end (or now).
export function span(rows, now) {
  if (rows.length === 0) return { from: now, to: now + 1 };
  const from = Math.min(...rows.map((row) => row.createdAt));
  const to = Math.max(...rows.map((row) => row.endedAt ?? now));
  return { from, to: Math.max(to, from + 1) };
}

// Axis ticks: the smallest round step that gives at most eight of them.
export function ticks(from, to) {
  const step = TICKS.find((t) => (to - from) / t <= 8) || Math.ceil((to - from) / 8);
  const found = [];
  for (let at = 0; from + at <= to; at += step) found.push(at);
  return found;
}

function describe(row, now) {
  const parts = [`${row.kind} run ${row.runId}`];
  if (row.startedAt != null) parts.push(`queued ${seconds(row.startedAt - row.createdAt)}`);
  else parts.push(`queued for ${seconds(now - row.createdAt)} so far`);
  if (row.startedAt != null) parts.push(`${row.endedAt != null ? "ran" : "running for"} ${seconds((row.endedAt ?? now) - row.startedAt)}`);
  if (row.steps) parts.push(`${row.steps.length} model step${row.steps.length === 1 ? "" : "s"}`);
  if (row.resumedAt) parts.push(`went on ${row.resumedAt.length} time${row.resumedAt.length === 1 ? "" : "s"} after a park or a wait`);
  parts.push(row.status);
  return parts.join(", ");
}

function Bar({ row, from, to, now }) {
  const at = (ms) => `${(((ms - from) / (to - from)) * 100).toFixed(3)}%`;
  const wide = (a, b) => `${((Math.max(b - a, 0) / (to - from)) * 100).toFixed(3)}%`;
  const end = row.endedAt ?? now;
  const queuedUntil = row.startedAt ?? (TERMINAL.includes(row.status) ? end : now);
  return html`<div class="wf-track" role="img" aria-label=${describe(row, now)}>
    <span class="seg seg-queued" style=${{ left: at(row.createdAt), width: wide(row.createdAt, queuedUntil) }}></span>
    ${row.startedAt != null && html`<span class=${`seg seg-running run-${row.status}`}
      style=${{ left: at(row.startedAt), width: wide(row.startedAt, end) }}></span>`}
    ${(row.steps || []).map((step) => html`<span class="seg seg-step" data-step
      style=${{ left: at(step.startedAt), width: wide(step.startedAt, step.endedAt) }}></span>`)}
    ${(row.resumedAt || []).map((ms) => html`<span class="resume" data-resumed style=${{ left: at(ms) }}></span>`)}
  </div>`;
}

export function WaterfallView({ arg }) {
  const slash = arg.indexOf("/");
  const of = slash < 0 ? "" : arg.slice(0, slash);
  const id = slash < 0 ? arg : arg.slice(slash + 1);
  const path = of === "flow" ? `/v1/flows/${encodeURIComponent(id)}/waterfall` : `${sessionPath(id)}/waterfall`;
  const [found, setFound] = useState(null);
  const [error, setError] = useState("");
  useEffect(() => {
    let stopped = false;
    const load = () => get(path).then(
      (answer) => { if (!stopped) { setFound(answer); setError(""); } },
      (failure) => { if (!stopped) setError(failure.message); },
    );
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => { stopped = true; clearInterval(timer); };
  }, [path]);
  const title = of === "flow" ? html`Waterfall of flow <code>${id}</code>` : html`Waterfall of <code>${id}</code> and its sub-agents`;
  const back = of === "flow" ? html`<a href=${link("flow", id)}>the flow's sequence</a>` : html`<a href=${link("session", id)}>the session</a>`;
  const rows = found ? found.rows : [];
  const now = found ? found.now : Date.now();
  const { from, to } = span(rows, now);
  return html`<section aria-labelledby="waterfall-title">
    <h2 id="waterfall-title">${title}</h2>
    ${error && html`<p role="alert" class="error">${error}</p>`}
    <p class="facts">Back to ${back}${found && rows.length > 0 ? ` · ${rows.length} run${rows.length === 1 ? "" : "s"} over ${seconds(to - from)}, from ${when(from)}` : ""}</p>
    <ul class="wf-legend" aria-label="Legend">
      <li><span class="swatch seg-queued"></span> queued</li>
      <li><span class="swatch seg-running run-ok"></span> running</li>
      <li><span class="swatch seg-running run-error"></span> ended in error, timeout or abort</li>
      <li><span class="swatch seg-step"></span> model step</li>
      <li><span class="swatch swatch-resume"></span> went on after a park or a wait</li>
    </ul>
    <p class="hint">When a run parked is not recorded, so parked time is not drawn. A run's model steps show once it has ended.</p>
    ${found === null ? (error ? "" : html`<p>Loading…</p>`) : rows.length === 0 ? html`<p class="quiet">No runs.</p>` : html`<div class="waterfall">
      <div class="wf-row wf-axis" aria-hidden="true"><div class="wf-label">run · trace</div>
        <div class="wf-track">${ticks(from, to).map((ms) => html`<span class="tick" style=${{ left: `${((ms / (to - from)) * 100).toFixed(3)}%` }}>+${seconds(ms)}</span>`)}</div></div>
      <ol class="wf-rows" aria-label="Runs over time">${rows.map((row) => html`<li class="wf-row" key=${row.runId}
          data-run-id=${row.runId} data-depth=${row.depth} data-status=${row.status}>
        <div class="wf-label" style=${{ paddingLeft: `${row.depth * 1.2}rem` }}>
          <span class=${`status status-${row.status}`}>${row.kind}</span>
          <a href=${link("run", row.runId)} title=${row.runId}><code>${row.runId.slice(0, 8)}</code></a>
          ${row.traceId ? html`<span class="trace" title=${row.traceId}>trace <code>${row.traceId.slice(0, 12)}</code></span>` : html`<span class="trace quiet">no trace id</span>`}
          <span class="quiet wf-session" title=${row.sessionKey}>${row.sessionKey}</span>
        </div>
        <${Bar} row=${row} from=${from} to=${to} now=${now} />
      </li>`)}</ol>
    </div>`}
  </section>`;
}
