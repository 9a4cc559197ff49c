// The fleet: GET /v1/status every two seconds, as figures and small live charts (uPlot), each model's traffic
// against its limits, and each agent's spend today (GET /v1/budgets).
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { get } from "./api.js";
import { html, link, when } from "./ui.js";

const EVERY_MS = 2000;
const KEEP = 150; // five minutes of points
const COLOURS = ["#1f5fbf", "#b3261e", "#2e7d32", "#8a4b08", "#6a1b9a", "#00695c"];

const total = (counts) => Object.values(counts || {}).reduce((sum, n) => sum + n, 0);
// What is in use against its limit (the configured one, else the one learned from the provider).
const against = (used, configured, learned) => (configured || learned ? `${used} / ${configured || learned}` : `${used}`);
const dollars = (usd) => (usd == null ? "no limit" : `$${usd.toFixed(4)}`);
const tokens = (count) => (count == null ? "no limit" : `${count}`);

function ModelTraffic({ models }) {
  return html`<table class="models"><caption>Model traffic</caption>
    <thead><tr><th scope="col">Provider</th><th scope="col">Model</th><th scope="col">Requests (last min)</th>
      <th scope="col">Tokens (last min)</th><th scope="col">In flight</th><th scope="col">Waiting</th><th scope="col">Cooldown</th></tr></thead>
    <tbody>${models.map((row) => html`<tr>
      <td>${row.provider}</td><td>${row.modelId}</td>
      <td>${against(row.requestsInWindow, row.limits.requestsPerMinute, row.learned.requestsPerMinute)}</td>
      <td>${against(row.tokensInWindow, row.limits.tokensPerMinute, row.learned.tokensPerMinute)}</td>
      <td>${against(row.inFlight, row.limits.concurrent)}</td>
      <td>${row.waiting}</td>
      <td>${row.cooldownMs > 0 ? `${Math.ceil(row.cooldownMs / 1000)} s` : "none"}</td>
    </tr>`)}</tbody>
  </table>`;
}

// Runs whose lease is renewed but that made no progress for runs.stallSeconds (the reaper's watchdog): reported,
// not stopped; each links to its run, whose page has a cancel button.
function Stalled({ runs, count }) {
  return html`<table class="stalled" data-testid="stalled-runs"><caption>Stalled runs (${count}): lease renewed, no progress</caption>
    <thead><tr><th scope="col">Run</th><th scope="col">Session</th><th scope="col">No progress since</th>
      <th scope="col">Lease owner</th><th scope="col">Attempt</th></tr></thead>
    <tbody>${runs.map((run) => html`<tr>
      <td><a href=${link("run", run.runId)}><code>${run.runId.slice(0, 8)}</code></a></td>
      <td><a href=${link("session", run.sessionKey)}>${run.sessionKey}</a></td>
      <td>${when(run.since)}</td><td><code>${run.owner || "unknown"}</code></td><td>${run.attempt}</td>
    </tr>`)}</tbody>
  </table>`;
}

function Spend({ budgets }) {
  return html`<table class="spend"><caption>Spend today (${budgets.day}, UTC)</caption>
    <thead><tr><th scope="col">Agent</th><th scope="col">Spent</th><th scope="col">Daily budget</th><th scope="col">Left</th>
      <th scope="col">Tokens</th><th scope="col">Daily tokens</th><th scope="col">Tokens left</th><th scope="col">Set by</th></tr></thead>
    <tbody>${budgets.agents.map((row) => html`<tr>
      <td>${row.agentId}</td><td>${dollars(row.spentUsd)}</td><td>${dollars(row.dailyUsd)}</td><td>${dollars(row.leftUsd)}</td>
      <td>${row.spentTokens}</td><td>${tokens(row.dailyTokens)}</td><td>${tokens(row.leftTokens)}</td><td>${row.source}</td>
    </tr>`)}</tbody>
  </table>`;
}

