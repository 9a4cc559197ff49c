// The console's side of the HTTP API: every call carries the signed-in token as a Bearer header (never in a
// URL), so the console sees exactly what the token's principal sees (docs/console.md).

const TOKEN_KEY = "clawbus.token";

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(extra = {}, bearer = token.get()) {
  return { Authorization: `Bearer ${bearer}`, ...extra };
}

// Sends of one call that creates or changes work, and the first pause between them (doubled each time):
// about two seconds in all, enough to ride out a dropped connection or an API process restarting, short
// enough that a person at the form is not left waiting. A Retry-After longer than MAX_PAUSE_MS is not
// waited out here: the 503 is shown, and the person can send again.
const ATTEMPTS = 4;
const PAUSE_MS = 250;
const MAX_PAUSE_MS = 5000;

// randomUUID exists only in secure contexts (https, localhost): a console opened over plain http on a LAN
// address has getRandomValues alone, so the key is built from it (a UUIDv4, as randomUUID makes).
function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// Retry-After in ms (seconds or an HTTP date), or null when absent or unreadable.
function retryAfter(response) {
  const value = response.headers.get("Retry-After");
  if (!value) return null;
  const ms = /^\d+$/.test(value.trim()) ? Number(value) * 1000 : Date.parse(value) - Date.now();
  return Number.isNaN(ms) ? null : Math.max(ms, 0);
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// `idempotent`: the call carries a fresh Idempotency-Key (docs/architecture.md, "Idempotency") and is sent
// again with that same key when its answer is lost (fetch rejects: the request may or may not have reached
// the server) or the server answers 503: the server makes nothing new for a repeat and answers as it did
// the first time, so a retry can never start a second run or spawn a second child.
export async function call(method, path, body, bearer, idempotent = method === "POST" || method === "PATCH") {
  const extra = body ? { "Content-Type": "application/json" } : {};
  if (idempotent) extra["Idempotency-Key"] = newKey();
  const init = { method, headers: headers(extra, bearer) };
  if (body !== undefined) init.body = JSON.stringify(body);
  let response;
  for (let attempt = 1; ; attempt += 1) {
    const last = !idempotent || attempt === ATTEMPTS;
    let wait = PAUSE_MS * 2 ** (attempt - 1);
    try {
      response = await fetch(path, init);
      if (response.status !== 503 || last) break;
      wait = retryAfter(response) ?? wait;
      if (wait > MAX_PAUSE_MS) break;
    } catch (error) {
      // Only a network failure (a TypeError) may have lost an answer; anything else is thrown as before.
      if (!(error instanceof TypeError) || last) throw error;
    }
    await pause(wait);
  }
  const text = await response.text();
  const payload = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const message = payload?.error?.message || payload?.detail || `HTTP ${response.status}`;
    throw new ApiError(response.status, typeof message === "string" ? message : JSON.stringify(message));
  }
  return payload;
}

export const get = (path, bearer) => call("GET", path, undefined, bearer);
export const post = (path, body, idempotent) => call("POST", path, body ?? {}, undefined, idempotent);
export const patch = (path, body) => call("PATCH", path, body);

// The tools the console only reads with: their calls make nothing, so they go without a key (a key is a
// record the server keeps for gateway.idempotency.ttlHours, and the sessions list is read every 3 s), as
// the Python client sends keys only with the tools that make work (api/client.py, WORK_TOOLS).
const READ_TOOLS = new Set(["sessions_list", "sessions_history"]);

// A tool call as the given session (the caller of sessions_send and sessions_spawn).
export async function tool(name, args, sessionKey) {
  const body = { tool: name, args };
  if (sessionKey) body.sessionKey = sessionKey;
  const answer = await post("/tools/invoke", body, !READ_TOOLS.has(name));
  return answer.result.details;
}

export const sessionPath = (key) => `/v1/sessions/${encodeURIComponent(key)}`;

// Who the token is (GET /v1/me; a wrong token is 401): an owner lists every session (GET /v1/sessions), any
// other token lists through sessions_list as the main session of each agent it may act for.
export const whoAmI = (bearer) => get("/v1/me", bearer);

// Server-sent events over fetch (EventSource cannot send an Authorization header). Calls onEvent(type,
// data, id) for each event until the stream ends or the returned stop() is called.
export function follow(path, onEvent, onEnd = () => {}) {
  const controller = new AbortController();
  (async () => {
    try {
      const response = await fetch(path, { headers: headers({ Accept: "text/event-stream" }), signal: controller.signal });
      if (!response.ok || !response.body) throw new ApiError(response.status, `stream ${path}: HTTP ${response.status}`);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = { type: "message", data: "", id: null };
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) event.type = line.slice(7);
            else if (line.startsWith("data: ")) event.data += line.slice(6);
            else if (line.startsWith("id: ")) event.id = line.slice(4);
          }
          if (event.data) onEvent(event.type, JSON.parse(event.data), event.id);
        }
      }
      onEnd(null);
    } catch (error) {
      if (error.name !== "AbortError") onEnd(error);
    }
  })();
  return () => controller.abort();
}
