// A session's spawn tree: the sub-agents it spawned and theirs, as the session itself sees them (GET
// /v1/sessions/{key}/subagents?recursive=true), each with its status, role and depth, runtime and tokens,
// and a kill button (asking first) for those still under way; the session's own card on top (GET
// /v1/sessions/{key}/status: waiting for its children or not).
import { useEffect, useState } from "preact/hooks";
import { get, post, sessionPath } from "./api.js";
import { html, link } from "./ui.js";
import { waterfallLink } from "./waterfall.js";

const REFRESH_MS = 3000;
const ENDED = ["done", "error", "timeout", "killed"];

// The API lists parents before children but level by level; each row goes under the row that spawned it
// (a row whose spawner is not listed, a direct child of the session, starts the tree), siblings oldest first
// as the API has them.
export function nest(rows) {
  const byKey = new Map(rows.map((row) => [row.key, { row, children: [] }]));
  const roots = [];
  for (const node of byKey.values()) {
    const parent = byKey.get(node.row.spawnedBy);
    (parent ? parent.children : roots).push(node);
  }
  return roots;
}

// As the reports' Stats say it (shared/domain/subagents.py: duration, count).
export function duration(ms) {
  const seconds = Math.floor(Math.max(ms, 0) / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${seconds % 60}s`;
  return `${Math.floor(minutes / 60)}h${minutes % 60}m`;
}

const tokens = (n) => (n == null ? "no tokens yet" : `${n < 1000 ? n : `${(n / 1000).toFixed(1)}k`} tokens`);
const stateOf = (row) => (row.status === "waiting" && row.waitingFor != null ? `waiting for ${row.waitingFor} children` : row.status);
// A label if it has one; else its key, the sub-agent's UUID cut to its first block (the link's title and
// its address keep the whole key).
const nameOf = (row) => row.label || row.key.replace(/^(agent:[^:]+:subagent:[0-9a-f]{8})-[0-9a-f-]+$/, "$1…");
const below = (node) => node.children.reduce((n, child) => n + 1 + below(child), 0);

function Node({ node, confirming, onAsk, onKill, onKeep }) {
  const { row } = node;
  const under = below(node);
  return html`<li class="spawn" data-key=${row.key} data-depth=${row.depth} data-status=${row.status}>
    <div class="spawn-row">
      <a href=${link("session", row.key)} title=${row.key}>${nameOf(row)}</a>
      <span class=${`status status-${row.status}`}>${stateOf(row)}</span>
      <span class="quiet">${row.role ? `${row.role} · ` : ""}depth ${row.depth} · ${duration(row.runtimeMs)} · ${tokens(row.totalTokens)}</span>
      ${!ENDED.includes(row.status) && confirming !== row.key &&
        html`<button type="button" class="danger" onClick=${() => onAsk(row.key)} aria-label=${`Kill ${nameOf(row)}`}>Kill</button>`}
    </div>
    ${confirming === row.key && html`<div class="confirm" role="group" aria-label=${`Confirm killing ${nameOf(row)}`}>
      <p>Kill ${nameOf(row)}${under ? ` and the ${under} sub-agent${under === 1 ? "" : "s"} under it` : ""}? Each reports once, Status: killed.</p>
      <button type="button" class="danger" onClick=${() => onKill(row.key)}>Yes, kill</button>
      <button type="button" onClick=${onKeep}>Keep it running</button>
    </div>`}
    ${node.children.length > 0 && html`<ul>${node.children.map((child) => html`<${Node} key=${child.row.key} node=${child}
      confirming=${confirming} onAsk=${onAsk} onKill=${onKill} onKeep=${onKeep} />`)}</ul>`}
  </li>`;
}

export function SpawnTree({ sessionKey }) {
  const [rows, setRows] = useState(null);
  const [card, setCard] = useState(null);
  // Reading the tree failed: the session view says why already (its own alert), so this one is quiet.
  const [unreadable, setUnreadable] = useState("");
  const [error, setError] = useState("");
  const [version, setVersion] = useState(0);
  const [confirming, setConfirming] = useState(null);
  const [outcome, setOutcome] = useState("");
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      try {
        const [listed, status] = await Promise.all([
          get(`${sessionPath(sessionKey)}/subagents?recursive=true`),
          // A session that spawned before it ever ran has sub-agents and no card (404): the tree still shows.
          get(`${sessionPath(sessionKey)}/status`).catch((failure) => (failure.status === 404 ? null : Promise.reject(failure))),
        ]);
        if (!stopped) { setRows(listed.subagents); setCard(status); setUnreadable(""); }
      } catch (failure) {
        if (!stopped) setUnreadable(failure.message);
      }
    };
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => { stopped = true; clearInterval(timer); };
  }, [sessionKey, version]);
  const kill = async (target) => {
    setConfirming(null);
    setOutcome("");
    setError("");
    try {
      const answer = await post(`${sessionPath(sessionKey)}/subagents/${encodeURIComponent(target)}/kill`);
      const n = answer.killed.length;
      setOutcome(n ? `Killed ${n} session${n === 1 ? "" : "s"}.` : "Nothing to stop: it had already ended.");
    } catch (failure) { setError(failure.message); }
    setVersion((v) => v + 1);
  };
  const tree = rows ? nest(rows) : [];
  return html`<div class="spawn-tree"><h3>Sub-agents</h3>
    <p><a href=${waterfallLink("session", sessionKey)}>The tree's runs over time (waterfall)</a></p>
    ${card && html`<p class="facts" data-state=${card.state}>This session: <strong>${card.state}</strong>
      ${card.childrenPending ? ` · ${card.childrenPending} to report` : ""}${card.role ? ` · ${card.role}` : ""} · depth ${card.spawnDepth}</p>`}
    ${unreadable ? html`<p class="error">${unreadable}</p>` : rows === null ? html`<p>Loading…</p>` : tree.length === 0 ? html`<p class="quiet">No sub-agents.</p>` :
      html`<ul class="tree" aria-label="Spawn tree">${tree.map((node) => html`<${Node} key=${node.row.key} node=${node}
        confirming=${confirming} onAsk=${setConfirming} onKill=${kill} onKeep=${() => setConfirming(null)} />`)}</ul>`}
    ${outcome && html`<p class="outcome" aria-live="polite">${outcome}</p>`}
    ${error && html`<p role="alert" class="error">${error}</p>`}
  </div>`;
}