function Chart({ title, series, data }) {
  const box = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    plot.current = new uPlot(
      {
        width: 320,
        height: 140,
        legend: { show: true },
        axes: [{}, { size: 40 }],
        series: [{}, ...series.map((label, i) => ({ label, stroke: COLOURS[i % COLOURS.length], width: 2 }))],
      },
      data,
      box.current,
    );
    return () => plot.current.destroy();
  }, []);
  useEffect(() => { plot.current && plot.current.setData(data); }, [data]);
  return html`<figure class="chart"><figcaption>${title}</figcaption><div ref=${box}></div></figure>`;
}

export function FleetView() {
  const [status, setStatus] = useState(null);
  const [budgets, setBudgets] = useState(null);
  const [error, setError] = useState("");
  const [points, setPoints] = useState({ t: [], queues: {}, workers: [], busy: [], rate: [], lastFinished: null, lastAt: null });
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      try {
        const [now, spent] = await Promise.all([get("/v1/status"), get("/v1/budgets")]);
        if (stopped) return;
        setStatus(now);
        setBudgets(spent);
        setError("");
        setPoints((p) => {
          const at = Date.now() / 1000;
          const finished = total(now.runsFinished);
          const rate = p.lastFinished == null ? 0 : Math.max(0, (finished - p.lastFinished) / (at - p.lastAt));
          const keep = (list, value) => [...list, value].slice(-KEEP);
          const queues = Object.fromEntries(
            Object.entries(now.queues).map(([name, depth]) => [name, keep(p.queues[name] || p.t.map(() => null), depth)]),
          );
          return {
            t: keep(p.t, at),
            queues,
            workers: keep(p.workers, now.workers.length),
            busy: keep(p.busy, now.busyLanes),
            rate: keep(p.rate, Math.round(rate * 10) / 10),
            lastFinished: finished,
            lastAt: at,
          };
        });
      } catch (failure) {
        if (!stopped) setError(failure.message);
      }
    };
    load();
    const timer = setInterval(load, EVERY_MS);
    return () => { stopped = true; clearInterval(timer); };
  }, []);
  const queueNames = Object.keys(points.queues).sort();
  return html`<section aria-labelledby="fleet-title"><h2 id="fleet-title">Fleet</h2>
    ${error && html`<p role="alert" class="error">${error}</p>`}
    ${status && html`<dl class="figures">
      <div><dt>Workers</dt><dd>${status.workers.length}</dd></div>
      <div><dt>Busy lanes</dt><dd>${status.busyLanes}</dd></div>
      <div><dt>Flows in progress</dt><dd>${status.flowsInProgress}</dd></div>
      <div><dt>Runs finished</dt><dd>${total(status.runsFinished)}</dd></div>
      <div><dt>Reaper ran</dt><dd>${when(status.reaperRanAt)}</dd></div>
      <div><dt>Stalled runs</dt><dd data-testid="runs-stalled">${status.runsStalled || 0}</dd></div>
    </dl>
    ${status.runsStalled > 0 && html`<${Stalled} runs=${status.stalledRuns || []} count=${status.runsStalled} />`}
    <div class="charts">
      <${Chart} title="Queue depths" series=${queueNames} data=${[points.t, ...queueNames.map((name) => points.queues[name] || [])]} />
      <${Chart} title="Runs finished per second" series=${["runs/s"]} data=${[points.t, points.rate]} />
      <${Chart} title="Workers and busy lanes" series=${["workers", "busy lanes"]} data=${[points.t, points.workers, points.busy]} />
    </div>
    <table class="queues"><caption>Queue depths</caption>
      <thead><tr><th scope="col">Queue</th><th scope="col">Waiting</th></tr></thead>
      <tbody>${Object.entries(status.queues).map(([name, depth]) => html`<tr><td>${name}</td><td>${depth}</td></tr>`)}</tbody>
    </table>
    ${status.models && status.models.length > 0 && html`<${ModelTraffic} models=${status.models} />`}
    ${budgets && html`<${Spend} budgets=${budgets} />`}
    <h3>Workers</h3><ul class="workers">${status.workers.map((name) => html`<li>${name}</li>`)}</ul>`}
  </section>`;
}
