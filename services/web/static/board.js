// The flashboard: draws the state the appliance sends on /events, live.
// The state is the whole truth; a call event only lights its number a moment sooner.
"use strict";

const LETTERS = "BINGO";
const STALE_AFTER_MS = 12000;  // two missed pings (the server pings every 5 s)
const REOPEN_MS = 2000;

const $ = (id) => document.getElementById(id);
const letterOf = (n) => LETTERS[Math.floor((n - 1) / 15)];
const numberOf = (ball) => parseInt(ball.slice(1), 10);

let state = null;
let source = null;
let lastHeard = 0;
let live = false;
let opened = 0;

function buildGrid() {
  const grid = $("grid");
  for (let col = 0; col < 5; col++) {
    const row = grid.insertRow();
    const head = document.createElement("th");
    head.textContent = LETTERS[col];
    head.className = "letter L" + LETTERS[col];
    row.appendChild(head);
    for (let n = col * 15 + 1; n <= col * 15 + 15; n++) {
      const cell = row.insertCell();
      cell.id = "n" + n;
      cell.textContent = n;
      cell.className = "num";
    }
  }
  const pattern = $("pattern");
  for (let r = 0; r < 5; r++) {
    const row = pattern.insertRow();
    for (let c = 0; c < 5; c++) row.insertCell();
  }
}

function showBall(el, ball) {
  el.textContent = ball || "–";
  el.dataset.letter = ball ? ball[0] : "";
}

function render() {
  const game = state && state.game;
  const called = game ? game.called : [];
  const on = new Set(called.map(numberOf));
  const last = called.length ? called[called.length - 1] : null;
  for (let n = 1; n <= 75; n++) {
    const cell = $("n" + n);
    cell.classList.toggle("on", on.has(n));
    cell.classList.toggle("last", last !== null && numberOf(last) === n);
  }
  showBall($("last"), last);
  const previous = $("previous");
  previous.replaceChildren(...called.slice(-6, -1).reverse().map((ball) => {
    const li = document.createElement("li");
    showBall(li, ball);
    li.className = "ball small";
    return li;
  }));
  $("count").textContent = called.length;

  if (game) {
    const paused = game.status === "claims" ? " · claim being checked" : "";
    const closed = game.status === "closed" ? " · closed" : "";
    $("game").textContent = "Game " + game.number + closed + paused;
    $("prize").textContent = game.prize ? "Prize " + game.prize : "";
  } else {
    $("game").textContent = "No game yet";
    $("prize").textContent = "";
  }
  const picture = game && game.pattern && game.pattern.picture;
  const rows = $("pattern").rows;
  for (let r = 0; r < 5; r++) {
    for (let c = 0; c < 5; c++) {
      const needed = picture ? picture[r][c] === 1 : false;
      rows[r].cells[c].className = needed ? "need" : (r === 2 && c === 2 ? "free" : "");
    }
  }
  $("pattern-name").textContent = game && game.pattern
    ? (game.pattern.description || game.pattern.name || "").replace(/_/g, " ") : "";
  const jar = game && game.cookie_jar;
  $("cookie-box").hidden = !jar;
  $("cookie").textContent = jar || "";
  showLive();
}

// A call lights its number at once; the state that follows it is then drawn over it.
function applyCall(call) {
  if (!state || !state.game || state.game.number !== call.game) return;
  const called = state.game.called.filter((b) => b !== call.ball);
  if (call.event_type === "called") called.push(call.ball);
  state.game.called = called;
  state.seq = Math.max(state.seq || 0, call.seq);
  render();
}

function showLive() {
  const badge = $("live");
  document.body.classList.toggle("is-stale", !live);
  badge.classList.toggle("stale", !live);
  if (live) {
    badge.textContent = "live";
  } else {
    const since = lastHeard ? " since " + new Date(lastHeard).toLocaleTimeString() : "";
    badge.textContent = "stale" + since + " · reconnecting";
  }
}

function setLive(value) {
  if (value) lastHeard = Date.now();
  if (live !== value) {
    live = value;
    showLive();
  }
}

function open() {
  if (source) source.close();
  opened = Date.now();
  source = new EventSource("/events");
  source.addEventListener("state", (e) => {
    state = JSON.parse(e.data);
    setLive(true);
    render();
  });
  source.addEventListener("call", (e) => {
    setLive(true);
    applyCall(JSON.parse(e.data));
  });
  source.addEventListener("ping", () => setLive(true));
  source.onerror = () => {
    setLive(false);
    // The browser retries by itself unless the stream was refused outright.
    if (source.readyState === EventSource.CLOSED) setTimeout(open, REOPEN_MS);
  };
}

// A connection can die without an error (a cable pulled): silence means stale, and a
// connection that hangs without ever answering is opened again.
setInterval(() => {
  const now = Date.now();
  if (now - Math.max(lastHeard, opened) > STALE_AFTER_MS) {
    setLive(false);
    open();
  }
}, 1000);

buildGrid();
render();
open();
