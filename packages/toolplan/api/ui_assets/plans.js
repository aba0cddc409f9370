// /ui/plans: recent plans from /ui/data/plans (the store's listing, as GraphQL `plans`), with
// the filters and the cursor taken from this page's own query string.
"use strict";

const KEPT = ["status", "requestId", "first"];

function pageLink(params, after) {
  const query = new URLSearchParams();
  for (const name of KEPT) if (params.get(name)) query.set(name, params.get(name));
  if (after) query.set("after", after);
  const text = query.toString();
  return "/ui/plans" + (text ? "?" + text : "");
}

function row(plan) {
  const link = el("a", { href: "/ui/plans/" + encodeURIComponent(plan.planId), text: plan.planId });
  const request = el("a", {
    href: "/ui/plans?requestId=" + encodeURIComponent(plan.requestId),
    title: "Only this request's versions",
    text: plan.requestId,
  });
  return el(
    "tr",
    { "data-plan": plan.planId, "data-status": plan.status },
    el("td", {}, link),
    el("td", {}, badge(plan.status)),
    el("td", {}, request),
    el("td", { class: "query", title: plan.query || "" }, plan.query || "—"),
    el("td", { class: "num", title: plan.createdAt }, formatAge(plan.createdAt)),
    el("td", { class: "num" }, formatMs(plan.durationMs)),
  );
}

async function load() {
  const params = new URLSearchParams(location.search);
  const query = new URLSearchParams();
  for (const name of [...KEPT, "after"]) if (params.get(name)) query.set(name, params.get(name));
  document.getElementById("filter-request").value = params.get("requestId") || "";
  document.getElementById("filter-first").value = params.get("first") || "20";
  let page;
  try {
    page = await getJSON("/ui/data/plans?" + query.toString());
  } catch (error) {
    if (error instanceof AuthNeeded) { askToken(error.message, load); return; }
    showMessage(error.message);
    return;
  }
  showMessage("");
  const select = document.getElementById("filter-status");
  select.replaceChildren(el("option", { value: "", text: "any" }));
  for (const status of page.statuses) {
    select.append(el("option", { value: status, text: status, selected: status === params.get("status") }));
  }
  const body = document.querySelector("#plans tbody");
  body.replaceChildren(...page.plans.map(row));
  if (!page.plans.length) {
    body.append(el("tr", {}, el("td", { colspan: "6", text: "No plans match." })));
  }
  const next = document.getElementById("next-page");
  next.hidden = !page.nextCursor;
  if (page.nextCursor) next.href = pageLink(params, page.nextCursor);
  const first = document.getElementById("first-page");
  first.hidden = !params.get("after");
  first.href = pageLink(params, null);
  document.body.dataset.loaded = "true";
}

load();
