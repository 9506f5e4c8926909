// The Rankd console: review holds, look players up, ban and erase them, remove one of their
// entries, edit boards (their schedule, league and webhook too) and close their periods early, read
// a board's webhook deliveries, watch the service's health. Everything goes through the
// public admin API with the admin key the moderator signs in with, kept in this tab's
// sessionStorage only (nothing that outlives the tab, no cookie, never the URL). Every value
// from the service is rendered as text (textContent, text nodes): player names, ban reasons
// and a webhook's errors are free text. No framework, no build step.
"use strict";
(() => {
  const KEY_STORE = "rankd.console.key";
  const VIEWS = ["queue", "players", "boards"];
  const WINDOWS = ["all-time", "hourly", "daily", "weekly", "monthly", "scheduled", "rolling-7d"];
  const BOARD_FIELDS = ["board_id", "windows", "order", "policy", "window_policies", "max_score",
    "max_run_score", "shards", "hold_top", "grace_seconds", "retention_days", "segments",
    "score_format", "client_submits", "hooks", "schedule", "league"];
  const SCHEDULE_FIELDS = ["starts_at", "every", "duration", "ends_at"];
  const LEAGUE_NUMBERS = ["cohort_size", "promote", "relegate"];
  const $ = (id) => document.getElementById(id);
  const enc = encodeURIComponent;
  let adminKey = sessionStorage.getItem(KEY_STORE);
  let view = "queue";

  // --- the DOM, as text only ----------------------------------------------------------------
  // el("td", {class: "num", title: "..."}, "text", node): children become text nodes or
  // nodes, never markup
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name === "class") node.className = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else if (name === "disabled" || name === "checked") node[name] = Boolean(value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child !== null && child !== undefined && child !== false) {
        node.append(child instanceof Node ? child : String(child));
      }
    }
    return node;
  }

  // --- scores and times (as the live page shows them) ---------------------------------------
  const grouped = new Intl.NumberFormat();
  function formatScore(score, format) {
    const digits = { decimal_1: 1, decimal_2: 2, decimal_3: 3 }[format];
    if (digits) {
      const unit = 10 ** digits;
      return `${grouped.format(Math.floor(score / unit))}.${String(score % unit).padStart(digits, "0")}`;
    }
    if (format === "duration_ms") {
      const ms = score % 1000, total = Math.floor(score / 1000);
      const s = total % 60, m = Math.floor(total / 60) % 60, h = Math.floor(total / 3600);
      const tail = `${String(s).padStart(2, "0")}.${String(ms).padStart(3, "0")}`;
      return h ? `${h}:${String(m).padStart(2, "0")}:${tail}` : `${m}:${tail}`;
    }
    return grouped.format(score);
  }
  const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  function ago(iso) {
    let value = Math.round((new Date(iso).getTime() - Date.now()) / 1000);
    for (const [size, unit] of [[60, "second"], [60, "minute"], [24, "hour"], [7, "day"], [4.35, "week"], [12, "month"]]) {
      if (Math.abs(value) < size) return relative.format(Math.round(value), unit);
      value /= size;
    }
    return relative.format(Math.round(value), "year");
  }
  const local = (iso) => (iso ? new Date(iso).toLocaleString() : "–");
  const boardFormat = (boardId) => (state.boards.get(boardId) || {}).score_format || "integer";
  const score = (boardId, value) => formatScore(value, boardFormat(boardId));

  // --- the API ---------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, code, message) { super(message); this.status = status; this.code = code; }
  }
  async function call(method, path, body, key = adminKey) {
    const headers = {};
    if (key) headers.Authorization = `Bearer ${key}`;
    const init = { method, headers, cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch {
      throw new ApiError(0, "network", "The service did not answer: is it running?");
    }
    const text = await response.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { data = null; }
    if (!response.ok) {
      const error = (data && data.error) || { code: `http_${response.status}`, message: text.slice(0, 200) || response.statusText };
      if (response.status === 401 && key === adminKey && adminKey) signOut("The service no longer accepts this key: sign in again.");
      throw new ApiError(response.status, error.code, error.message);
    }
    return data;
  }
  // fn over items, at most `limit` calls at a time, answers in order
  async function pool(items, limit, fn) {
    const out = new Array(items.length);
    let next = 0;
    const worker = async () => { while (next < items.length) { const i = next++; out[i] = await fn(items[i], i); } };
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
    return out;
  }
  const chunks = (list, size) => Array.from({ length: Math.ceil(list.length / size) }, (_, i) => list.slice(i * size, i * size + size));

  const state = { boards: new Map(), profiles: new Map(), tops: new Map(), ranks: new Map() };
  function cached(map, key, load) {
    if (!map.has(key)) map.set(key, load().catch((err) => { map.delete(key); throw err; }));
    return map.get(key);
  }
  const profileOf = (id) => cached(state.profiles, id, () => call("GET", `/v1/players/${enc(id)}`));
  const topOf = (board, window, period) => cached(state.tops, `${board}|${window}|${period}`,
    () => call("GET", `/v1/boards/${enc(board)}/top?n=10&window=${enc(window)}&period=${enc(period)}`));
  async function loadBoards() {
    const { boards } = await call("GET", "/v1/boards");
    state.boards = new Map(boards.map((b) => [b.board_id, b]));
    return boards;
  }
  // one player's standings on every board, in `window` (null: each board's first window),
  // public or (viewer) their own view: held runs and a ban included
  async function standingsOf(playerId, boardIds, window, viewer) {
    const found = await pool(chunks(boardIds, 100), 4, (ids) => {
      const query = new URLSearchParams({ boards: ids.join(",") });
      if (window) query.set("window", window);
      if (viewer) query.set("viewer", playerId);
      return call("GET", `/v1/players/${enc(playerId)}/standings?${query}`);
    });
    return found.flatMap((answer) => answer.standings);
  }

  // --- little widgets ----------------------------------------------------------------------
  let toastTimer = null;
  function toast(text, kind = "ok") {
    const node = $("toast");
    node.textContent = text;
    node.className = `toast ${kind}`;
    node.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { node.hidden = true; }, 5000);
  }
  function showError(node, err) {
    node.textContent = err ? (err.code ? `${err.message} (${err.code})` : String(err.message || err)) : "";
    node.hidden = !err;
  }
  // a modal confirmation; with `expect`, the person types it first (erasing, deleting)
  function confirmAction({ title, text, expect = null, ok = "Confirm", danger = false }) {
    return new Promise((resolve) => {
      const dialog = $("confirm"), okButton = $("confirm-ok"), typed = $("confirm-type");
      const stop = new AbortController(), signal = stop.signal;
      $("confirm-title").textContent = title;
      $("confirm-text").textContent = text;
      $("confirm-type-label").hidden = !expect;
      $("confirm-expect").textContent = expect || "";
      typed.value = "";
      okButton.textContent = ok;
      okButton.className = danger ? "danger" : "";
      okButton.disabled = Boolean(expect);
      const finish = (answer) => { stop.abort(); dialog.close(); resolve(answer); };
      typed.addEventListener("input", () => { okButton.disabled = typed.value !== expect; }, { signal });
      $("confirm-form").addEventListener("submit", (e) => { e.preventDefault(); if (!okButton.disabled) finish(true); }, { signal });
      $("confirm-cancel").addEventListener("click", () => finish(false), { signal });
      dialog.addEventListener("cancel", (e) => { e.preventDefault(); finish(false); }, { signal });
      dialog.showModal();
      (expect ? typed : okButton).focus();
    });
  }

  // --- signing in ------------------------------------------------------------------------------
  $("signin-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const candidate = $("key").value.trim();
    const error = $("signin-error");
    if (!candidate) return showError(error, { message: "Paste an admin key." });
    try {
      await call("GET", "/v1/bans?limit=1", undefined, candidate);  // an admin-only read
    } catch (err) {
      const why = { 401: "The service does not accept this key.", 403: "This key is not an admin key (a server key or a player token cannot moderate)." }[err.status];
      return showError(error, why ? { message: why } : err);
    }
    adminKey = candidate;
    sessionStorage.setItem(KEY_STORE, candidate);
    $("key").value = "";
    showError(error, null);
    enter();
  });
  $("signout").addEventListener("click", () => signOut(null));
  function signOut(message) {
    adminKey = null;
    sessionStorage.removeItem(KEY_STORE);
    for (const map of [state.profiles, state.tops, state.ranks]) map.clear();
    queue.items = [];
    queue.selected.clear();
    $("app").hidden = true;
    $("tabs").hidden = true;
    $("signout").hidden = true;
    $("signin").hidden = false;
    $("player-card").hidden = true;
    showError($("signin-error"), message ? { message } : null);
    $("key").focus();
  }
  function enter() {
    $("signin").hidden = true;
    $("app").hidden = false;
    $("tabs").hidden = false;
    $("signout").hidden = false;
    route();
  }
  function route() {
    if (!adminKey) return;
    const [name, arg] = location.hash.slice(1).split("/");
    view = VIEWS.includes(name) ? name : "queue";
    for (const v of VIEWS) $(`view-${v}`).hidden = v !== view;
    for (const tab of document.querySelectorAll("#tabs a")) {
      if (tab.dataset.view === view) tab.setAttribute("aria-current", "page");
      else tab.removeAttribute("aria-current");
    }
    if (view === "queue") loadQueue();
    if (view === "players") {
      loadBans(false);
      if (arg) lookup(decodeURIComponent(arg));
    }
    if (view === "boards") loadBoardList();
  }
  window.addEventListener("hashchange", route);

  // --- health: /readyz and /metrics (public), every 5 s -----------------------------------------
  function parseMetrics(text) {
    const values = new Map();
    for (const line of text.split("\n")) {
      const m = /^([A-Za-z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
      if (m) values.set(m[1] + (m[2] || ""), Number(m[3]));
    }
    return values;
  }
  function setPill(node, text, level) { node.textContent = text; node.className = `pill ${level}`; }
  async function health() {
    const why = [];
    try {
      const ready = await (await fetch("/readyz", { cache: "no-store" })).json();
      const level = { ready: "ok", degraded: "warn" }[ready.status] || "bad";
      setPill($("h-state"), ready.status, level);
      why.push(...(ready.reasons || []));
      for (const [name, check] of Object.entries(ready.checks || {})) if (check !== "ok") why.push(`${name}: ${check}`);
      for (const [name, how] of Object.entries(ready.recovering || {})) why.push(`${name} recovering: ${how}`);
      const c = ready.consumer;
      $("h-lag").textContent = c ? `${grouped.format(c.pending + c.ack_pending)} msgs${c.oldest_unacked_seconds ? `, ${c.oldest_unacked_seconds.toFixed(1)} s` : ""}` : "n/a";
      $("h-parked").textContent = c ? grouped.format(c.parked) : "n/a";
      $("h-parked").className = c && c.parked ? "warn" : "";
    } catch {
      setPill($("h-state"), "unreachable", "bad");
      why.push("the service does not answer /readyz");
    }
    try {
      const values = parseMetrics(await (await fetch("/metrics", { cache: "no-store" })).text());
      const ratio = values.get("rankd_redis_memory_used_ratio");
      const node = $("h-redis");
      node.textContent = ratio === undefined ? "n/a" : ratio === 0 ? "no limit" : `${(ratio * 100).toFixed(1)} % of max`;
      node.className = ratio > 0.95 ? "bad" : ratio > 0.8 ? "warn" : "";
    } catch {
      $("h-redis").textContent = "n/a";
    }
    $("h-why").textContent = why.join(" · ");
    $("h-why").hidden = !why.length;
  }

  // --- the review queue ------------------------------------------------------------------------
  const queue = { items: [], cursor: 0, selected: new Set(), rows: new Map(), loading: false, busy: false, detailToken: 0, decisions: 0 };
  // `quiet` (the periodic refresh): keep the caches, and leave the list and the pane
  // alone when the same runs still wait
  async function loadQueue(quiet = false) {
    if (queue.loading || queue.busy || !adminKey) return;
    queue.loading = true;
    const decisions = queue.decisions;
    try {
      const boards = await loadBoards();
      const answers = await pool(boards, 6, (b) => call("GET", `/v1/boards/${enc(b.board_id)}/holds`)
        .catch((err) => { if (err.code === "board_not_found") return { board_id: b.board_id, holds: [] }; throw err; }));
      const runs = new Map(), truncated = [];
      for (const answer of answers) {
        if (answer.holds.length >= 1000) truncated.push(answer.board_id);
        for (const h of answer.holds) {
          const key = `${answer.board_id}\u0000${h.run_id}`;
          if (!runs.has(key)) runs.set(key, { key, board_id: answer.board_id, run_id: h.run_id, player_id: h.player_id, score: h.score, ended_at: h.ended_at, windows: [] });
          runs.get(key).windows.push({ window: h.window, period: h.period });
        }
      }
      if (decisions !== queue.decisions) return;  // read before a decision: out of date
      const same = quiet && runs.size === queue.items.length && queue.items.every((i) => runs.has(i.key));
      const current = queue.items[queue.cursor];
      if (!same) queue.items = [...runs.values()].sort((a, b) => (a.ended_at === b.ended_at ? (a.key < b.key ? -1 : 1) : a.ended_at < b.ended_at ? -1 : 1));
      const kept = current ? queue.items.findIndex((i) => i.key === current.key) : -1;
      queue.cursor = kept >= 0 ? kept : Math.min(queue.cursor, Math.max(0, queue.items.length - 1));
      for (const key of [...queue.selected]) if (!runs.has(key)) queue.selected.delete(key);
      if (!quiet) {
        state.tops.clear();
        state.ranks.clear();
        state.profiles.clear();
      }
      $("queue-meta").textContent = `${queue.items.length} held ${queue.items.length === 1 ? "run" : "runs"} on ${boards.length} ${boards.length === 1 ? "board" : "boards"}, oldest first` +
        (truncated.length ? ` (only the first 1,000 holds of ${truncated.join(", ")})` : "");
      if (!same) renderQueue();
    } catch (err) {
      $("queue-meta").textContent = `Could not load the holds: ${err.message}`;
    } finally {
      queue.loading = false;
    }
  }
  function renderQueue() {
    const body = $("queue-rows");
    queue.rows.clear();
    body.replaceChildren(...queue.items.map((item, i) => {
      const row = el("tr", { "data-key": item.key, "data-run": item.run_id, onclick: (e) => {
        if (e.target.closest(".sel")) toggle(item.key); else moveTo(i);
      } },
      el("td", { class: "sel" }, el("span", { class: "box" })),
      el("td", { title: local(item.ended_at) }, ago(item.ended_at)),
      el("td", { class: "board" }, item.board_id),
      el("td", { class: "player" }, el("span", { class: "name" }, item.player_id), el("span", { class: "pid" }, "")),
      el("td", { class: "num" }, score(item.board_id, item.score)),
      el("td", { class: "muted" }, item.windows.map((w) => w.window).join(", ")),
      el("td", { class: "num vs" }, "…"));
      queue.rows.set(item.key, row);
      return row;
    }));
    $("queue-empty").hidden = queue.items.length > 0;
    $("queue-count").textContent = String(queue.items.length);
    paintCursor();
    // names and "vs #1" for the first rows; the rest as the cursor reaches them
    for (const item of queue.items.slice(0, 100)) fillRow(item);
  }
  async function fillRow(item) {
    const row = () => queue.rows.get(item.key);
    profileOf(item.player_id).then((p) => {
      const r = row();
      if (!r) return;
      r.querySelector(".name").textContent = p.name ?? item.player_id;
      r.querySelector(".pid").textContent = p.name ? item.player_id : "";
      if (p.banned) r.classList.add("banned");
    }).catch(() => {});
    try {
      const w = item.windows[0];
      const vs = beyond(item.board_id, item.score, await topOf(item.board_id, w.window, w.period));
      const cell = row() && row().querySelector(".vs");
      if (!cell) return;
      cell.textContent = vs === null ? "no #1 yet" : percent(vs);
      cell.className = `num vs ${vs !== null && vs > 0.5 ? "far" : vs !== null && vs > 0 ? "above" : ""}`;
    } catch { /* the detail pane says why */ }
  }
  // how far past the public #1 a score is, as a share of the #1's score (> 0: better)
  function beyond(boardId, value, top, pick = (entries) => entries[0]) {
    const best = top.entries.length ? pick(top.entries).score : null;
    if (best === null) return null;
    const asc = (state.boards.get(boardId) || {}).order === "asc";
    if (best === 0) return value === 0 ? 0 : asc ? -Infinity : Infinity;
    return asc ? (best - value) / best : (value - best) / best;
  }
  const median = (entries) => entries[Math.floor((entries.length - 1) / 2)];
  const percent = (share) => (Number.isFinite(share) ? `${share > 0 ? "+" : share < 0 ? "−" : "±"}${grouped.format(Math.round(Math.abs(share) * 100))} %` : "∞");

  function paintCursor() {
    queue.items.forEach((item, i) => {
      const row = queue.rows.get(item.key);
      row.classList.toggle("cursor", i === queue.cursor);
      row.classList.toggle("selected", queue.selected.has(item.key));
    });
    const n = queue.selected.size;
    $("queue-approve").textContent = n ? `Approve ${n} (a)` : "Approve (a)";
    $("queue-reject").textContent = n ? `Reject ${n} (r)` : "Reject (r)";
    $("queue-approve").disabled = $("queue-reject").disabled = !queue.items.length;
    renderDetail();
  }
  function moveTo(i) {
    if (!queue.items.length) return;
    queue.cursor = Math.max(0, Math.min(queue.items.length - 1, i));
    paintCursor();
    const item = queue.items[queue.cursor];
    queue.rows.get(item.key).scrollIntoView({ block: "nearest" });
    fillRow(item);
  }
  function toggle(key = (queue.items[queue.cursor] || {}).key) {
    if (!key) return;
    if (queue.selected.has(key)) queue.selected.delete(key); else queue.selected.add(key);
    paintCursor();
  }

  async function renderDetail() {
    const pane = $("queue-detail"), token = ++queue.detailToken;
    const item = queue.items[queue.cursor];
    if (!item) {
      pane.replaceChildren(el("p", { class: "muted" }, "Nothing to review."));
      return;
    }
    const board = state.boards.get(item.board_id) || {};
    const title = el("h2", {}, item.player_id);
    const status = el("span", { class: "pill" }, "");
    const context = el("div", { class: "context" }, el("p", { class: "muted" }, "Loading the context…"));
    pane.replaceChildren(
      el("div", { class: "player-head" }, title, status),
      el("dl", { class: "facts" },
        el("dt", {}, "Player id"), el("dd", {}, el("code", {}, item.player_id)),
        el("dt", {}, "Board"), el("dd", {}, `${item.board_id} (${board.order === "asc" ? "lower" : "higher"} is better)`),
        el("dt", {}, "Run"), el("dd", {}, el("code", {}, item.run_id)),
        el("dt", {}, "Score"), el("dd", { class: "big" }, score(item.board_id, item.score)),
        el("dt", {}, "Ended"), el("dd", {}, `${local(item.ended_at)} (${ago(item.ended_at)})`)),
      context,
      el("div", { class: "actions" },
        el("button", { type: "button", onclick: () => decide(true, [item]) }, "Approve"),
        el("button", { type: "button", class: "danger", onclick: () => decide(false, [item]) }, "Reject"),
        el("a", { class: "button ghost", href: `#players/${enc(item.player_id)}` }, "Open the player (o)")));
    const stale = () => token !== queue.detailToken;
    profileOf(item.player_id).then((p) => {
      if (stale()) return;
      title.textContent = p.name ?? "(no name set)";
      setPill(status, p.banned ? "banned" : "not banned", p.banned ? "bad" : "ok");
    }).catch(() => {});
    try {
      const windows = await Promise.all(item.windows.map(async (w) => {
        const [top, rank] = await Promise.all([
          topOf(item.board_id, w.window, w.period),
          cached(state.ranks, `${item.key}|${w.window}`, () => call("GET",
            `/v1/boards/${enc(item.board_id)}/rank-of?score=${item.score}&window=${enc(w.window)}&period=${enc(w.period)}`)),
        ]);
        return { ...w, top, rank };
      }));
      const others = await standingsOf(item.player_id, [...state.boards.keys()], null, false);
      if (stale()) return;
      const waiting = queue.items.filter((i) => i.player_id === item.player_id && i.key !== item.key).length;
      context.replaceChildren(
        el("h3", {}, "Where it would rank"),
        el("table", { class: "grid compact" },
          el("thead", {}, el("tr", {}, el("th", {}, "Window"), el("th", { class: "num" }, "Rank"),
            el("th", { class: "num" }, "#1 now"), el("th", { class: "num" }, "vs #1"), el("th", { class: "num" }, "vs top-10 median"))),
          el("tbody", {}, windows.map((w) => {
            const first = w.top.entries[0], vs = beyond(item.board_id, item.score, w.top);
            const vsMedian = beyond(item.board_id, item.score, w.top, median);
            return el("tr", { class: "rank-row" }, el("td", {}, w.period === w.window ? w.window : `${w.window} ${w.period}`),
              el("td", { class: "num" }, `#${grouped.format(w.rank.rank)} of ${grouped.format(w.rank.total)} now`),
              el("td", { class: "num" }, first ? score(item.board_id, first.score) : "–"),
              el("td", { class: `num ${vs > 0.5 ? "far" : vs > 0 ? "above" : ""}` }, vs === null ? "no entries" : percent(vs)),
              el("td", { class: "num" }, vsMedian === null ? "–" : percent(vsMedian)));
          }))),
        el("h3", {}, "The player's public entries"),
        others.length
          ? el("ul", { class: "entries" }, others.map((s) => el("li", {}, el("b", {}, s.board_id), ` · ${s.window} · #${grouped.format(s.rank)} of ${grouped.format(s.total)} · ${score(s.board_id, s.score)}`)))
          : el("p", { class: "muted" }, "None on any board's current period."),
        el("p", { class: "muted" }, waiting ? `${waiting} more of their runs wait in this queue.` : "No other run of theirs waits for review."));
    } catch (err) {
      if (!stale()) context.replaceChildren(el("p", { class: "error" }, `Could not load the context: ${err.message}`));
    }
  }

  async function decide(approve, items = null) {
    if (queue.busy) return;
    const targets = items || (queue.selected.size ? queue.items.filter((i) => queue.selected.has(i.key)) : [queue.items[queue.cursor]].filter(Boolean));
    if (!targets.length) return;
    const verb = approve ? "Approve" : "Reject", action = approve ? "approve" : "reject";
    if (targets.length > 1 && !(await confirmAction({
      title: `${verb} ${targets.length} held runs?`,
      text: approve ? "Each is published in every window it waits in." : "Each is discarded; a rejected run cannot be brought back.",
      ok: verb, danger: !approve,
    }))) return;
    queue.busy = true;
    queue.decisions += 1;
    let done = 0, gone = 0;
    const failed = [];
    try {
      await pool(targets, 4, async (item) => {
        try {
          await call("POST", `/v1/boards/${enc(item.board_id)}/holds/${enc(item.run_id)}/${action}`);
          done += 1;
        } catch (err) {
          if (err.code !== "hold_not_found") { failed.push(`${item.run_id}: ${err.message}`); return; }
          gone += 1;
        }
        queue.items = queue.items.filter((i) => i.key !== item.key);
        queue.selected.delete(item.key);
      });
    } finally {
      queue.busy = false;
    }
    state.tops.clear();
    state.ranks.clear();
    queue.cursor = Math.min(queue.cursor, Math.max(0, queue.items.length - 1));
    renderQueue();
    const said = `${approve ? "Approved" : "Rejected"} ${done} ${done === 1 ? "run" : "runs"}` + (gone ? `; ${gone} already decided elsewhere` : "");
    toast(failed.length ? `${said}; failed: ${failed.join("; ")}` : said, failed.length ? "bad" : "ok");
    $("queue-meta").textContent = `${queue.items.length} held ${queue.items.length === 1 ? "run" : "runs"}, oldest first`;
  }
  $("queue-approve").addEventListener("click", () => decide(true));
  $("queue-reject").addEventListener("click", () => decide(false));
  $("queue-refresh").addEventListener("click", () => loadQueue());

  document.addEventListener("keydown", (e) => {
    if (!adminKey || view !== "queue" || $("confirm").open || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target.closest && e.target.closest("input, select, textarea")) return;
    const item = queue.items[queue.cursor];
    const actions = {
      j: () => moveTo(queue.cursor + 1), ArrowDown: () => moveTo(queue.cursor + 1),
      k: () => moveTo(queue.cursor - 1), ArrowUp: () => moveTo(queue.cursor - 1),
      x: () => toggle(), a: () => decide(true), r: () => decide(false), u: () => loadQueue(),
      o: () => { if (item) location.hash = `#players/${enc(item.player_id)}`; },
      Escape: () => { queue.selected.clear(); paintCursor(); },
    };
    const act = actions[e.key];
    if (act) { e.preventDefault(); act(); }
  });

  // --- players -----------------------------------------------------------------------------------
  const player = { id: null, banned: false };
  $("lookup").addEventListener("submit", (e) => {
    e.preventDefault();
    const id = $("lookup-id").value.trim();
    if (id) location.hash = `#players/${enc(id)}`;
  });
  async function lookup(id) {
    $("lookup-id").value = id;
    showError($("lookup-error"), null);
    try {
      state.profiles.delete(id);
      const [profile, boards] = await Promise.all([profileOf(id), loadBoards()]);
      if (player.id !== id) $("p-reason").value = "";  // a reason typed for someone else
      player.id = id;
      player.banned = Boolean(profile.banned);
      $("p-name").textContent = profile.name ?? "(no name set)";
      $("p-id").textContent = id;
      const segments = Object.entries(profile.segments || {}).map(([k, v]) => `${k}:${v}`);
      $("p-segments").textContent = segments.length ? segments.join(", ") : "none";
      setPill($("p-status"), player.banned ? "banned" : "not banned", player.banned ? "bad" : "ok");
      $("p-ban").disabled = player.banned;
      $("p-unban").disabled = !player.banned;
      $("p-reason").disabled = player.banned;
      $("p-ban-note").textContent = player.banned ? "Banned: hidden from every public read." : "";
      $("p-ban-reason").hidden = true;
      $("player-card").hidden = false;
      if (player.banned) banNote(id);
      await playerEntries(id, boards);
    } catch (err) {
      $("player-card").hidden = true;
      showError($("lookup-error"), err);
    }
  }
  async function banNote(id) {
    let after = null;
    for (let page = 0; page < 20; page += 1) {
      const answer = await call("GET", `/v1/bans?limit=1000${after ? `&after=${enc(after)}` : ""}`);
      const ban = answer.bans.find((b) => b.player_id === id);
      if (ban) {
        if (player.id === id && player.banned) {
          $("p-ban-note").textContent = `Banned since ${local(ban.banned_at)} (${ago(ban.banned_at)}): hidden from every public read.`;
          // the reason a moderator typed: text only, as every value from the service
          const text = $("p-ban-reason-text");
          text.textContent = ban.reason ?? "none given";
          text.className = ban.reason == null ? "muted" : "";
          $("p-ban-reason").hidden = false;
        }
        return;
      }
      if (!answer.next) return;
      after = answer.next;
    }
  }
  async function playerEntries(id, boards) {
    const rows = [];
    for (const window of WINDOWS) {
      const ids = boards.filter((b) => b.windows.includes(window)).map((b) => b.board_id);
      if (!ids.length) continue;
      const [open, own] = await Promise.all([standingsOf(id, ids, window, false), standingsOf(id, ids, window, true)]);
      const shown = new Map(open.map((s) => [s.board_id, s]));
      for (const s of own) rows.push({ own: s, open: shown.get(s.board_id) });
    }
    if (player.id !== id) return;
    rows.sort((a, b) => (a.own.board_id === b.own.board_id ? WINDOWS.indexOf(a.own.window) - WINDOWS.indexOf(b.own.window) : a.own.board_id < b.own.board_id ? -1 : 1));
    $("p-entries").tBodies[0].replaceChildren(...rows.map(({ own, open }) => {
      const seen = !open ? (player.banned ? "hidden: banned" : "hidden: held for review") : open.score !== own.score ? "public (a better run is held)" : "public";
      return el("tr", { "data-board": own.board_id, "data-window": own.window },
        el("td", {}, own.board_id), el("td", {}, own.window), el("td", {}, own.period),
        el("td", { class: "num" }, open ? `#${grouped.format(open.rank)} of ${grouped.format(open.total)}` : "–"),
        el("td", { class: "num" }, `#${grouped.format(own.rank)}`),
        el("td", { class: "num" }, score(own.board_id, own.score)),
        el("td", { class: open ? "" : "warn" }, seen),
        el("td", {}, el("button", {
          type: "button", class: "danger ghost small",
          title: `Remove this entry from ${own.window} period ${own.period} of ${own.board_id} (a correction)`,
          onclick: (e) => removeEntry(id, own, e.currentTarget),
        }, "Remove entry…")));
    }));
    $("p-no-entries").hidden = rows.length > 0;
  }
  // one entry out of one period (a correction): that board, window and period only
  async function removeEntry(id, entry, button) {
    const { board_id: board, window, period } = entry;
    const where = `${window} period ${period} of ${board}`;
    if (!(await confirmAction({ title: `Remove ${id}'s entry from ${where}?`, text: `Their runs that ended by now stop counting in that period, in its segments and in the archive, for good (a replay or a rebuild does not bring them back); a run that ends later counts again, as a new entry. Their other windows, periods and boards keep theirs. This cannot be undone.`, ok: "Remove entry", danger: true }))) return;
    button.disabled = true;
    try {
      const query = new URLSearchParams({ window, period });
      await call("DELETE", `/v1/boards/${enc(board)}/entries/${enc(id)}?${query}`);
      toast(`Removed ${id}'s entry from ${where}`);
    } catch (err) {
      toast(`Could not remove the entry: ${err.message} (${err.code})`, "bad");
    }
    state.tops.clear();  // the queue's context reads the tops again
    state.ranks.clear();
    if (player.id === id) lookup(id);
  }
  $("p-ban").addEventListener("click", async () => {
    const id = player.id;
    // empty: a ban without a reason (no body); otherwise sent for the API to check (1..500
    // printable characters), and kept in the field if it is refused
    const reason = $("p-reason").value.trim();
    const why = reason ? ` The reason recorded, which moderators see in the list of bans: “${reason}”.` : " No reason is recorded.";
    if (!id || !(await confirmAction({ title: `Shadow-ban ${id}?`, text: `Within a second they vanish from every public read on every board. Their runs are still accepted and kept, they are not told, and lifting the ban brings everything back.${why}`, ok: "Ban", danger: true }))) return;
    try {
      await call("POST", `/v1/players/${enc(id)}/ban`, reason ? { reason } : undefined);
      if (player.id === id) $("p-reason").value = "";
      toast(`Banned ${id}`);
      lookup(id);
      loadBans(false);
    } catch (err) { toast(`Could not ban ${id}: ${err.message}`, "bad"); }
  });
  $("p-unban").addEventListener("click", async () => {
    const id = player.id;
    if (!id || !(await confirmAction({ title: `Lift the ban on ${id}?`, text: "Their entries come back on every board, including every run they made while banned.", ok: "Lift the ban" }))) return;
    try {
      await call("DELETE", `/v1/players/${enc(id)}/ban`);
      toast(`Lifted the ban on ${id}`);
      lookup(id);
      loadBans(false);
    } catch (err) { toast(`Could not lift the ban: ${err.message}`, "bad"); }
  });
  $("p-erase").addEventListener("click", async () => {
    const id = player.id;
    if (!id || !(await confirmAction({ title: `Erase ${id} everywhere?`, text: "For a privacy request: their entries on every board and in the archive, their runs, name, profile and ban are deleted, and the log's copies of their runs are securely erased. This cannot be undone.", expect: id, ok: "Erase", danger: true }))) return;
    try {
      await call("DELETE", `/v1/players/${enc(id)}`);
      toast(`Erased ${id}`);
      player.id = null;
      $("player-card").hidden = true;
      state.profiles.delete(id);
      loadBans(false);
    } catch (err) { toast(`Could not erase ${id}: ${err.message}`, "bad"); }
  });

  const bans = { next: null };
  async function loadBans(more) {
    try {
      const answer = await call("GET", `/v1/bans?limit=50${more && bans.next ? `&after=${enc(bans.next)}` : ""}`);
      const rows = answer.bans.map((b) => el("tr", {},
        el("td", {}, el("a", { href: `#players/${enc(b.player_id)}` }, b.player_id)),
        el("td", { title: b.banned_at }, `${local(b.banned_at)} (${ago(b.banned_at)})`),
        el("td", { class: b.reason == null ? "reason-text muted" : "reason-text" }, b.reason ?? "–")));
      const body = $("bans").tBodies[0];
      if (more) body.append(...rows); else body.replaceChildren(...rows);
      bans.next = answer.next;
      $("bans-more").hidden = !answer.next;
      $("bans-empty").hidden = body.rows.length > 0;
    } catch (err) {
      $("bans-empty").textContent = `Could not list the bans: ${err.message}`;
      $("bans-empty").hidden = false;
    }
  }
  $("bans-more").addEventListener("click", () => loadBans(true));
  $("bans-refresh").addEventListener("click", () => loadBans(false));

  // --- boards -----------------------------------------------------------------------------------
  const editor = { board: null };  // null: a new board
  // the periods being closed now (board|window|period): the call takes seconds, until every
  // instance of the service has the close
  const periodsClosing = new Set();
  async function loadBoardList() {
    try {
      const boards = await loadBoards();
      $("boards").tBodies[0].replaceChildren(...boards.map((b) => el("tr", {
        "data-board": b.board_id, class: editor.board && editor.board.board_id === b.board_id ? "cursor" : "", onclick: () => openEditor(b),
      },
      el("td", { class: "board" }, b.board_id), el("td", {}, b.windows.join(", "), occurrencesOf(b)),
      el("td", {}, `${b.policy} · ${b.order}`, policiesOf(b)), el("td", { class: "num" }, String(b.hold_top)),
      el("td", { class: "num" }, String(b.shards)),
      el("td", {}, b.resharding ? `resharding ${b.resharding.done}/${b.resharding.total}` : "serving"))));
      $("boards-empty").hidden = boards.length > 0;
    } catch (err) {
      $("boards-empty").textContent = `Could not list the boards: ${err.message}`;
      $("boards-empty").hidden = false;
    }
  }
  // a scheduled board's open occurrence, or its next, as a line under its windows
  function occurrencesOf(board) {
    if (!board.schedule) return null;
    const text = board.current_period ? `open: ${board.current_period.period}`
      : board.next_period ? `next: ${board.next_period.period}` : "schedule ended";
    return el("span", { class: "pid" }, text);
  }
  // the windows with a policy of their own (window_policies), as a line under the board's
  function policiesOf(board) {
    const own = Object.entries(board.window_policies || {}).map(([w, p]) => `${w}: ${p}`);
    return own.length ? el("span", { class: "pid" }, own.join(", ")) : null;
  }
  const form = $("editor");
  const input = (field) => form.querySelector(`[data-field="${field}"]`);
  const scheduleInput = (name) => form.querySelector(`[data-schedule="${name}"]`);
  const leagueInput = (name) => form.querySelector(`[data-league="${name}"]`);
  // a schedule adds the scheduled window: its box follows whether the schedule has a start
  scheduleInput("starts_at").addEventListener("input", (e) => {
    input("windows").querySelector('input[value="scheduled"]').checked = Boolean(e.target.value.trim());
  });
  function clearErrors() { for (const node of form.querySelectorAll("[data-error-for]")) showError(node, null); }
  function openEditor(board) {
    editor.board = board;
    clearErrors();
    form.hidden = false;
    $("editor-title").textContent = board ? `Board ${board.board_id}` : "New board";
    $("editor-save").textContent = board ? "Save changes" : "Create board";
    $("board-delete").hidden = !board;
    input("board_id").value = board ? board.board_id : "";
    input("board_id").disabled = Boolean(board);
    for (const box of input("windows").querySelectorAll("input")) box.checked = board ? board.windows.includes(box.value) : box.value === "all-time";
    for (const name of ["order", "policy", "score_format"]) input(name).value = board ? board[name] : input(name).options[0].value;
    for (const name of ["max_score", "max_run_score", "shards", "hold_top", "grace_seconds"]) input(name).value = board ? String(board[name]) : "";
    for (const box of form.querySelectorAll("[data-retention]")) box.value = board ? String(board.retention_days[box.dataset.retention] ?? "") : "";
    for (const box of form.querySelectorAll("[data-window-policy]")) box.value = board ? (board.window_policies || {})[box.dataset.windowPolicy] || "" : "";
    input("segments").value = board ? board.segments.join(", ") : "";
    input("client_submits").checked = Boolean(board && board.client_submits);
    const schedule = (board && board.schedule) || {};
    for (const name of SCHEDULE_FIELDS) scheduleInput(name).value = schedule[name] ?? "";
    input("hooks").value = (board && board.hooks && board.hooks.period_closed) || "";
    const league = board && board.league;
    leagueInput("window").value = league ? league.window : "weekly";
    leagueInput("tiers").value = league ? league.tiers.join(", ") : "";
    for (const name of LEAGUE_NUMBERS) leagueInput(name).value = league ? String(league[name]) : "";
    for (const row of $("boards").tBodies[0].rows) row.classList.toggle("cursor", Boolean(board) && row.dataset.board === board.board_id);
    showOccurrences(board);
    loadPeriods(board);
    loadDeliveries(board);
    (board ? input("windows").querySelector("input") : input("board_id")).focus();
  }
  // a whole number as a number; anything else as typed, for the API to refuse in its words
  const number = (text) => (/^-?\d+$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : text);
  // an object's members in one order, so an edit compares values, not the order of keys
  const canonical = (value) => JSON.stringify(value && typeof value === "object" && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : value);
  function formBody() {
    const checked = [...input("windows").querySelectorAll("input:checked")].map((b) => b.value);
    const had = editor.board ? editor.board.windows.filter((w) => checked.includes(w)) : [];
    const values = {
      // a board's windows keep their order (the first is its default), new ones after them
      windows: [...had, ...checked.filter((w) => !had.includes(w))],
      order: input("order").value, policy: input("policy").value, score_format: input("score_format").value,
      segments: input("segments").value.split(",").map((s) => s.trim()).filter(Boolean),
      client_submits: input("client_submits").checked,
    };
    for (const name of ["max_score", "max_run_score", "shards", "hold_top", "grace_seconds"]) {
      const text = input(name).value.trim();
      if (text) values[name] = number(text);
    }
    const retention = {};
    for (const box of form.querySelectorAll("[data-retention]")) if (box.value.trim()) retention[box.dataset.retention] = number(box.value.trim());
    if (Object.keys(retention).length) values.retention_days = retention;
    // a window's own policy; none chosen: the board's. Sent whole: it replaces the last one
    const policies = {};
    for (const box of form.querySelectorAll("[data-window-policy]")) if (box.value) policies[box.dataset.windowPolicy] = box.value;
    if (editor.board || Object.keys(policies).length) values.window_policies = policies;
    // the schedule as typed (an empty field: null, the API's default); every field empty:
    // none (null on an edit removes the board's)
    const typed = Object.fromEntries(SCHEDULE_FIELDS.map((name) => [name, scheduleInput(name).value.trim()]));
    const schedule = Object.values(typed).some(Boolean)
      ? Object.fromEntries(SCHEDULE_FIELDS.filter((name) => name !== "starts_at" || typed[name]).map((name) => [name, typed[name] || null]))
      : null;
    if (editor.board || schedule) values.schedule = schedule;
    // a league: its tiers, as typed; none typed: no league (an edit sends it only if changed)
    const tiers = leagueInput("tiers").value.split(",").map((t) => t.trim()).filter(Boolean);
    let league = null;
    if (tiers.length) {
      league = { window: leagueInput("window").value, tiers };
      for (const name of LEAGUE_NUMBERS) {
        const text = leagueInput(name).value.trim();
        if (text) league[name] = number(text);
      }
    }
    if (editor.board || league) values.league = league;
    // the webhook told of each closed period; empty: none (null on an edit removes it)
    const hook = input("hooks").value.trim();
    if (editor.board || hook) values.hooks = { period_closed: hook || null };
    if (!editor.board) return values;
    // an edit sends what changed only: omitted fields keep their value
    const was = {
      schedule: editor.board.schedule ?? null,
      league: editor.board.league ?? null,
      hooks: { period_closed: (editor.board.hooks || {}).period_closed ?? null },
    };
    const changed = {};
    for (const [name, value] of Object.entries(values)) {
      const now = name === "retention_days" ? { ...editor.board.retention_days, ...value } : value;
      const before = name in was ? was[name] : editor.board[name] ?? {};
      if (canonical(before) !== canonical(now)) changed[name] = value;
    }
    return changed;
  }
  // which field an API error is about: its message starts with the field's name, or names it
  function fieldOf(err) {
    const message = err.message || "";
    if (err.status === 404 && !editor.board) return "board_id";
    if (/^the window /.test(message)) return "windows";
    if (/^the policy /.test(message)) return "policy";
    const first = message.split(/[\s:]/)[0];
    if (BOARD_FIELDS.includes(first)) return first;
    let best = null, at = Infinity;
    for (const name of BOARD_FIELDS) {
      const i = message.search(new RegExp(`\\b${name}\\b`));
      if (i >= 0 && i < at) { best = name; at = i; }
    }
    return best || "_form";
  }
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearErrors();
    const id = editor.board ? editor.board.board_id : input("board_id").value.trim();
    if (!id) return showError(form.querySelector('[data-error-for="board_id"]'), { message: "Give the board an id." });
    const body = formBody();
    if (editor.board && !Object.keys(body).length) return toast("Nothing changed.");
    try {
      const saved = await call("PUT", `/v1/boards/${enc(id)}`, body);
      toast(editor.board ? `Saved ${id}` : `Created ${id}`);
      await loadBoardList();
      openEditor(saved);
    } catch (err) {
      const field = fieldOf(err);
      const slot = form.querySelector(`[data-error-for="${field}"]`);
      showError(slot, err);
      // a schedule's error names its field (schedule.every ...): that input, else its start
      const part = /\bschedule\.(\w+)/.exec(err.message || "");
      const target = field !== "schedule" ? input(field)
        : scheduleInput(part && SCHEDULE_FIELDS.includes(part[1]) ? part[1] : "starts_at");
      if (target && target.focus) target.focus();
    }
  });
  $("editor-cancel").addEventListener("click", () => { form.hidden = true; editor.board = null; loadBoardList(); });
  $("board-new").addEventListener("click", () => openEditor(null));
  $("boards-refresh").addEventListener("click", () => loadBoardList());
  $("board-delete").addEventListener("click", async () => {
    const id = editor.board && editor.board.board_id;
    if (!id || !(await confirmAction({ title: `Delete the board ${id}?`, text: "Its config, standings in every window and period, archive and holds are deleted at once; its runs are refused from then on. This cannot be undone.", expect: id, ok: "Delete", danger: true }))) return;
    try {
      await call("DELETE", `/v1/boards/${enc(id)}`);
      toast(`Deleted ${id}`);
      form.hidden = true;
      editor.board = null;
      loadBoardList();
    } catch (err) { toast(`Could not delete ${id}: ${err.message}`, "bad"); }
  });
  // a scheduled board's open occurrence and its next, as the board's answer has them
  function showOccurrences(board) {
    const schedule = board && board.schedule;
    $("editor-occurrences").hidden = !schedule;
    if (!schedule) return;
    const occurrence = (o) => (o ? [el("code", {}, o.period), ` ${local(o.starts_at)} – ${local(o.ends_at)}`] : null);
    $("occ-current").replaceChildren(...(occurrence(board.current_period)
      || [el("span", { class: "muted" }, "none: between occurrences")]));
    $("occ-next").replaceChildren(...(occurrence(board.next_period)
      || [el("span", { class: "muted" }, "none: the schedule has ended")]));
  }
  // the board's webhook deliveries, newest first: one per period frozen while it had a hook
  async function loadDeliveries(board) {
    const body = $("deliveries").tBodies[0];
    $("editor-deliveries").hidden = !board;
    $("deliveries-empty").hidden = true;
    body.replaceChildren();
    if (!board) return;
    try {
      const answer = await call("GET", `/v1/boards/${enc(board.board_id)}/deliveries?limit=50`);
      if (editor.board !== board) return;
      body.replaceChildren(...answer.deliveries.map((d) => {
        const period = d.delivery_id.slice(board.board_id.length + 1).replace(":", " ");
        const level = { delivered: "ok", pending: "warn", failed: "bad" }[d.status] || "";
        return el("tr", { "data-delivery": d.delivery_id, title: `${d.event} to ${d.url}, recorded ${local(d.created_at)}` },
          el("td", {}, period),
          el("td", {}, el("span", { class: `pill ${level}` }, d.status)),
          el("td", { class: "num" }, String(d.attempts)),
          // the receiver's status, or why there was none (a timeout, a refused connection)
          el("td", { class: "last-answer", title: d.last_error }, d.last_status !== null ? `HTTP ${d.last_status}`
            : d.attempts ? d.last_error || "no answer" : "–"),
          el("td", { class: "next-attempt" }, d.next_attempt_at ? `${local(d.next_attempt_at)} (${ago(d.next_attempt_at)})`
            : d.done_at ? `done ${local(d.done_at)}` : "–"));
      }));
      $("deliveries-empty").hidden = answer.deliveries.length > 0;
    } catch (err) {
      if (editor.board === board) body.replaceChildren(el("tr", {}, el("td", { colspan: 5, class: "error" }, err.message)));
    }
  }
  $("deliveries-refresh").addEventListener("click", () => { if (editor.board) loadDeliveries(editor.board); });
  async function loadPeriods(board) {
    const body = $("periods").tBodies[0];
    $("editor-periods").hidden = !board;
    body.replaceChildren();
    if (!board) return;
    try {
      const lists = await Promise.all(board.windows.map((w) => call("GET", `/v1/boards/${enc(board.board_id)}/periods?window=${enc(w)}`)));
      if (editor.board !== board) return;
      body.replaceChildren(...lists.flatMap((list, i) => list.periods.map((p) => {
        const window = board.windows[i];
        const closing = periodsClosing.has(`${board.board_id}|${window}|${p.period}`);
        return el("tr", { "data-window": window, "data-period": p.period, "aria-busy": closing ? "true" : null },
          el("td", {}, window), el("td", {}, p.period),
          el("td", {}, closing ? el("span", { class: "pill warn" }, "closing…")
            : el("span", { class: `pill ${p.status === "open" ? "ok" : ""}` }, p.status)),
          el("td", {}, local(p.starts_at)), el("td", {}, local(p.ends_at)),
          el("td", {}, p.status === "open" && window !== "all-time" && window !== "rolling-7d"
            ? el("button", {
              type: "button", class: "danger ghost small", disabled: closing,
              title: `Close ${window} period ${p.period} of ${board.board_id} now, as if it had ended`,
              onclick: (e) => closePeriod(board, window, p.period, e.currentTarget),
            }, closing ? "Closing…" : "Close now…")
            : ""));
      })));
    } catch (err) {
      body.replaceChildren(el("tr", {}, el("td", { colspan: 6, class: "error" }, err.message)));
    }
  }
  // an open period closed early, as if it had ended: runs received after it answer closed
  // in that window; the season job freezes it into the archive
  async function closePeriod(board, window, period, button) {
    const id = board.board_id;
    const where = `${window} period ${period} of ${id}`;
    if (!(await confirmAction({ title: `Close ${where} now?`, text: `It ends now, as if its time were up: runs received from then on answer closed in ${window} and change nothing there (they still count in the board's other windows), and the season job freezes it into the archive as it stands. It cannot be reopened. Closing takes a few seconds, until every instance of the service has it.`, ok: "Close period", danger: true }))) return;
    const key = `${id}|${window}|${period}`;
    if (periodsClosing.has(key)) return;
    periodsClosing.add(key);
    // the closing state, on the row as it is now (a refresh meanwhile draws it too)
    const row = button.closest("tr");
    button.disabled = true;
    button.textContent = "Closing…";
    row.setAttribute("aria-busy", "true");
    row.cells[2].replaceChildren(el("span", { class: "pill warn" }, "closing…"));
    try {
      const closed = await call("POST", `/v1/boards/${enc(id)}/periods/${enc(period)}/close?${new URLSearchParams({ window })}`);
      toast(`Closed ${where} (from ${local(closed.closed_at)})`);
    } catch (err) {
      toast(`Could not close ${where}: ${err.message} (${err.code})`, "bad");
    } finally {
      periodsClosing.delete(key);
    }
    if (editor.board && editor.board.board_id === id) loadPeriods(editor.board);
  }

  // --- start -------------------------------------------------------------------------------------
  health();
  setInterval(health, 5000);
  setInterval(() => { if (adminKey && view === "queue" && !document.hidden && !$("confirm").open) loadQueue(true); }, 15000);
  if (adminKey) enter(); else $("key").focus();
})();
