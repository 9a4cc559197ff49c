// What every view of the console shares: the template tag, links between views, times.
import { h } from "preact";
import htm from "htm";

export const html = htm.bind(h);

// Views are addressed by the URL's fragment: #/sessions, #/session/<key>, #/run/<id>, #/flow/<id>, #/fleet.
export const link = (name, arg) => `#/${name}${arg ? `/${encodeURIComponent(arg)}` : ""}`;

export const when = (ms) => (ms ? new Date(Number(ms)).toLocaleTimeString() : "");

export const TERMINAL = ["ok", "error", "timeout", "aborted"];
