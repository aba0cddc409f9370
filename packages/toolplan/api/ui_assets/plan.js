// /ui/plans/{planId}: the plan's DAG (boxes placed by the server from the analysis layers), its
// timeline, and live updates from the GraphQL stepEvents subscription. Each event repaints its
// step at once, then the page re-reads /ui/data/plans/{planId} for outputs, durations and items.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const PLAN_ID = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop());
const EVENTS = `subscription($id: String!) {
  stepEvents(planId: $id) { kind stepId attempt item durationMs error cached usedFallback }
}`;
const STATE_OF_EVENT = {
  started: "running", retrying: "running", fallback: "running", succeeded: "succeeded",
  failed: "failed", skipped: "skipped", cancelled: "cancelled", waiting: "waiting_approval",
  denied: "denied",
};

let view = null;
let selected = null;
let refetching = null;
// Items of a map read beyond the first page the plan's data holds, per step: { items, next }.
// A long map is read a page at a time, when someone asks for more.
const moreItems = {};

// A plan that is not running here (waiting for a person, queued for a worker) is looked at
// again after LOOK_FIRST_MS, then twice as long each time nothing changed, up to LOOK_MAX_MS;
// a change starts over. A hidden page does not look at all until it is shown again, and a
// finished plan is never looked at again. (It was once a second, ~3 requests a second, for as
// long as the page stayed open.)
const LOOK_FIRST_MS = 1000;
const LOOK_MAX_MS = 15000;

// The wait before the next look, in ms; null: none, the plan is finished.
function nextLookDelay(previousMs, { changed, finished }) {
  if (finished) return null;
  if (changed || !previousMs) return LOOK_FIRST_MS;
  return Math.min(previousMs * 2, LOOK_MAX_MS);
}

// Resolves after `ms`, and not before the page is visible.
async function pause(ms) {
  await new Promise((resolve) => setTimeout(resolve, ms));
  while (document.hidden) {
    await new Promise((resolve) =>
      document.addEventListener("visibilitychange", resolve, { once: true }));
  }
}

function fingerprint(plan) {
  return JSON.stringify([plan.status, plan.steps.map((step) => [step.id, step.state, step.attempts])]);
}

function setLive(state, text) {
  document.body.dataset.live = state;
  document.getElementById("live").textContent = text;
}

function svg(tag, attributes, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (name === "text") node.textContent = value;
    else if (value !== null && value !== undefined) node.setAttribute(name, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function clip(text, length) {
  text = String(text);
  return text.length > length ? text.slice(0, length - 1) + "…" : text;
}

function stateText(step) {
  let text = step.state.replace(/_/g, " ");
  if (step.items) text += ` · ${step.items.done}/${step.items.total ?? "?"} items`;
  return text;
}

function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

// A forEach step's attempts are the tool calls over all its items: "2 attempts" for two items
// that each ran once would read as a retry. Each item's attempts are in its row of the details.
function attemptsText(step) {
  if (step.forEach) return `${plural(step.attempts, "call")} for ${plural(step.items.total ?? "?", "item")}`;
  return plural(step.attempts, "attempt");
}

function factsText(step) {
  const parts = [];
  if (step.attempts) parts.push(attemptsText(step));
  if (step.durationMs !== null && step.durationMs !== undefined) parts.push(formatMs(step.durationMs));
  return parts.concat(step.marks).join(" · ");
}

function describeStep(step) {
  const facts = factsText(step);
  return `Step ${step.id}, tool ${step.tool}, ${stateText(step)}` +
    (facts ? ", " + facts : "") + (step.critical ? ", on the critical path" : "");
}

function renderNode(step) {
  const box = view.graph.nodes[step.id];
  const [fill, stroke] = view.colours[step.state] || view.colours["pending"];
  const group = svg("g", {
    class: "node" + (selected === step.id ? " selected" : ""),
    "data-step": step.id,
    "data-state": step.state,
    tabindex: "0",
    role: "button",
    "aria-label": describeStep(step),
  });
  const x = box.x + 10;
  group.append(
    svg("title", { text: describeStep(step) }),
    svg("rect", {
      x: box.x, y: box.y, width: box.width, height: box.height, rx: 8,
      fill, stroke, "stroke-width": step.critical ? 3 : 1.5,
    }),
    svg("text", { class: "title", x, y: box.y + 20, text: clip(step.id, 26) }),
    svg("text", { x, y: box.y + 38, text: clip(step.tool, 30) }),
    svg("text", { class: "state", x, y: box.y + 56, text: clip(stateText(step), 30) }),
    svg("text", { class: "facts", x, y: box.y + 74, text: clip(factsText(step), 32) }),
  );
  group.addEventListener("click", () => select(step.id));
  group.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); select(step.id); }
  });
  return group;
}

