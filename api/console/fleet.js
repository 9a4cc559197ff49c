// The fleet: GET /v1/status every two seconds, as figures and small live charts (uPlot).
import { useEffect, useRef, useState } from "preact/hooks";
import uPlot from "uplot";
import { get } from "./api.js";
import { html, when } from "./ui.js";

const EVERY_MS = 2000;
const KEEP = 150; // five minutes of points
const COLOURS = ["#1f5fbf", "#b3261e", "#2e7d32", "#8a4b08", "#6a1b9a", "#00695c"];

const total = (counts) => Object.values(counts || {}).reduce((sum, n) => sum + n, 0);

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
  const [error, setError] = useState("");
  const [points, setPoints] = useState({ t: [], queues: {}, workers: [], busy: [], rate: [], lastFinished: null, lastAt: null });
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      try {
        const now = await get("/v1/status");
        if (stopped) return;
        setStatus(now);
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
    </dl>
    <div class="charts">
      <${Chart} title="Queue depths" series=${queueNames} data=${[points.t, ...queueNames.map((name) => points.queues[name] || [])]} />
      <${Chart} title="Runs finished per second" series=${["runs/s"]} data=${[points.t, points.rate]} />
      <${Chart} title="Workers and busy lanes" series=${["workers", "busy lanes"]} data=${[points.t, points.workers, points.busy]} />
    </div>
    <table class="queues"><caption>Queue depths</caption>
      <thead><tr><th scope="col">Queue</th><th scope="col">Waiting</th></tr></thead>
      <tbody>${Object.entries(status.queues).map(([name, depth]) => html`<tr><td>${name}</td><td>${depth}</td></tr>`)}</tbody>
    </table>
    <h3>Workers</h3><ul class="workers">${status.workers.map((name) => html`<li>${name}</li>`)}</ul>`}
  </section>`;
}
