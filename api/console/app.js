// The clawbus console: sessions, transcripts, flows and the fleet, live (docs/console.md). Preact with htm
// templates, no build step; the libraries are vendored builds (console/package.json pins them).
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { follow, get, patch, post, sessionPath, token, tool, whoAmI } from "./api.js";
import { FlowView } from "./flow.js";
import { FleetView } from "./fleet.js";
import { SpawnTree } from "./tree.js";
import { WaterfallView } from "./waterfall.js";
import { html, link, TERMINAL, TraceId, when } from "./ui.js";
const KINDS = ["main", "group", "cron", "hook", "node", "other"];
const ACTIVITY = [["", "any time"], ["5", "last 5 minutes"], ["60", "last hour"], ["1440", "last day"]];
const REFRESH_MS = 3000;

const agentOf = (key) => (key.startsWith("agent:") ? key.split(":")[1] : "");
// A person's message is its text, as OpenClaw's sessions_history writes it; the others are blocks.
const textOf = (message) =>
  typeof message.content === "string"
    ? message.content
    : (message.content || []).filter((block) => block.type === "text").map((block) => block.text).join("");
// The run a message belongs to: an agent's own, or the one whose input it was ("<runId>:user").
const runOf = (message) =>
  (message.__openclaw && message.__openclaw.runId) || (message.idempotencyKey || "").replace(/:user$/, "");

// -- routing (ui.js: link) ---------------------------------------------------------------------------------

