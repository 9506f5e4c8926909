// The live leaderboard page: pickers (kept in the URL), the board's top list over
// Server-Sent Events (/v1/boards/{id}/events), a player search over the public reads.
"use strict";
const $ = (id) => document.getElementById(id);
// names and ids are user-chosen: escape everything placed into HTML
const esc = (v) => String(v).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const BOARDS_REFRESH_MS = 10000;
const RETRY_MS = 2000;

const state = { boards: [], source: null, retry: null, ranks: new Map(), scores: new Map(), lastTop: null };

// --- scores and times -----------------------------------------------------------------
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
function ago(date) {
  const s = Math.round((date.getTime() - Date.now()) / 1000);
  const steps = [[60, "second"], [60, "minute"], [24, "hour"], [7, "day"], [4.35, "week"], [12, "month"]];
  let value = s;
  for (const [size, unit] of steps) {
    if (Math.abs(value) < size) return relative.format(Math.round(value), unit);
    value /= size;
  }
  return relative.format(Math.round(value), "year");
}
function localTime(date) {
  const today = new Date().toDateString() === date.toDateString();
  return today ? date.toLocaleTimeString() : date.toLocaleString();
}

// --- the URL and the pickers ------------------------------------------------------------
function fromUrl() {
  const q = new URLSearchParams(location.search);
  const segment = q.get("segment") || "";
  const colon = segment.indexOf(":");
  return {
    board: q.get("board") || "", window: q.get("window") || "", period: q.get("period") || "",
    dim: colon > 0 ? segment.slice(0, colon) : "", val: colon > 0 ? segment.slice(colon + 1) : "",
    n: q.get("n") || "",
  };
}
function toUrl() {
  const q = new URLSearchParams();
  if ($("board").value) q.set("board", $("board").value);
  if ($("window").value) q.set("window", $("window").value);
  if ($("period").value) q.set("period", $("period").value);
  const seg = segment();
  if (seg) q.set("segment", seg);
  if ($("n").value !== "25") q.set("n", $("n").value);
  const search = q.toString();
  history.replaceState(null, "", search ? `?${search}` : location.pathname);
}
function segment() {
  const dim = $("seg-dim").value, val = $("seg-val").value.trim();
  return dim && val ? `${dim}:${val}` : "";
}
function currentBoard() {
  return state.boards.find((b) => b.board_id === $("board").value);
}
function fillSelect(select, values, wanted, labels = {}) {
  const keep = values.includes(wanted) ? wanted : values[0] ?? "";
  select.innerHTML = values.map((v) => `<option value="${esc(v)}">${esc(labels[v] ?? v)}</option>`).join("");
  select.value = keep;
}

async function loadBoards(initial) {
  const r = await fetch("/v1/boards");
  if (!r.ok) throw new Error(`boards: ${r.status}`);
  const boards = (await r.json()).boards;
  const chosen = initial ? initial.board : $("board").value;
  const before = state.boards.map((b) => b.board_id).join(",");
  state.boards = boards;
  if (boards.map((b) => b.board_id).join(",") !== before || initial) {
    fillSelect($("board"), boards.map((b) => b.board_id), chosen);
  }
  return boards.length > 0;
}
async function pickBoard(wanted = {}) {
  const board = currentBoard();
  if (!board) { showEmpty("No boards yet: create one with PUT /v1/boards/{id}."); return; }
  $("title").textContent = board.board_id;
  fillSelect($("window"), board.windows, wanted.window || $("window").value);
  const dims = ["", ...board.segments];
  fillSelect($("seg-dim"), dims, wanted.dim ?? $("seg-dim").value, { "": "global" });
  $("seg-val").hidden = !$("seg-dim").value;
  if (wanted.val !== undefined) $("seg-val").value = wanted.val;
  await pickWindow(wanted.period ?? "");
}
async function pickWindow(wantedPeriod = "") {
  const board = currentBoard(), win = $("window").value;
  let periods = [];
  if (win !== "all-time") {
    const r = await fetch(`/v1/boards/${enc(board.board_id)}/periods?window=${enc(win)}`);
    if (r.ok) periods = (await r.json()).periods.map((p) => p.period);
  }
  const labels = { "": win === "all-time" ? "all-time" : "current" };
  fillSelect($("period"), ["", ...periods.filter((p) => p)], wantedPeriod, labels);
  connect();
}
const enc = encodeURIComponent;

// --- the stream ---------------------------------------------------------------------------
function connected(yes) {
  document.body.classList.toggle("disconnected", !yes);
  $("banner").hidden = yes;
  $("conn").className = `conn ${yes ? "live" : "down"}`;
  $("conn-text").textContent = yes ? "live" : "disconnected, retrying…";
}
function connect() {
  clearTimeout(state.retry);
  if (state.source) state.source.close();
  toUrl();
  const board = currentBoard();
  if (!board) return;
  const q = new URLSearchParams({ window: $("window").value, n: $("n").value });
  if ($("period").value) q.set("period", $("period").value);
  if (segment()) q.set("segment", segment());
  const key = `${board.board_id}?${q}`;
  if (state.streamKey !== key) { state.ranks = new Map(); state.scores = new Map(); state.lastTop = null; }
  state.streamKey = key;
  const source = new EventSource(`/v1/boards/${enc(board.board_id)}/events?${q}`);
  state.source = source;
  source.addEventListener("open", () => connected(true));
  source.addEventListener("top", (e) => { connected(true); render(JSON.parse(e.data)); });
  source.addEventListener("error", (e) => {
    if (e.data) { showEmpty(JSON.parse(e.data).error.message); source.close(); return; }
    connected(false);
    // the browser retries a dropped stream by itself; a refused one (4xx/5xx) it gives up on
    if (source.readyState === EventSource.CLOSED) state.retry = setTimeout(retry, RETRY_MS);
  });
}
async function retry() {
  try {
    const r = await fetch(`/v1/boards/${enc($("board").value)}/top?n=1&window=${enc($("window").value)}${segment() ? `&segment=${enc(segment())}` : ""}`);
    if (r.status === 400 || r.status === 404) { showEmpty((await r.json()).error.message); return; }
  } catch (_) { /* still down */ }
  connect();
}

