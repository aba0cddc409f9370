// Shared by the plan pages: the API token, JSON requests, the stepEvents subscription over SSE,
// and formatting. No framework, no build step; the server's files only (see ui.py's CSP).
"use strict";

const TOKEN_KEY = "toolplan.apiToken";

class AuthNeeded extends Error {}

function authHeaders() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: "Bearer " + token } : {};
}

function errorMessage(body) {
  return body && body.errors && body.errors[0] ? body.errors[0].message : null;
}

// GET url as JSON, with the token; AuthNeeded on 401, Error with the API's message otherwise.
async function getJSON(url) {
  const response = await fetch(url, {
    headers: { Accept: "application/json", ...authHeaders() },
    cache: "no-store",
  });
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  if (response.status === 401) {
    throw new AuthNeeded(errorMessage(body) || "this server needs its API token");
  }
  if (!response.ok) throw new Error(errorMessage(body) || "HTTP " + response.status);
  return body;
}

// Show the token form with the reason; call retry once a token was entered.
function askToken(reason, retry) {
  const form = document.getElementById("auth");
  document.getElementById("auth-reason").textContent =
    reason + ". Enter the server's API token to see its plans.";
  form.hidden = false;
  const input = document.getElementById("auth-token");
  input.focus();
  form.onsubmit = (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    input.value = "";
    form.hidden = true;
    retry();
  };
}

function showMessage(text) {
  document.getElementById("message").textContent = text || "";
}

// A GraphQL subscription over SSE (graphql-sse, distinct connections mode: POST /graphql with
// Accept: text/event-stream), the transport `toolplan serve` offers. Calls onOpen once the
// server accepted it, onNext with each payload's data; resolves when the server completes it.
async function subscribe(query, variables, { onOpen, onNext, signal }) {
  const response = await fetch("/graphql", {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      Accept: "text/event-stream",
      ...authHeaders(),
    },
    body: JSON.stringify({ query, variables }),
    signal,
  });
  if (response.status === 401) throw new AuthNeeded("this server needs its API token");
  if (!response.ok || !response.body) {
    let body = null;
    try { body = await response.json(); } catch (e) { body = null; }
    throw new Error(errorMessage(body) || "subscription refused: HTTP " + response.status);
  }
  if (onOpen) onOpen();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (event === "complete") return;
      if (event === "next" && data.length) {
        const payload = JSON.parse(data.join("\n"));
        if (payload.errors && payload.errors.length) throw new Error(payload.errors[0].message);
        onNext(payload.data);
      }
    }
  }
}

function formatMs(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
  const minutes = Math.floor(ms / 60000);
  return minutes + " min " + Math.round((ms % 60000) / 1000) + " s";
}

function formatAge(iso) {
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 60) return Math.floor(seconds) + " s ago";
  if (seconds < 3600) return Math.floor(seconds / 60) + " min ago";
  if (seconds < 86400) return Math.floor(seconds / 3600) + " h ago";
  return Math.floor(seconds / 86400) + " d ago";
}

// An element with attributes and children (strings become text nodes: never HTML).
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child);
  }
  return node;
}

function badge(status) {
  return el("span", { class: "badge " + String(status).replace(/ /g, "_"), text: status });
}
