// The live leaderboard page: pickers (kept in the URL), the board's top list over
// Server-Sent Events (/v1/boards/{id}/events), a player search over the public reads that
// is read again whenever the top list changes, and a kiosk mode (?kiosk=1) for a stream
// screen: big type, no pickers, the board's name and its period's countdown. On a league
// board the search also shows the player's cohort with its promotion and relegation lines
// (?board=…&player=… opens on it).
"use strict";
const $ = (id) => document.getElementById(id);
// names and ids are user-chosen: escape everything placed into HTML
const esc = (v) => String(v).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const BOARDS_REFRESH_MS = 10000;
const RETRY_MS = 2000;
const MARK_MS = 10000;  // how long ▲n / NEW stay on a row after the change
const FOUND_MIN_MS = 500;  // the side panel is read again at most this often

const state = {
  boards: [], source: null, retry: null, ranks: new Map(), scores: new Map(), lastTop: null,
  // player id -> {from: the rank before the move (null: entered), until: ms}
  marks: new Map(),
  search: null, searching: false, searchAgain: false, searchAt: 0, searchTimer: null,
  segValues: null,  // the segment values /segments lists; null: free text
  periodEnds: new Map(), kiosk: false,
};

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
const relativeShort = new Intl.RelativeTimeFormat(undefined, { numeric: "auto", style: "narrow" });
function ago(date, format = relative) {
  const s = Math.round((date.getTime() - Date.now()) / 1000);
  const steps = [[60, "second"], [60, "minute"], [24, "hour"], [7, "day"], [4.35, "week"], [12, "month"]];
  let value = s;
  for (const [size, unit] of steps) {
    if (Math.abs(value) < size) return format.format(Math.round(value), unit);
    value /= size;
  }
  return format.format(Math.round(value), "year");
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
    n: q.get("n") || "", kiosk: q.get("kiosk") === "1", player: q.get("player") || "",
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
  if (state.kiosk) q.set("kiosk", "1");
  if (state.search) q.set("player", state.search.player);
  const search = q.toString();
  history.replaceState(null, "", search ? `?${search}` : location.pathname);
}
function segValue() {
  return state.segValues ? $("seg-pick").value : $("seg-val").value.trim();
}
function segment() {
  const dim = $("seg-dim").value, val = segValue();
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

// A board named in the URL (or shown, then deleted) that the service does not have stays
// chosen, marked as missing, and the page says so: it never shows another board instead.
async function loadBoards(initial) {
  const r = await fetch("/v1/boards");
  if (!r.ok) throw new Error(`boards: ${r.status}`);
  const boards = (await r.json()).boards;
  const chosen = initial ? initial.board : $("board").value;
  const before = state.boards.map((b) => b.board_id).join(",");
  state.boards = boards;
  const ids = boards.map((b) => b.board_id);
  if (ids.join(",") !== before || initial) {
    const missing = chosen && !ids.includes(chosen) ? chosen : "";
    const labels = missing ? { [missing]: `${missing} (no such board)` } : {};
    fillSelect($("board"), missing ? [missing, ...ids] : ids, chosen, labels);
    state.missing = missing;
  }
  return boards.length > 0;
}
function showMissing(id) {
  if (state.source) { state.source.close(); state.source = null; }
  state.lastTop = null;
  $("title").textContent = id;
  document.title = `${id} · Rankd live`;
  $("countdown").textContent = "";
  $("meta").innerHTML = "&nbsp;";
  for (const select of ["window", "period", "seg-dim"]) {
    $(select).innerHTML = ""; $(select).disabled = true;
  }
  $("seg-pick").hidden = true; $("seg-val").hidden = true;
  $("conn").className = "conn"; $("conn-text").textContent = "no such board";
  const others = state.boards.length;
  const where = state.kiosk || !others ? "" : ` Pick one of the ${others} ${others === 1 ? "board" : "boards"} above.`;
  showEmpty(`There is no board "${id}" on this service.${where}`, "missing");
}
async function pickBoard(wanted = {}) {
  const board = currentBoard();
  if (!board && state.missing) { showMissing(state.missing); return; }
  if (!board) { showEmpty("No boards yet: create one with PUT /v1/boards/{id}."); return; }
  if (state.missing) {  // another board was picked: the missing one leaves the list
    $("board").querySelector(`option[value="${CSS.escape(state.missing)}"]`)?.remove();
    state.missing = "";
  }
  $("title").textContent = board.board_id;
  document.title = `${board.board_id} · Rankd live`;
  $("window").disabled = false; $("seg-dim").disabled = false;
  fillSelect($("window"), board.windows, wanted.window || $("window").value);
  const dims = ["", ...board.segments];
  fillSelect($("seg-dim"), dims, wanted.dim ?? $("seg-dim").value, { "": "global" });
  if (wanted.val !== undefined) $("seg-val").value = wanted.val;
  await pickWindow(wanted.period ?? "", wanted.val);
}
async function pickWindow(wantedPeriod = "", wantedValue = undefined) {
  const board = currentBoard(), win = $("window").value;
  const periods = await loadPeriods(board, win);
  // all-time and rolling-7d have one period: the picker says so once
  const single = win === "all-time" || win === "rolling-7d";
  const labels = { "": win === "all-time" ? "—" : "current" };
  fillSelect($("period"), ["", ...(single ? [] : periods.filter((p) => p))], wantedPeriod, labels);
  $("period").disabled = single;
  await loadSegmentValues(wantedValue);
  connect();
}
async function loadPeriods(board, win) {
  state.periodEnds = new Map();
  if (win === "all-time") return [];
  const r = await fetch(`/v1/boards/${enc(board.board_id)}/periods?window=${enc(win)}`);
  if (!r.ok) return [];
  const periods = (await r.json()).periods;
  for (const p of periods) state.periodEnds.set(p.period, new Date(p.ends_at));
  return periods.map((p) => p.period);
}
const enc = encodeURIComponent;

// The segment values with entries in the chosen period (GET /v1/boards/{id}/segments), most
// entries first; a service without that route (404/400) leaves the value as free text.
async function loadSegmentValues(wanted = undefined) {
  const board = currentBoard(), dim = $("seg-dim").value;
  const keep = wanted ?? segValue();
  let values = null;
  if (board && dim) {
    const q = new URLSearchParams({ window: $("window").value });
    if ($("period").value) q.set("period", $("period").value);
    try {
      const r = await fetch(`/v1/boards/${enc(board.board_id)}/segments?${q}`);
      if (r.ok) {
        const listed = (await r.json()).segments.find((s) => s.dimension === dim);
        values = listed ? listed.values : [];
      }
    } catch (_) { /* the stream's own state shows an outage */ }
  }
  state.segValues = values;
  $("seg-pick").hidden = !dim || values === null;
  $("seg-val").hidden = !dim || values !== null;
  if (values === null) { if (keep) $("seg-val").value = keep; return; }
  const listed = values.map((v) => v.value);
  if (keep && !listed.includes(keep)) { listed.push(keep); values = [...values, { value: keep, total: 0 }]; }
  const labels = { "": "choose…" };
  for (const v of values) labels[v.value] = `${v.value} · ${grouped.format(v.total)}`;
  fillSelect($("seg-pick"), ["", ...listed], keep, labels);
}

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
  // kiosk type is sized so that this many rows fit the screen (live.css)
  document.body.style.setProperty("--rows", $("n").value);
  const board = currentBoard();
  if (!board) return;
  const q = new URLSearchParams({ window: $("window").value, n: $("n").value });
  if ($("period").value) q.set("period", $("period").value);
  if (segment()) q.set("segment", segment());
  const key = `${board.board_id}?${q}`;
  if (state.streamKey !== key) {
    state.ranks = new Map(); state.scores = new Map(); state.marks = new Map(); state.lastTop = null;
    if (state.search) refreshFound(true);
  }
  state.streamKey = key;
  const source = new EventSource(`/v1/boards/${enc(board.board_id)}/events?${q}`);
  state.source = source;
  source.addEventListener("open", () => connected(true));
  source.addEventListener("top", (e) => {
    connected(true);
    render(JSON.parse(e.data));
    if (state.search) refreshFound();  // the side panel follows the stream
  });
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

function showEmpty(message, kind = "") {
  $("rows").innerHTML = "";
  $("empty").hidden = false;
  $("empty").className = `empty ${kind}`.trim();
  $("empty").textContent = message;
}
function render(top) {
  state.lastTop = top;
  const board = currentBoard();
  const format = board ? board.score_format : "integer";
  // the window and period are in the header (with the countdown); the card adds the rest
  const players = `${grouped.format(top.total)} ${top.total === 1 ? "player" : "players"}`;
  $("meta").textContent = segment() ? `${segment()} · ${players}` : players;
  $("empty").hidden = top.entries.length > 0;
  $("empty").className = "empty";
  if (!top.entries.length) $("empty").textContent = "No entries in this period yet.";
  const ranks = new Map(), scores = new Map(), now = Date.now();
  const first = state.ranks.size === 0;
  for (const [player, mark] of state.marks) if (mark.until <= now) state.marks.delete(player);
  $("rows").innerHTML = top.entries.map((e) => {
    ranks.set(e.player_id, e.rank); scores.set(e.player_id, e.score);
    const was = state.ranks.get(e.player_id);
    let cls = `r${e.rank}`;
    // ▲n and NEW count from the moment of the change and last MARK_MS, whatever comes after;
    // a second rise within that time adds to the first (▲ counts from the rank before both)
    const mark = state.marks.get(e.player_id);
    if (!first && was === undefined) {
      state.marks.set(e.player_id, { from: null, until: now + MARK_MS }); cls += " changed";
    } else if (was !== undefined && was > e.rank) {
      state.marks.set(e.player_id, { from: mark ? mark.from : was, until: now + MARK_MS });
      cls += " changed";
    } else if (!first && state.scores.get(e.player_id) !== e.score) cls += " changed";
    const move = moveMark(state.marks.get(e.player_id), e.rank, was);
    const at = new Date(e.achieved_at);
    // one line, ellipsized by the stylesheet; the whole name and id in the title
    const who = e.name ? `<span class="name">${esc(e.name)}</span><span class="pid">${esc(e.player_id)}</span>`
      : `<span class="name">${esc(e.player_id)}</span>`;
    const title = e.name ? `${e.name} (${e.player_id})` : e.player_id;
    return `<tr class="${cls}" data-player="${esc(e.player_id)}"><td class="rank">${e.rank}</td>` +
      `<td class="move"${move.until ? ` data-until="${move.until}"` : ""}>${move.html}</td>` +
      `<td class="player" title="${esc(title)}"><div class="who">${who}</div></td>` +
      // data-ago: "12 sec ago", shown under the score where the "Achieved" column is not (a phone)
      `<td class="score" data-ago="${esc(ago(at, relativeShort))}">${esc(formatScore(e.score, format))}</td>` +
      `<td class="when" title="${esc(at.toString())}" data-at="${esc(e.achieved_at)}">` +
      `${esc(ago(at))}<small>${esc(localTime(at))}</small></td></tr>`;
  }).join("");
  state.ranks = ranks; state.scores = scores;
  tickCountdown();
}
function moveMark(mark, rank, was) {
  if (mark && mark.from === null) return { html: `<span class="new">NEW</span>`, until: mark.until };
  if (mark && mark.from > rank) return { html: `<span class="up">▲${mark.from - rank}</span>`, until: mark.until };
  // a fall shows until the next event (a rise above pushes many rows down at once)
  if (was !== undefined && was < rank) return { html: `<span class="down">▼${rank - was}</span>` };
  return { html: "" };
}
function tickTimes() {
  const now = Date.now();
  for (const cell of document.querySelectorAll("td.when[data-at]")) {
    const at = new Date(cell.dataset.at);
    cell.firstChild.textContent = ago(at);
    const score = cell.parentElement.querySelector("td.score");
    if (score) score.dataset.ago = ago(at, relativeShort);
  }
  for (const cell of document.querySelectorAll("td.move[data-until]")) {
    if (Number(cell.dataset.until) <= now) { cell.textContent = ""; delete cell.dataset.until; }
  }
  tickCountdown();
}
// the current period's countdown (the header; big in kiosk mode)
function tickCountdown() {
  const top = state.lastTop, el = $("countdown");
  if (!top) { el.textContent = ""; return; }
  // the endless windows (all-time, the rolling last seven days) count down to nothing
  const endless = top.window === "all-time" || top.window === "rolling-7d";
  const label = endless ? top.window : `${top.window} · ${top.period}`;
  const ends = state.periodEnds.get(top.period);
  if (!endless && !ends) reloadPeriods();  // a new period began
  if (endless || !ends) { el.textContent = label; return; }
  const left = Math.round((ends.getTime() - Date.now()) / 1000);
  if (left <= 0) { el.textContent = `${label} · ended`; if (!$("period").value) reloadPeriods(); return; }
  const d = Math.floor(left / 86400), h = Math.floor(left / 3600) % 24;
  const m = Math.floor(left / 60) % 60, s = left % 60;
  const clock = `${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}:${String(s).padStart(2, "0")}`;
  el.textContent = `${label} · ends in ${d ? `${d}d ` : ""}${clock}`;
  el.title = `ends ${ends.toLocaleString()}`;
}
async function reloadPeriods() {
  const board = currentBoard();
  if (!board || state.periodsLoading) return;
  state.periodsLoading = true;
  try { await loadPeriods(board, $("window").value); } catch (_) { /* retried next tick */ }
  finally { setTimeout(() => { state.periodsLoading = false; }, 5000); }
}

// --- player search: around and friends ---------------------------------------------------
async function search(event) {
  event.preventDefault();
  const player = $("player").value.trim();
  const friends = $("friends").value.split(",").map((s) => s.trim()).filter(Boolean);
  state.search = player ? { player, friends } : null;
  toUrl();
  if (!player) { $("found").innerHTML = ""; return; }
  await refreshFound(true);
}
// Reads the side panel again: at once when asked, else at most every FOUND_MIN_MS and never
// two reads at a time (a busy board's events coalesce into one read, the latest state).
async function refreshFound(now = false) {
  if (state.searching) { state.searchAgain = true; return; }
  const wait = now ? 0 : state.searchAt + FOUND_MIN_MS - Date.now();
  if (wait > 0) {
    if (!state.searchTimer) state.searchTimer = setTimeout(() => { state.searchTimer = null; refreshFound(); }, wait);
    return;
  }
  state.searching = true; state.searchAt = Date.now();
  try { await readFound(); } catch (_) { /* kept; the stream's state shows an outage */ }
  finally {
    state.searching = false;
    if (state.searchAgain) { state.searchAgain = false; refreshFound(); }
  }
}
async function readFound() {
  const board = currentBoard(), wanted = state.search;
  if (!board || !wanted) return;
  const { player, friends } = wanted;
  const q = new URLSearchParams({ window: $("window").value });
  if ($("period").value) q.set("period", $("period").value);
  if (segment()) q.set("segment", segment());
  const base = `/v1/boards/${enc(board.board_id)}/players/${enc(player)}`;
  const calls = [fetch(`${base}/around?range=3&${q}`)];
  if (friends.length) calls.push(fetch(`${base}/friends?ids=${enc(friends.join(","))}&${q}`));
  // a league board: the player's cohort, in the league window's period shown (else current)
  const league = board.league;
  if (league) {
    const lq = new URLSearchParams();
    if ($("window").value === league.window && $("period").value) lq.set("period", $("period").value);
    calls.push(fetch(`${base}/league?${lq}`));
  }
  const answers = await Promise.all(calls.map((p) => p.then(async (r) => [r.ok, await r.json()])));
  if (state.search !== wanted) return;  // a newer search was asked for meanwhile
  const leagueAnswer = league ? answers.pop() : null;
  $("found").innerHTML = (leagueAnswer ? cohortHtml(leagueAnswer, player, board) : "") + answers.map(([ok, body], i) => {
    const title = i === 0 ? "Around" : "Friends";
    if (!ok) return `<h3>${title}</h3><p class="err">${esc(body.error.message)}</p>`;
    const rows = body.entries.map((e) => `<tr class="${e.player_id === player ? "me" : ""}">` +
      `<td class="rank">${i === 0 ? e.rank : `${e.position} <small>#${e.rank}</small>`}</td>` +
      `<td class="who-cell" title="${esc(e.name ?? e.player_id)}">${esc(e.name ?? e.player_id)}</td>` +
      `<td class="score">${esc(formatScore(e.score, board.score_format))}</td></tr>`).join("");
    return `<h3>${title}</h3><table id="found-${title.toLowerCase()}">${rows}</table>`;
  }).join("");
}

// The player's league cohort: its rows by zone, a line under the last promoted row and one
// above the first relegated row.
function cohortHtml([ok, body], player, board) {
  if (!ok) return `<h3>League</h3><p class="err">${esc(body.error.message)}</p>`;
  const rows = [];
  body.entries.forEach((e, i) => {
    const before = body.entries[i - 1];
    if (e.zone === "relegate" && (!before || before.zone !== "relegate")) {
      rows.push(`<tr class="line relegate-line"><td colspan="3">▼ relegation</td></tr>`);
    }
    rows.push(`<tr class="zone-${e.zone}${e.player_id === player ? " me" : ""}">` +
      `<td class="rank">${e.rank}</td>` +
      `<td class="who-cell" title="${esc(e.name ?? e.player_id)}">${esc(e.name ?? e.player_id)}</td>` +
      `<td class="score">${esc(formatScore(e.score, board.score_format))}</td></tr>`);
    const after = body.entries[i + 1];
    if (e.zone === "promote" && (!after || after.zone !== "promote")) {
      rows.push(`<tr class="line promote-line"><td colspan="3">▲ promotion</td></tr>`);
    }
  });
  return `<h3>League · ${esc(body.tier)} · ${esc(body.cohort)}</h3>` +
    `<table id="found-league">${rows.join("")}</table>`;
}

// --- wiring ---------------------------------------------------------------------------------
async function start() {
  const wanted = fromUrl();
  state.kiosk = wanted.kiosk;
  document.body.classList.toggle("kiosk", state.kiosk);
  $("pickers").hidden = state.kiosk;
  $("side").hidden = state.kiosk;
  if (state.kiosk && !wanted.n) $("n").value = "10";
  if (["10", "25", "50", "100"].includes(wanted.n)) $("n").value = wanted.n;
  if (wanted.player && !state.search) {  // ?player=: the search opens on them
    $("player").value = wanted.player;
    state.search = { player: wanted.player, friends: [] };
  }
  try {
    await loadBoards(wanted);
    await pickBoard(wanted);
  } catch (_) {
    connected(false);
    setTimeout(start, RETRY_MS);
    return;
  }
  setInterval(refreshBoards, BOARDS_REFRESH_MS);
  setInterval(tickTimes, 1000);
}
async function refreshBoards() {
  const had = $("board").value, wasMissing = state.missing;
  try { await loadBoards(); } catch (_) { return; }  // the stream's own state shows the outage
  // a board asked for before it existed shows once it is created
  if ((!had || wasMissing) && currentBoard()) await pickBoard();
  else if (state.missing && !wasMissing) showMissing(state.missing);  // deleted meanwhile
  else if (state.lastTop) render(state.lastTop);  // a changed score_format shows at once
  // values that gained their first entries since appear in the picker
  if (state.segValues && document.activeElement !== $("seg-pick")) await loadSegmentValues();
}
$("board").addEventListener("change", () => { $("seg-val").value = ""; pickBoard({ val: "" }); });
$("window").addEventListener("change", () => pickWindow(""));
$("period").addEventListener("change", async () => { await loadSegmentValues(); connect(); });
$("n").addEventListener("change", connect);
$("seg-dim").addEventListener("change", async () => { await loadSegmentValues(""); connect(); });
$("seg-pick").addEventListener("change", connect);
$("seg-val").addEventListener("change", connect);
$("search").addEventListener("submit", search);
start();