function showEmpty(message) {
  $("rows").innerHTML = "";
  $("empty").hidden = false;
  $("empty").textContent = message;
}
function render(top) {
  state.lastTop = top;
  const board = currentBoard();
  const format = board ? board.score_format : "integer";
  $("meta").textContent = `${top.window} · ${top.period}${segment() ? ` · ${segment()}` : ""} · ${grouped.format(top.total)} ${top.total === 1 ? "player" : "players"}`;
  $("empty").hidden = top.entries.length > 0;
  if (!top.entries.length) $("empty").textContent = "No entries in this period yet.";
  const ranks = new Map(), scores = new Map();
  const first = state.ranks.size === 0;
  $("rows").innerHTML = top.entries.map((e) => {
    ranks.set(e.player_id, e.rank); scores.set(e.player_id, e.score);
    const was = state.ranks.get(e.player_id);
    let move = "", cls = `r${e.rank}`;
    if (!first && was === undefined) { move = `<span class="new">NEW</span>`; cls += " changed"; }
    else if (was !== undefined && was > e.rank) { move = `<span class="up">▲${was - e.rank}</span>`; cls += " changed"; }
    else if (was !== undefined && was < e.rank) { move = `<span class="down">▼${e.rank - was}</span>`; }
    else if (!first && state.scores.get(e.player_id) !== e.score) cls += " changed";
    const at = new Date(e.achieved_at);
    const name = e.name ? `${esc(e.name)}<span class="pid">${esc(e.player_id)}</span>` : esc(e.player_id);
    return `<tr class="${cls}" data-player="${esc(e.player_id)}"><td class="rank">${e.rank}</td>` +
      `<td class="move">${move}</td><td class="player">${name}</td>` +
      `<td class="score">${esc(formatScore(e.score, format))}</td>` +
      `<td class="when" title="${esc(at.toString())}" data-at="${esc(e.achieved_at)}">` +
      `${esc(ago(at))}<small>${esc(localTime(at))}</small></td></tr>`;
  }).join("");
  state.ranks = ranks; state.scores = scores;
}
function tickTimes() {
  for (const cell of document.querySelectorAll("td.when[data-at]")) {
    const at = new Date(cell.dataset.at);
    cell.firstChild.textContent = ago(at);
  }
}

// --- player search: around and friends ---------------------------------------------------
async function search(event) {
  event.preventDefault();
  const board = currentBoard(), player = $("player").value.trim();
  if (!board || !player) return;
  const q = new URLSearchParams({ window: $("window").value });
  if ($("period").value) q.set("period", $("period").value);
  if (segment()) q.set("segment", segment());
  const base = `/v1/boards/${enc(board.board_id)}/players/${enc(player)}`;
  const friends = $("friends").value.split(",").map((s) => s.trim()).filter(Boolean);
  const calls = [fetch(`${base}/around?range=3&${q}`)];
  if (friends.length) calls.push(fetch(`${base}/friends?ids=${enc(friends.join(","))}&${q}`));
  const answers = await Promise.all(calls.map((p) => p.then(async (r) => [r.ok, await r.json()])));
  $("found").innerHTML = answers.map(([ok, body], i) => {
    const title = i === 0 ? "Around" : "Friends";
    if (!ok) return `<h3>${title}</h3><p class="err">${esc(body.error.message)}</p>`;
    const rows = body.entries.map((e) => `<tr class="${e.player_id === player ? "me" : ""}">` +
      `<td class="rank">${i === 0 ? e.rank : `${e.position} <small>#${e.rank}</small>`}</td>` +
      `<td>${esc(e.name ?? e.player_id)}</td>` +
      `<td class="score">${esc(formatScore(e.score, board.score_format))}</td></tr>`).join("");
    return `<h3>${title}</h3><table id="found-${title.toLowerCase()}">${rows}</table>`;
  }).join("");
}

// --- wiring ---------------------------------------------------------------------------------
async function start() {
  const wanted = fromUrl();
  if (["10", "25", "50", "100"].includes(wanted.n)) $("n").value = wanted.n;
  try {
    if (await loadBoards(wanted)) await pickBoard(wanted);
    else showEmpty("No boards yet: create one with PUT /v1/boards/{id}.");
  } catch (_) {
    connected(false);
    setTimeout(start, RETRY_MS);
    return;
  }
  setInterval(refreshBoards, BOARDS_REFRESH_MS);
  setInterval(tickTimes, 1000);
}
async function refreshBoards() {
  const had = $("board").value;
  try { await loadBoards(); } catch (_) { return; }  // the stream's own state shows the outage
  if (!had && $("board").value) await pickBoard();
  else if (state.lastTop) render(state.lastTop);  // a changed score_format shows at once
}
$("board").addEventListener("change", () => { $("seg-val").value = ""; pickBoard({}); });
$("window").addEventListener("change", () => pickWindow(""));
$("period").addEventListener("change", connect);
$("n").addEventListener("change", connect);
$("seg-dim").addEventListener("change", () => { $("seg-val").hidden = !$("seg-dim").value; if (segment() || !$("seg-dim").value) connect(); });
$("seg-val").addEventListener("change", connect);
$("search").addEventListener("submit", search);
start();