function renderGraph() {
  const dag = document.getElementById("dag");
  const { width, height } = view.graph;
  dag.setAttribute("width", width);
  dag.setAttribute("height", height);
  dag.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const defs = svg("defs", {},
    svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto" },
      svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#52525b" })));
  const edges = view.graph.edges.map((edge) => svg("path", {
    class: "edge" + (edge.critical ? " critical" : "") + (edge.order ? " order" : ""),
    d: edge.path, "marker-end": "url(#arrow)",
    "data-from": edge.from, "data-to": edge.to,
  }, ...(edge.order ? [svg("title", { text: `order on ${edge.order.join(", ")}: ${edge.to} runs after ${edge.from}` })] : [])));
  dag.replaceChildren(defs, ...edges, ...view.steps.map(renderNode));
}

function repaintStep(step) {
  const old = document.querySelector(`#dag .node[data-step="${CSS.escape(step.id)}"]`);
  if (old) old.replaceWith(renderNode(step));
}

function pre(value, className) {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  return el("pre", { class: className }, text);
}

function renderDetails() {
  const aside = document.getElementById("details");
  const step = view && view.steps.find((s) => s.id === selected);
  if (!step) {
    aside.replaceChildren(el("h2", { text: "Step details" }), el("p", { class: "hint", text: "Select a step." }));
    return;
  }
  const facts = el("dl", {},
    el("dt", { text: "Tool" }), el("dd", { text: step.tool }),
    el("dt", { text: "State" }), el("dd", {}, badge(step.state.replace(/_/g, " "))),
    el("dt", { text: step.forEach ? "Tool calls" : "Attempts" }),
    el("dd", { text: step.forEach ? attemptsText(step) : String(step.attempts) }),
    el("dt", { text: "Duration" }), el("dd", { text: formatMs(step.durationMs) }));
  if (step.items) facts.append(el("dt", { text: "Items" }), el("dd", { text: `${step.items.done}/${step.items.total ?? "?"} done, ${step.items.failed} failed` }));
  if (step.marks.length) facts.append(el("dt", { text: "Marks" }), el("dd", { text: step.marks.join(", ") }));
  if (step.fallbackTool) facts.append(el("dt", { text: "Fallback" }), el("dd", { text: step.fallbackTool }));
  if (step.reason) facts.append(el("dt", { text: "Reason" }), el("dd", { text: step.reason }));
  if (step.critical) facts.append(el("dt", { text: "Critical path" }), el("dd", { text: "yes" }));
  if (step.after && step.after.length) facts.append(el("dt", { text: "Runs after" }), el("dd", { text: step.after.map((a) => `${a.step} (order on ${a.on.join(", ")})`).join(", ") }));
  const parts = [el("h2", { id: "details-title", text: "Step " + step.id }), facts];
  if (step.resolvedParameters !== null && step.resolvedParameters !== undefined) {
    parts.push(el("h3", { text: "Arguments" }), pre(step.resolvedParameters, "arguments"));
  } else if (step.pendingArguments !== null && step.pendingArguments !== undefined) {
    parts.push(el("h3", { text: "Arguments (waiting for approval)" }), pre(step.pendingArguments, "arguments"));
  } else if (step.forEach && step.itemCounts) {
    // The list is known: each item's call resolved these with its $item and $index.
    parts.push(el("h3", { text: "Parameters (resolved for each item)" }), pre(step.parameters, "arguments"));
  } else {
    parts.push(el("h3", { text: "Parameters (not resolved yet)" }), pre(step.parameters, "arguments"));
  }
  if (step.error) parts.push(el("h3", { text: "Error" }), pre(step.error, "error-text"));
  if (step.output !== null && step.output !== undefined) parts.push(el("h3", { text: "Output" }), pre(step.output, "output"));
  if (step.itemDetails && step.itemDetails.length) {
    const more = moreItems[step.id];
    const shown = step.itemDetails.concat(more ? more.items : []);
    const next = more ? more.next : step.itemsNext;
    const rows = shown.map((item) => el("tr", {},
      el("td", { text: String(item.index) }), el("td", { text: item.status }),
      el("td", { text: String(item.attempts) }),
      el("td", {}, item.error ? el("span", { class: "error-text", text: item.error }) :
        clip(item.output === undefined ? "" : JSON.stringify(item.output), 80))));
    const counts = step.itemCounts ? Object.entries(step.itemCounts).map(([state, n]) => `${n} ${state.replace(/_/g, " ")}`).join(", ") : "";
    parts.push(el("h3", { text: "Items" }));
    if (counts) parts.push(el("p", { class: "hint item-counts", text: counts }));
    parts.push(el("table", {},
      el("thead", {}, el("tr", {}, el("th", { text: "#" }), el("th", { text: "State" }), el("th", { text: "Attempts" }), el("th", { text: "Output or error" }))),
      el("tbody", {}, ...rows)));
    if (next !== null && next !== undefined) {
      const button = el("button", { type: "button", class: "more-items", text: `Show more items (${shown.length} of ${step.items ? step.items.total : "?"} shown)` });
      button.addEventListener("click", () => loadMoreItems(step.id, next, button));
      parts.push(button);
    }
  }
  aside.replaceChildren(...parts);
}

async function loadMoreItems(stepId, offset, button) {
  button.disabled = true;
  try {
    const page = await getJSON(`/ui/data/plans/${encodeURIComponent(PLAN_ID)}/steps/${encodeURIComponent(stepId)}/items?offset=${offset}&limit=100`);
    const before = moreItems[stepId] ? moreItems[stepId].items : [];
    moreItems[stepId] = { items: before.concat(page.items), next: page.nextOffset };
    showMessage("");
  } catch (error) {
    showMessage(error.message);
  }
  renderDetails();
}

function select(stepId) {
  selected = stepId;
  for (const node of document.querySelectorAll("#dag .node")) {
    node.classList.toggle("selected", node.dataset.step === stepId);
  }
  renderDetails();
}

function renderSummary() {
  document.title = `${view.planId} · ${view.status} · toolplan`;
  document.getElementById("crumb-plan").textContent = view.planId;
  document.getElementById("plan-id").textContent = view.planId;
  const status = document.getElementById("plan-status");
  status.replaceWith(Object.assign(badge(view.status), { id: "plan-status" }));
  document.getElementById("plan-query").textContent = view.query || "(no query: a submitted plan)";
  const request = document.getElementById("plan-request");
  request.textContent = view.requestId;
  request.href = "/ui/plans?requestId=" + encodeURIComponent(view.requestId);
  document.getElementById("plan-created").textContent = new Date(view.createdAt).toLocaleString();
  const estimate = view.estimate;
  document.getElementById("plan-estimate").textContent = estimate
    ? `${formatMs(estimate.durationMs)} (${estimate.basis})` +
      (estimate.costUsd !== null && estimate.costUsd !== undefined ? `, $${estimate.costUsd}` : "")
    : "none";
  document.getElementById("plan-took").textContent =
    view.actualDurationMs === null ? (view.finished ? "–" : "still running") : formatMs(view.actualDurationMs);
  // streamed execution: steps whose calls started while the model wrote the plan
  const adopted = (view.earlyStarts || []).filter((entry) => entry.status === "adopted");
  const early = document.getElementById("plan-early");
  early.hidden = document.getElementById("plan-early-label").hidden = adopted.length === 0;
  early.textContent = adopted.length === 0 ? "" :
    `${adopted.length} step(s), about ${formatMs(view.earlySavedMs || 0)} saved against plan-then-execute`;
  const error = document.getElementById("plan-error");
  error.hidden = !view.error;
  error.textContent = view.error || "";
  const list = document.querySelector("#versions ol");
  list.replaceChildren(...view.versions.map((version) => {
    const label = `v${version.version}`;
    const link = version.current
      ? el("span", { class: "current", "aria-current": "page", text: `${label} ${version.planId}` })
      : el("a", { href: "/ui/plans/" + encodeURIComponent(version.planId), text: `${label} ${version.planId}` });
    const item = el("li", { "data-plan": version.planId }, link, " ", badge(version.status));
    if (version.replanOf) {
      const replaced = view.versions.find((v) => v.planId === version.replanOf);
      item.append(el("span", { class: "replan", text:
        ` replans ${replaced ? "v" + replaced.version : version.replanOf}` +
        (version.replanReason ? `: ${version.replanReason}` : "") }));
    }
    return item;
  }));
  document.getElementById("summary").hidden = false;
}

function renderTimeline() {
  const gantt = document.getElementById("gantt");
  const { rows, spanMs, estimateMs, estimateOffScale } = view.timeline;
  if (!rows.length) {
    gantt.replaceChildren(el("p", { class: "hint", text: "No step has started yet." }));
    return;
  }
  const percent = (ms) => `${(100 * ms) / spanMs}%`;
  const children = rows.map((row) => {
    const bar = el("div", {
      class: "bar" + (row.critical ? " critical" : "") + (row.running ? " running" : ""),
      "data-step": row.id,
      title: `${row.id}: ${formatMs(row.startMs)} → ${formatMs(row.endMs)} (${row.state})`,
    });
    const [fill] = view.colours[row.state] || view.colours["pending"];
    bar.style.left = percent(row.startMs);
    bar.style.width = percent(row.endMs - row.startMs);
    bar.style.background = fill;
    const track = el("div", { class: "track" }, bar,
      el("span", { class: "sr-only", text: `${row.state}, from ${formatMs(row.startMs)} to ${formatMs(row.endMs)}` +
        (row.critical ? ", on the critical path" : "") }));
    if (estimateMs !== null && !estimateOffScale) {
      const marker = el("div", { class: "estimate", "aria-hidden": "true" });
      marker.style.left = percent(estimateMs);
      track.append(marker);
    }
    return el("div", { class: "row" },
      el("span", { class: "label" + (row.critical ? " critical" : ""), title: row.id, text: (row.critical ? "★ " : "") + row.id }), track);
  });
  children.push(el("div", { class: "axis" }, el("span"),
    el("div", { class: "ticks" }, el("span", { text: "0" }), el("span", { text: formatMs(spanMs) }))));
  children.push(el("p", { class: "estimate-note", text:
    (estimateMs === null ? "No estimate. " : estimateOffScale
      ? `The estimate, ${formatMs(estimateMs)}, is off this scale (the steps span ${formatMs(spanMs)}). `
      : `Dashed line: the estimate, ${formatMs(estimateMs)}. `) +
    "★ and thick bars: the critical path." }));
  gantt.replaceChildren(...children);
}

function render() {
  renderSummary();
  renderGraph();
  renderTimeline();
  renderDetails();
}

async function load() {
  view = await getJSON("/ui/data/plans/" + encodeURIComponent(PLAN_ID));
  showMessage("");
  render();
}

// Re-read the plan once the events of a moment have arrived (outputs, durations, items).
function refetchSoon() {
  if (refetching) return;
  refetching = setTimeout(async () => {
    refetching = null;
    try { await load(); } catch (error) { showMessage(error.message); }
  }, 150);
}

function apply(event) {
  const step = view.steps.find((s) => s.id === event.stepId);
  if (!step) return;
  if (event.item === null || event.item === undefined) {
    step.state = STATE_OF_EVENT[event.kind] || step.state;
    step.attempts = Math.max(step.attempts, event.attempt);
    if (event.durationMs !== null && event.durationMs !== undefined) step.durationMs = event.durationMs;
    if (event.error) step.error = event.error;
    repaintStep(step);
    if (selected === step.id) renderDetails();
  }
  refetchSoon();
}

async function follow() {
  let delay = 0;
  while (!view.finished) {
    const before = fingerprint(view);
    try {
      await subscribe(EVENTS, { id: PLAN_ID }, {
        onOpen: () => setLive("connected", "● live"),
        onNext: (data) => apply(data.stepEvents),
      });
    } catch (error) {
      if (error instanceof AuthNeeded) { askToken(error.message, start); return; }
      setLive("error", "live updates stopped");
      showMessage("Live updates stopped: " + error.message + ". Reload the page to try again.");
      return;
    }
    await load();
    if (!view.finished) {
      // The execution has not started, or waits for a person: listen again in a while.
      setLive("waiting", "waiting for the execution");
      const changed = fingerprint(view) !== before;
      delay = nextLookDelay(delay, { changed, finished: view.finished });
      await pause(delay);
    }
  }
  setLive("ended", "finished");
}

async function start() {
  try {
    await load();
  } catch (error) {
    if (error instanceof AuthNeeded) { askToken(error.message, start); return; }
    showMessage(error.message);
    return;
  }
  await follow();
}

start();
