// A flow drawn as a sequence: the requester's and the target's lanes (a spawn: parent and child) and the
// channel, each step an arrow into the lane whose session runs it (a spawn's report: back to the parent),
// coloured by its status.
import { useEffect, useState } from "preact/hooks";
import { follow, get, post } from "./api.js";
import { html, link, TraceId, when } from "./ui.js";
import { waterfallLink } from "./waterfall.js";

const LANE_X = [120, 380, 600];
const ROW = 54;
const TOP = 70;
const REFRESH_MS = 1500;

const STEP_NAMES = {
  run: "primary run",
  reply_turn: "reply turn",
  announce: "announce",
  deliver: "delivery",
  relay: "report to the parent's agent",
};

function arrows(flow) {
  const lanes = [flow.requesterKey, flow.targetKey];
  const other = (lane) => (lane === 0 ? 1 : 0);
  const steps = flow.steps || [];
  // A delivery that follows a relay step posts the parent's turn on the report.
  const relays = steps.filter((step, i) => step.step === "deliver" && steps.slice(0, i).some((s) => s.step === "relay"));
  return steps.map((step) => {
    if (step.step === "deliver") {
      const attempts = flow.delivery ? ` (${flow.delivery.attempts} attempt${flow.delivery.attempts === 1 ? "" : "s"})` : "";
      // An exchange's announce goes out on the target's channel; a spawn's report comes back to a parent
      // sub-agent, or (relayed) goes out as the top-level parent's agent put it.
      const relayed = relays.includes(step);
      const internal = flow.kind === "spawn" && !relayed;
      const [from, to] = relayed ? [0, 2] : internal ? [1, 0] : [1, 2];
      const label = internal ? "report" : "delivery";
      return { from, to, step, label: `${label}${attempts}`, status: step.status || flow.deliveryStatus };
    }
    const to = Math.max(0, lanes.indexOf(step.sessionKey));
    const from = step.step === "announce" ? to : other(to);
    const turn = step.turn != null ? ` ${step.turn}` : "";
    return { from, to, step, label: `${STEP_NAMES[step.step] || step.step}${turn}`, status: step.status };
  });
}

function Sequence({ flow }) {
  const rows = arrows(flow);
  const height = TOP + ROW * Math.max(rows.length, 1) + 30;
  const heads = flow.kind === "spawn" ? ["parent", "child", "channel"] : ["requester", "target", "channel"];
  const keys = [flow.requesterKey, flow.targetKey, flow.targetChannel || flow.requesterChannel || ""];
  return html`<svg class="sequence" viewBox=${`0 0 720 ${height}`} role="img"
      aria-label=${`Sequence of flow ${flow.flowId}: ${rows.map((row) => `${row.label} ${row.status || "pending"}`).join(", ")}`}>
    <defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
      <path d="M 0 0 L 10 5 L 0 10 z" fill="currentColor" /></marker></defs>
    ${LANE_X.map((x, i) => html`<g class="lane">
      <text x=${x} y="20" text-anchor="middle" class="lane-head">${heads[i]}</text>
      <text x=${x} y="38" text-anchor="middle" class="lane-key">${(keys[i] || "").slice(0, 34)}</text>
      <line x1=${x} y1="48" x2=${x} y2=${height - 10} /></g>`)}
    ${rows.map((row, i) => {
      const y = TOP + ROW * i;
      const x1 = LANE_X[row.from];
      const x2 = LANE_X[row.to];
      const self = row.from === row.to;
      const path = self ? `M ${x1} ${y} h 60 v 22 h -56` : `M ${x1} ${y} L ${x2 + (x2 > x1 ? -4 : 4)} ${y}`;
      return html`<g class=${`step status-${row.status || "pending"}`} data-step=${row.step.step}>
        <path d=${path} fill="none" marker-end="url(#head)" />
        <text x=${self ? x1 + 66 : (x1 + x2) / 2} y=${y - 8} text-anchor=${self ? "start" : "middle"}>${row.label}: ${row.status || "pending"}</text>
      </g>`;
    })}
  </svg>`;
}

export function FlowView({ flowId, traceUrl }) {
  const [flow, setFlow] = useState(null);
  const [error, setError] = useState("");
  useEffect(() => {
    let stopped = false;
    const load = () => get(`/v1/flows/${flowId}`).then(
      (found) => { if (!stopped) { setFlow(found); setError(""); } },
      (failure) => { if (!stopped) setError(failure.message); },
    );
    load();
    const timer = setInterval(load, REFRESH_MS);
    // The primary run's stream says at once when it ends, before the next refresh.
    const stop = follow(`/v1/runs/${flowId}/stream`, (type) => { if (type === "ended") load(); });
    return () => { stopped = true; clearInterval(timer); stop(); };
  }, [flowId]);
  const cancel = async () => {
    try { setFlow(await post(`/v1/flows/${flowId}/cancel`)); } catch (failure) { setError(failure.message); }
  };
  return html`<section aria-labelledby="flow-title">
    <h2 id="flow-title">${flow && flow.kind === "spawn" ? "Spawn" : "Exchange"} <code>${flowId}</code></h2>
    ${error && html`<p role="alert" class="error">${error}</p>`}
    ${flow && html`<p class="facts">
      <span class=${`status status-${flow.status}`}>${flow.status}</span>
      ${flow.stopReason && html` · stop reason <strong>${flow.stopReason}</strong>`}
      ${flow.deliveryStatus && html` · delivery ${flow.deliveryStatus}`}
      ${flow.error && html` · <span class="error">${flow.error}</span>`}
      · from <a href=${link("session", flow.requesterKey)}>${flow.requesterKey}</a>
      to <a href=${link("session", flow.targetKey)}>${flow.targetKey}</a> · started ${when(flow.createdAt)}
      · <a href=${waterfallLink("flow", flowId)}>its runs over time (waterfall)</a>
      ${flow.traceId && html` · <${TraceId} traceId=${flow.traceId} traceUrl=${traceUrl} />`}
      ${flow.status === "running" && html` <button type="button" class="danger" onClick=${cancel}>Cancel flow</button>`}
    </p>
    <${Sequence} flow=${flow} />
    <ol class="steps" aria-label="Steps">${(flow.steps || []).map((step) => html`<li data-step=${step.step}>
      ${STEP_NAMES[step.step] || step.step}${step.turn != null ? ` ${step.turn}` : ""}: ${step.status || "pending"}
      ${step.runId && html` <a href=${link("run", step.runId)}><code>${step.runId.slice(0, 8)}</code></a>`}
      ${step.reply && html` <q>${step.reply}</q>`}</li>`)}</ol>`}
  </section>`;
}
