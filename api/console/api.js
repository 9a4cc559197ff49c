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

export async function call(method, path, body, bearer) {
  const init = { method, headers: headers(body ? { "Content-Type": "application/json" } : {}, bearer) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(path, init);
  const text = await response.text();
  const payload = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const message = payload?.error?.message || payload?.detail || `HTTP ${response.status}`;
    throw new ApiError(response.status, typeof message === "string" ? message : JSON.stringify(message));
  }
  return payload;
}

export const get = (path, bearer) => call("GET", path, undefined, bearer);
export const post = (path, body) => call("POST", path, body ?? {});
export const patch = (path, body) => call("PATCH", path, body);

// A tool call as the given session (the caller of sessions_send and sessions_spawn).
export async function tool(name, args, sessionKey) {
  const body = { tool: name, args };
  if (sessionKey) body.sessionKey = sessionKey;
  const answer = await post("/tools/invoke", body);
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