function route() {
  const [, name = "sessions", ...rest] = location.hash.replace(/^#/, "").split("/");
  return { name, arg: decodeURIComponent(rest.join("/")) };
}

function useRoute() {
  const [current, setCurrent] = useState(route());
  useEffect(() => {
    const changed = () => setCurrent(route());
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return current;
}

// -- sign-in ----------------------------------------------------------------------------------------------

function SignIn({ onSignedIn }) {
  const [value, setValue] = useState("");
  const [error, setError] = useState("");
  const submit = async (event) => {
    event.preventDefault();
    setError("");
    try {
      const who = await whoAmI(value);
      token.set(value);
      onSignedIn(who);
    } catch (failure) {
      setError(failure.status === 401 ? "That token was refused." : `Sign-in failed: ${failure.message}`);
    }
  };
  return html`<main class="signin">
    <h1>clawbus console</h1>
    <form onSubmit=${submit}>
      <label for="token">API token</label>
      <input id="token" type="password" autocomplete="off" value=${value} onInput=${(e) => setValue(e.target.value)} required />
      <button type="submit">Sign in</button>
      ${error && html`<p role="alert" class="error">${error}</p>`}
    </form>
    <p class="hint">The token stays in this tab (sessionStorage) and is sent as a Bearer header.</p>
  </main>`;
}

// -- sessions ---------------------------------------------------------------------------------------------

function useSessions(auth, filters) {
  const [rows, setRows] = useState(null);
  const [error, setError] = useState("");
  useEffect(() => {
    let stopped = false;
    const load = async () => {
      try {
        let sessions;
        if (auth.owner) {
          const query = new URLSearchParams({ limit: "200" });
          if (filters.kind) query.append("kind", filters.kind);
          if (filters.active) query.set("activeMinutes", filters.active);
          sessions = (await get(`/v1/sessions?${query}`)).sessions;
        } else {
          const args = { limit: 200 };
          if (filters.kind) args.kinds = [filters.kind];
          if (filters.active) args.activeMinutes = Number(filters.active);
          // What each of the token's agents may see, as sessions_list shows it to that agent's main session.
          const seen = await Promise.all(auth.mainSessions.map((caller) => tool("sessions_list", args, caller)));
          const byKey = new Map(seen.flatMap((result) => result.sessions || []).map((row) => [row.key, row]));
          sessions = [...byKey.values()].sort((a, b) => (b.updatedAt || 0) - (a.updatedAt || 0));
        }
        if (!stopped) { setRows(sessions); setError(""); }
      } catch (failure) {
        if (!stopped) setError(failure.message);
      }
    };
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => { stopped = true; clearInterval(timer); };
  }, [auth.owner, auth.mainSessions.join(), filters.kind, filters.active]);
  return [rows, error];
}

function Sessions({ auth }) {
  const [filters, setFilters] = useState({ kind: "", agent: "", active: "", search: "" });
  const [rows, error] = useSessions(auth, filters);
  const set = (name) => (event) => setFilters({ ...filters, [name]: event.target.value });
  const agents = [...new Set((rows || []).map((row) => agentOf(row.key)).filter(Boolean))].sort();
  const search = filters.search.toLowerCase();
  const shown = (rows || []).filter(
    (row) =>
      (!filters.agent || agentOf(row.key) === filters.agent) &&
      (!search || row.key.toLowerCase().includes(search) || (row.label || "").toLowerCase().includes(search)),
  );
  return html`<section aria-labelledby="sessions-title">
    <h2 id="sessions-title">Sessions</h2>
    <div class="filters">
      <label>Kind <select value=${filters.kind} onChange=${set("kind")}>
        <option value="">all</option>${KINDS.map((kind) => html`<option value=${kind}>${kind}</option>`)}
      </select></label>
      <label>Agent <select value=${filters.agent} onChange=${set("agent")}>
        <option value="">all</option>${agents.map((agent) => html`<option value=${agent}>${agent}</option>`)}
      </select></label>
      <label>Active <select value=${filters.active} onChange=${set("active")}>
        ${ACTIVITY.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
      </select></label>
      <label>Search <input type="search" placeholder="key or label" value=${filters.search} onInput=${set("search")} /></label>
    </div>
    ${error && html`<p role="alert" class="error">${error}</p>`}
    ${rows === null ? html`<p>Loading…</p>` : html`<table class="sessions">
      <thead><tr><th scope="col">Key</th><th scope="col">Kind</th><th scope="col">Channel</th><th scope="col">Label</th>
        <th scope="col">Agent</th><th scope="col">Updated</th><th scope="col">Tokens</th><th scope="col">Cost (USD)</th></tr></thead>
      <tbody>${shown.map((row) => html`<tr key=${row.key}>
        <td><a href=${link("session", row.key)}>${row.key}</a></td><td>${row.kind}</td><td>${row.channel}</td>
        <td>${row.label || ""}</td><td>${agentOf(row.key)}</td><td>${when(row.updatedAt)}</td>
        <td>${row.totalTokens ?? ""}</td><td>${row.estimatedCostUsd != null ? row.estimatedCostUsd.toFixed(4) : ""}</td>
      </tr>`)}</tbody>
    </table>
    <p class="count">${shown.length} of ${rows.length} sessions</p>`}
  </section>`;
}

// -- one session: transcript, live runs, acting ----------------------------------------------------------

function Badge({ kind }) {
  return html`<span class=${`badge badge-${kind}`}>${kind}</span>`;
}

function MessageView({ message }) {
  const calls = Array.isArray(message.content) ? message.content.filter((block) => block.type === "toolCall") : [];
  return html`<li class=${`message role-${message.role}`} data-run=${runOf(message)}>
    <div class="meta"><span class="role">${message.role}</span>
      ${message.provenance && html`<${Badge} kind=${message.provenance.kind} />`}
      ${message.stopReason && html`<${Badge} kind=${message.stopReason} />`}
      ${message.toolName && html`<span class="tool">${message.toolName}</span>`}
      ${message.senderLabel && html`<span class="sender">${message.senderLabel}</span>`}
      <span class="time">${when(message.timestamp)}</span></div>
    ${textOf(message) && html`<p class="text">${textOf(message)}</p>`}
    ${calls.map((call) => html`<pre class="call">${call.name}(${JSON.stringify(call.arguments)})</pre>`)}
  </li>`;
}

function useLiveRuns(key, onEnded) {
  const [runs, setRuns] = useState({});
  useEffect(() => {
    setRuns({});
    const change = (runId, update) =>
      setRuns((all) => ({ ...all, [runId]: { runId, text: "", ...(all[runId] || {}), ...update(all[runId] || { text: "" }) } }));
    const stop = follow(`${sessionPath(key)}/stream`, (type, data) => {
      if (type === "queued" || type === "started") change(data.runId, () => ({ status: type === "started" ? "running" : "queued" }));
      else if (type === "text") change(data.runId, (run) => ({ text: run.text + data.text, status: "running" }));
      else if (type === "text_reset") change(data.runId, () => ({ text: "" }));
      else if (type === "ended") {
        setRuns((all) => { const rest = { ...all }; delete rest[data.runId]; return rest; });
        onEnded();
      }
    });
    return stop;
  }, [key]);
  return runs;
}

function Session({ auth, sessionKey }) {
  const [history, setHistory] = useState(null);
  const [entry, setEntry] = useState(null);
  const [error, setError] = useState("");
  const [version, setVersion] = useState(0);
  const reload = () => setVersion((v) => v + 1);
  const live = useLiveRuns(sessionKey, reload);
  useEffect(() => {
    let stopped = false;
    (async () => {
      try {
        // Read as the session itself (a session always sees itself), redacted as sessions_history redacts.
        const [result, session] = await Promise.all([
          tool("sessions_history", { sessionKey, limit: 200, includeTools: true }, sessionKey),
          get(sessionPath(sessionKey)),
        ]);
        if (stopped) return;
        setEntry(session);
        if (result.messages) { setHistory(result); setError(""); } else setError(result.error || "no transcript");
      } catch (failure) {
        if (!stopped) setError(failure.message);
      }
    })();
    return () => { stopped = true; };
  }, [sessionKey, version]);
  const inFlight = Object.values(live);
  return html`<section aria-labelledby="session-title">
    <h2 id="session-title">Session <code>${sessionKey}</code></h2>
    ${error && html`<p role="alert" class="error">${error}</p>`}
    ${entry && html`<p class="facts">${entry.channel || ""} · ${entry.label ? `label ${entry.label} · ` : ""}updated ${when(entry.updatedAt)}
      ${entry.totalTokens != null ? ` · ${entry.totalTokens} tokens` : ""}</p>`}
    <div class="columns">
      <div>
        <h3>Transcript</h3>
        ${history === null ? html`<p>Loading…</p>` : html`<ol class="transcript" aria-label="Transcript">
          ${history.messages.map((message) => html`<${MessageView} key=${(message.__openclaw || {}).id} message=${message} />`)}
          ${inFlight.filter((run) => run.text).map((run) => html`<li class="message role-assistant streaming" data-run=${run.runId} aria-live="polite">
            <div class="meta"><span class="role">assistant</span><${Badge} kind="streaming" /></div><p class="text">${run.text}</p></li>`)}
        </ol>`}
      </div>
      <aside aria-label="Work in flight and actions">
        <${Lane} runs=${inFlight} />
        <${BusyMode} sessionKey=${sessionKey} version=${version} runs=${inFlight.length} onChange=${reload} />
        <${SpawnTree} sessionKey=${sessionKey} />
        <${Act} sessionKey=${sessionKey} onDone=${reload} />
        ${auth.owner && entry && html`<${SendPolicy} sessionKey=${sessionKey} entry=${entry} onChange=${reload} />`}
      </aside>
    </div>
  </section>`;
}

function Lane({ runs }) {
  const [error, setError] = useState("");
  const cancel = async (runId) => {
    setError("");
    try { await post(`/v1/runs/${runId}/cancel`); } catch (failure) { setError(failure.message); }
  };
  return html`<div class="lane"><h3>In flight</h3>
    ${runs.length === 0 ? html`<p class="quiet">No run queued or running.</p>` : html`<ul>
      ${runs.map((run) => html`<li key=${run.runId} class="run">
        <span class=${`status status-${run.status || "queued"}`}>${run.status || "queued"}</span>
        <a href=${link("run", run.runId)}><code>${run.runId.slice(0, 8)}</code></a>
        <button type="button" class="danger" onClick=${() => cancel(run.runId)} aria-label=${`Cancel run ${run.runId}`}>Cancel</button>
      </li>`)}
    </ul>`}
    ${error && html`<p role="alert" class="error">${error}</p>`}
  </div>`;
}

const QUEUE_MODES = ["followup", "steer", "collect", "interrupt", "reject"];
const MODE_SOURCES = { session: "this session's own", channel: "its channel's", default: "the configuration's" };

// What a message does while the session is busy (contract §11): the mode in force, where it comes from,
// the session's queue, and the session's own mode to set or clear (as /queue <mode>|reset does).
function BusyMode({ sessionKey, version, runs, onChange }) {
  const [card, setCard] = useState(null);
  const [error, setError] = useState("");
  useEffect(() => {
    get(`${sessionPath(sessionKey)}/status`).then(setCard, () => setCard(null));
  }, [sessionKey, version, runs]);
  if (!card) return null;
  const choose = async (event) => {
    setError("");
    const value = event.target.value;
    try {
      await patch(sessionPath(sessionKey), { queueMode: value === "inherit" ? null : value });
      onChange();
    } catch (failure) { setError(failure.message); }
  };
  const own = card.queueModeSource === "session" ? card.queueMode : "inherit";
  return html`<div class="queue"><h3>When busy</h3>
    <p class="facts" data-testid="queue-facts">${card.runsRunning} running · ${card.runsQueued} queued ·
      mode <strong>${card.queueMode}</strong> (${MODE_SOURCES[card.queueModeSource]})</p>
    <label for="queue-mode">This session's mode (/queue)</label>
    <select id="queue-mode" value=${own} onChange=${choose}>
      <option value="inherit">inherit (channel or configuration)</option>
      ${QUEUE_MODES.map((mode) => html`<option value=${mode}>${mode}</option>`)}
    </select>
    ${error && html`<p role="alert" class="error">${error}</p>`}
  </div>`;
}

function Act({ sessionKey, onDone }) {
  const [message, setMessage] = useState("");
  const [wait, setWait] = useState("0");
  const [mode, setMode] = useState("");
  const [task, setTask] = useState("");
  const [outcome, setOutcome] = useState(null);
  const [busy, setBusy] = useState(false);
  const run = (work) => async (event) => {
    event.preventDefault();
    setBusy(true);
    setOutcome(null);
    try { setOutcome(await work()); onDone(); } catch (failure) { setOutcome({ status: "error", error: failure.message }); }
    setBusy(false);
  };
  // A message into the session, as from a chat user with no channel (its route stays as it is): the
  // agent's reply comes back here, and no announce goes out to the session's channel.
  const send = run(() => post(`${sessionPath(sessionKey)}/messages`,
    { message, timeoutSeconds: Number(wait), ...(mode ? { queueMode: mode } : {}) }));
  const spawn = run(() => tool("sessions_spawn", { task }, sessionKey));
  return html`<div class="act"><h3>Act</h3>
    <form onSubmit=${send} aria-label="Send a message">
      <label for="send-message">Message to this session</label>
      <textarea id="send-message" rows="2" value=${message} onInput=${(e) => setMessage(e.target.value)} required></textarea>
      <label for="send-wait">Wait (seconds, 0: do not wait)</label>
      <input id="send-wait" type="number" min="0" max="600" value=${wait} onInput=${(e) => setWait(e.target.value)} />
      <label for="send-mode">If the session is busy</label>
      <select id="send-mode" value=${mode} onChange=${(e) => setMode(e.target.value)}>
        <option value="">the session's mode</option>
        ${QUEUE_MODES.map((choice) => html`<option value=${choice}>${choice}</option>`)}
      </select>
      <button type="submit" disabled=${busy}>Send</button>
    </form>
    <form onSubmit=${spawn} aria-label="Spawn a sub-agent">
      <label for="spawn-task">Sub-agent task (spawned from this session)</label>
      <textarea id="spawn-task" rows="2" value=${task} onInput=${(e) => setTask(e.target.value)} required></textarea>
      <button type="submit" disabled=${busy}>Spawn</button>
    </form>
    ${outcome && html`<div class="outcome" role="status">
      <span class=${`status status-${outcome.status}`}>${outcome.status}</span>
      ${outcome.reply && html`<p>${outcome.reply}</p>`}
      ${outcome.error && html`<p class="error">${outcome.error}</p>`}
      ${outcome.flowId && html`<a href=${link("flow", outcome.flowId)}>flow ${outcome.flowId.slice(0, 8)}</a>`}
      ${outcome.childSessionKey && html`<a href=${link("session", outcome.childSessionKey)}>${outcome.childSessionKey}</a>`}
      ${outcome.runId && !outcome.flowId && !outcome.childSessionKey && html`<a href=${link("run", outcome.runId)}>run ${outcome.runId.slice(0, 8)}</a>`}
      ${outcome.childSessionKey && html`<a href=${link("flow", outcome.runId)}>flow ${outcome.runId.slice(0, 8)}</a>`}
    </div>`}
  </div>`;
}

function SendPolicy({ sessionKey, entry, onChange }) {
  const [error, setError] = useState("");
  const current = entry.sendPolicy || "inherit";
  const choose = async (event) => {
    setError("");
    const value = event.target.value;
    try {
      await patch(sessionPath(sessionKey), { sendPolicy: value === "inherit" ? null : value });
      onChange();
    } catch (failure) { setError(failure.message); }
  };
  return html`<div class="policy"><h3>Send policy</h3>
    <label for="send-policy">Sends to this session (/send on|off|inherit)</label>
    <select id="send-policy" value=${current} onChange=${choose}>
      <option value="inherit">inherit</option><option value="allow">on (allow)</option><option value="deny">off (deny)</option>
    </select>
    ${error && html`<p role="alert" class="error">${error}</p>`}
  </div>`;
}

// A run's own page: its record, its live text, its flow, its trace, and a cancel button.
// An agent's main session by its agent's id, any other session by its key (as a chain refusal names them).
const shortKey = (key) => (key.startsWith("agent:") && key.split(":").slice(2).join(":") === "main" ? agentOf(key) : key);

// A run's chain (contract §4, "Chains"): the sessions its hops reached, the chain's first one first, its hop
// count, and (owner tokens) what the chain spent against its budget.
function ChainPath({ run, owner }) {
  const chainId = run.chainId || run.runId;
  const [spent, setSpent] = useState(null);
  const [stopped, setStopped] = useState(null);
  useEffect(() => {
    if (owner) get(`/v1/chains/${encodeURIComponent(chainId)}`).then(setSpent, () => setSpent(null));
  }, [chainId, owner]);
  // A guard that refused one of this run's sends or spawns: its result, in the run's session.
  useEffect(() => {
    if (!TERMINAL.includes(run.status)) return;
    tool("sessions_history", { sessionKey: run.sessionKey, limit: 200, includeTools: true }, run.sessionKey).then(
      (history) => {
        const refused = (history.messages || [])
          .filter((m) => m.role === "toolResult" && runOf(m) === run.runId)
          .map((m) => { try { return JSON.parse(textOf(m)); } catch { return null; } })
          .find((result) => result && result.guard);
        setStopped(refused || null);
      },
      () => setStopped(null),
    );
  }, [run.runId, run.status]);
  const path = run.chainPath && run.chainPath.length ? run.chainPath : [run.sessionKey];
  const budget = spent && spent.maxChainCostUsd != null ? ` of ${spent.maxChainCostUsd} USD` : "";
  return html`<section aria-labelledby="chain-title" data-testid="chain">
    <h3 id="chain-title">Chain</h3>
    <p class="facts">chain <code>${chainId.slice(0, 8)}</code> · ${run.hops} hop${run.hops === 1 ? "" : "s"}
      ${spent && ` · spent ${spent.spentUsd.toFixed(4)} USD${budget}, ${spent.spentTokens} tokens`}
      · guards: ${spent ? `maxHops ${spent.maxHops}, maxCycles ${spent.maxCycles}` : "maxHops, maxCycles"}</p>
    <ol class="chain-path" aria-label="Chain path">${path.map((key) => html`<li>
      <a href=${link("session", key)}>${shortKey(key)}</a></li>`)}</ol>
    ${stopped && html`<p role="status" class="error" data-testid="chain-stopped">
      Stopped by <strong>${stopped.guard}</strong>: ${stopped.error}</p>`}
  </section>`;
}

function RunView({ runId, traceUrl, owner }) {
  const [run, setRun] = useState(null);
  const [text, setText] = useState("");
  const [error, setError] = useState("");
  const [version, setVersion] = useState(0);
  useEffect(() => {
    get(`/v1/runs/${runId}`).then(setRun, (failure) => setError(failure.message));
  }, [runId, version]);
  useEffect(() => follow(`/v1/runs/${runId}/stream`, (type, data) => {
    if (type === "text") setText((so_far) => so_far + data.text);
    else if (type === "text_reset") setText("");
    else if (type === "ended" || type === "started") setVersion((v) => v + 1);
  }), [runId]);
  const cancel = async () => {
    try { await post(`/v1/runs/${runId}/cancel`); setVersion((v) => v + 1); } catch (failure) { setError(failure.message); }
  };
  return html`<section aria-labelledby="run-title"><h2 id="run-title">Run <code>${runId}</code></h2>
    ${error && html`<p role="alert" class="error">${error}</p>`}
    ${run && html`<p><span class=${`status status-${run.status}`}>${run.status}</span> in
      <a href=${link("session", run.sessionKey)}>${run.sessionKey}</a>
      ${run.flowId && html` · <a href=${link("flow", run.flowId)}>flow ${run.flowId.slice(0, 8)}</a>`}
      ${run.traceId && html` · <${TraceId} traceId=${run.traceId} traceUrl=${traceUrl} />`}
      ${!TERMINAL.includes(run.status) && html` <button type="button" class="danger" onClick=${cancel}>Cancel run</button>`}</p>`}
    <h3>Text</h3><p class="text streaming" aria-live="polite">${text || (run && run.reply) || ""}</p>
    ${run && html`<${ChainPath} run=${run} owner=${owner} />`}
  </section>`;
}

// -- work in flight across the fleet (owners) ----------------------------------------------------------------

function InFlight() {
  const [view, setView] = useState(null);
  const [error, setError] = useState("");
  const [version, setVersion] = useState(0);
  useEffect(() => {
    let stopped = false;
    const load = () => get("/v1/inflight").then(
      (now) => { if (!stopped) { setView(now); setError(""); } },
      (failure) => { if (!stopped) setError(failure.message); },
    );
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => { stopped = true; clearInterval(timer); };
  }, [version]);
  const cancel = async (path) => {
    setError("");
    try { await post(path); setVersion((v) => v + 1); } catch (failure) { setError(failure.message); }
  };
  return html`<section aria-labelledby="inflight-title"><h2 id="inflight-title">In flight</h2>
    ${error && html`<p role="alert" class="error">${error}</p>`}
    ${view === null ? html`<p>Loading…</p>` : html`
      <table class="lanes"><caption>Sessions with runs under way (the first run of a lane runs or runs next)</caption>
        <thead><tr><th scope="col">Session</th><th scope="col">Lane</th></tr></thead>
        <tbody>${view.lanes.map((lane) => html`<tr key=${lane.sessionKey}>
          <td><a href=${link("session", lane.sessionKey)}>${lane.sessionKey}</a></td>
          <td><ul class="lane-runs">${lane.runIds.map((runId) => html`<li key=${runId}>
            <a href=${link("run", runId)}><code>${runId.slice(0, 8)}</code></a>
            <button type="button" class="danger" onClick=${() => cancel(`/v1/runs/${runId}/cancel`)} aria-label=${`Cancel run ${runId}`}>Cancel</button>
          </li>`)}</ul></td></tr>`)}</tbody>
      </table>
      ${view.lanes.length === 0 && html`<p class="quiet">No run queued or running.</p>`}
      <h3>Flows in progress</h3>
      ${view.flows.length === 0 ? html`<p class="quiet">No flow in progress.</p>` : html`<ul class="flows">
        ${view.flows.map((flowId) => html`<li key=${flowId}>
          <a href=${link("flow", flowId)}>flow <code>${flowId.slice(0, 8)}</code></a>
          <button type="button" class="danger" onClick=${() => cancel(`/v1/flows/${flowId}/cancel`)} aria-label=${`Cancel flow ${flowId}`}>Cancel</button>
        </li>`)}</ul>`}`}
  </section>`;
}

// -- the shell --------------------------------------------------------------------------------------------

function App() {
  const [auth, setAuth] = useState(undefined);
  const current = useRoute();
  useEffect(() => {
    if (!token.get()) { setAuth(null); return; }
    whoAmI().then(setAuth, () => { token.clear(); setAuth(null); });
  }, []);
  if (auth === undefined) return html`<main><h1>clawbus console</h1><p>Loading…</p></main>`;
  if (auth === null) return html`<${SignIn} onSignedIn=${setAuth} />`;
  const signOut = () => { token.clear(); setAuth(null); };
  const views = {
    sessions: () => html`<${Sessions} auth=${auth} />`,
    session: () => html`<${Session} auth=${auth} sessionKey=${current.arg} key=${current.arg} />`,
    flow: () => html`<${FlowView} flowId=${current.arg} traceUrl=${auth.traceUrl} key=${current.arg} />`,
    run: () => html`<${RunView} runId=${current.arg} traceUrl=${auth.traceUrl} owner=${auth.owner} key=${current.arg} />`,
    waterfall: () => html`<${WaterfallView} arg=${current.arg} key=${current.arg} />`,
    fleet: () => html`<${FleetView} />`,
    inflight: () => (auth.owner ? html`<${InFlight} />` : html`<p>Work in flight across sessions is for owner tokens.</p>`),
  };
  const nav = (name, label) =>
    html`<a href=${link(name)} aria-current=${current.name === name ? "page" : undefined}>${label}</a>`;
  return html`<header><span class="brand">clawbus</span>
      <nav aria-label="Console">${nav("sessions", "Sessions")} ${auth.owner && nav("inflight", "In flight")} ${nav("fleet", "Fleet")}
        <a href=${`${location.protocol}//${location.hostname}:${document.body.dataset.flowerPort}/`} target="_blank" rel="noopener">Flower</a></nav>
      <span class="who">${auth.name} (${auth.owner ? "owner" : "scoped token"})</span>
      <button type="button" onClick=${signOut}>Sign out</button></header>
    <main>${(views[current.name] || views.sessions)()}</main>`;
}

render(html`<${App} />`, document.getElementById("app"));
