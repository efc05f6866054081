// The browser side of a debate's live stream, shared by the transcript and the live status bar.
//
// The server sends one socket.io event "rl" per flush to every spectator of a debate (serialised once
// for all of them); its argument is a list of items, each a list whose first element says what it is:
//   [0, kid, offset, text]   streamed text of turn `kid` starting at character `offset`
//   [1, kid, attempt, info]  an attempt at a turn started (offsets restart at 0)
//   [2, kid, reason]         the attempt was cut off
//   [3, kid, info]           the turn was committed (info.text only when it differs from what streamed)
//   [4, changes]             the status summary changed (only its changed keys; a resync sends all)
//   [5, kid, note]           a note about a turn (a retry)
// Items are handed to the subscribers in order; ones that arrive before anybody subscribed wait.
import { Marked } from "rostrum-marked";
import DOMPurify from "dompurify";

const subscribers = new Set();
const early = [];
let listening = null; // the socket the handler is on

function listen() {
  if (listening && listening === window.socket) return true;
  if (!window.socket) return false;
  listening = window.socket;
  window.socket.on("rl", (items) => {
    if (!subscribers.size) {
      early.push(...items);
      if (early.length > 5000) early.splice(0, early.length - 5000);
      return;
    }
    for (const fn of subscribers) fn(items);
  });
  return true;
}

// NiceGUI creates `window.socket` in its app's `mounted`, after the components that subscribe here have
// mounted. Waiting for it on a timer could let a page's first batch (the resync a (re)connecting page is sent:
// the turns in flight and the whole status) arrive before the handler (timers run late on a busy machine), and socket.io
// drops an event nobody listens to: a late spectator would stay stale. So the handler goes on in the same
// step that assigns the socket, before any of its events can be delivered.
if (!listen()) {
  let current;
  Object.defineProperty(window, "socket", {
    configurable: true,
    enumerable: true,
    get: () => current,
    set: (value) => {
      current = value;
      listen();
    },
  });
}

// `fn(items)` for every batch from now on (and the ones that came before anybody listened).
export function subscribe(fn) {
  subscribers.add(fn);
  listen();
  if (early.length) fn(early.splice(0));
  return () => subscribers.delete(fn);
}

// --- Markdown: escaped raw HTML, images as links unless their host is allowed, then DOMPurify ---------

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export const escapeHtml = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ESCAPES[c]);

let imageHosts = new Set();
export function setImageHosts(hosts) {
  imageHosts = new Set((hosts || []).map((h) => String(h).toLowerCase()));
  cache.clear();
}

function imageHtml({ href, text }) {
  let url;
  try {
    url = new URL(href, window.location.href);
  } catch {
    return escapeHtml(text);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return escapeHtml(text);
  const host = url.hostname.toLowerCase();
  if (imageHosts.has(host)) {
    return `<img src="${escapeHtml(url.href)}" alt="${escapeHtml(text)}" loading="lazy" referrerpolicy="no-referrer">`;
  }
  // Never let a model make every spectator's browser fetch a URL it chose: a link, fetched only if clicked.
  return `<a href="${escapeHtml(url.href)}" target="_blank" rel="noopener noreferrer nofollow" class="rostrum-image-link">image: ${escapeHtml(text || "untitled")} (${escapeHtml(host)})</a>`;
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    html: ({ text }) => escapeHtml(text), // raw HTML from a model is shown as text, never parsed
    image: imageHtml,
  },
});

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
  if (node.tagName === "IMG") {
    let host = "";
    try {
      host = new URL(node.getAttribute("src") || "", window.location.href).hostname.toLowerCase();
    } catch {}
    if (!imageHosts.has(host)) node.remove();
  }
});

// A turn's text as escaped paragraphs: what a long transcript shows until Markdown is parsed.
export function plainText(text) {
  return String(text ?? "").split(/\n{2,}/).map((p) => `<p>${escapeHtml(p)}</p>`).join("");
}

const cache = new Map();
const sanitize = (html) => DOMPurify.sanitize(html, { ADD_ATTR: ["target"], FORBID_TAGS: ["style", "form"] });

// Sanitised HTML for Markdown text; `keep` caches it (finished text: the same string renders once).
export function markdown(text, keep = true) {
  text = String(text ?? "");
  if (!keep) return sanitize(marked.parse(text));
  let html = cache.get(text);
  if (html === undefined) {
    html = sanitize(marked.parse(text));
    if (cache.size > 400) cache.delete(cache.keys().next().value);
    cache.set(text, html);
  }
  return html;
}

// --- Follow mode: keep the live turn in view while the reader is at it ----------------------------------

const follow = { on: true, started: false, shown: false, listeners: new Set() };

function liveTarget() {
  const live = document.querySelectorAll(".rostrum-turn-live");
  if (live.length) return live[live.length - 1];
  return document.querySelector(".rostrum-transcript-end");
}

function targetVisible() {
  const target = liveTarget();
  if (!target) return true;
  const box = target.getBoundingClientRect();
  return box.bottom <= window.innerHeight + 80 && box.bottom >= 0;
}

function showButton(show) {
  if (show === follow.shown) return;
  follow.shown = show;
  for (const fn of follow.listeners) fn(show);
}

// `fn(shown)` whenever the "Jump to live" button should appear or disappear.
export function onJumpChange(fn) {
  follow.listeners.add(fn);
  fn(follow.shown);
  return () => follow.listeners.delete(fn);
}

export function jumpToLive() {
  const target = liveTarget();
  follow.on = true;
  showButton(false);
  if (target) target.scrollIntoView({ block: "end", behavior: "auto" });
}

// The reader is pressing a button or writing in a field: following waits, so the page never moves under a
// press (a click whose press and release land on different elements clicks neither) or a comment being typed.
let pressed = false;
window.addEventListener("pointerdown", () => (pressed = true), { capture: true, passive: true });
for (const name of ["pointerup", "pointercancel"]) {
  window.addEventListener(name, () => (pressed = false), { capture: true, passive: true });
}
const busy = () => pressed || !!document.activeElement?.matches?.("input, textarea, [contenteditable=true]");

// Called when the transcript grew: if the reader follows, bring the live turn's end into view.
export function grew() {
  const streaming = document.querySelector(".rostrum-turn-live");
  if (!streaming) {
    showButton(false);
    return;
  }
  if (!follow.on && targetVisible()) follow.on = true;  // already at the live turn: nothing to jump to
  if (follow.on) {
    const box = streaming.getBoundingClientRect();
    const away = box.bottom > window.innerHeight - 8 || box.bottom < 0;
    if (away && !busy()) streaming.scrollIntoView({ block: "end" });
    showButton(false);
  } else {
    showButton(true);
  }
}

export function startFollowing(initially) {
  if (follow.started) return;
  follow.started = true;
  follow.on = initially;
  // The reader follows while the live turn's end is in view. Only the reader's own scrolling (wheel,
  // touch, keys, the scrollbar) stops it: layout shifts and scroll anchoring also fire scroll events.
  let readerScrolledAt = 0;
  for (const name of ["wheel", "touchmove", "keydown", "mousedown"]) {
    window.addEventListener(name, () => (readerScrolledAt = Date.now()), { passive: true });
  }
  window.addEventListener("scroll", () => {
    if (targetVisible()) follow.on = true;
    else if (Date.now() - readerScrolledAt < 1000) follow.on = false;
    showButton(!follow.on && !!document.querySelector(".rostrum-turn-live"));
  }, { passive: true });
  if (initially) requestAnimationFrame(() => jumpToLive());
}

window.rostrumLive = { jumpToLive, follow };
