// What every view of the console shares: the template tag, links between views, times.
import { h } from "preact";
import htm from "htm";

export const html = htm.bind(h);

// Views are addressed by the URL's fragment: #/sessions, #/session/<key>, #/run/<id>, #/flow/<id>, #/fleet.
export const link = (name, arg) => `#/${name}${arg ? `/${encodeURIComponent(arg)}` : ""}`;

export const when = (ms) => (ms ? new Date(Number(ms)).toLocaleTimeString() : "");

export const TERMINAL = ["ok", "error", "timeout", "aborted"];

// Where a trace is in the operator's backend: telemetry.tracing.traceUrl (GET /v1/me's traceUrl) with
// {traceId} replaced; null when no template is set or it does not make an http(s) link.
export function traceHref(template, traceId) {
  if (!template || !traceId) return null;
  try {
    const url = new URL(template.replaceAll("{traceId}", encodeURIComponent(traceId)), location.href);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

// A run's or a flow's trace id (docs/architecture.md, "Traces"), a link that opens in a new tab when the
// deployment sets a traceUrl; nothing when the run has no trace (traces not sent).
export function TraceId({ traceId, traceUrl }) {
  if (!traceId) return null;
  const href = traceHref(traceUrl, traceId);
  const id = html`<code>${traceId}</code>`;
  return html`<span class="trace-id" data-testid="trace-id">trace ${href
    ? html`<a href=${href} target="_blank" rel="noopener" aria-label=${`Trace ${traceId} (opens in a new tab)`}>${id}</a>`
    : id}</span>`;
}
