// The caller's console: every button sends one command through /console/request/<command>
// (the appliance's one command table) and shows the refusal's reason when there is one.
// What is on screen comes from the live state (/events), never from guesses.
"use strict";

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const STALE_AFTER_MS = 12000;
const $ = (id) => document.getElementById(id);

let state = null;
let lastHeard = 0;
let opened = 0;
let source = null;
let frameAttempt = null;

function say(text, ok) {
  const box = $("message");
  box.textContent = text;
  box.className = "message " + (ok ? "ok" : "error");
  box.hidden = false;
}

async function send(command, payload) {
  let answer;
  try {
    const r = await fetch("/console/request/" + command, {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-CSRF-Token": CSRF},
      body: JSON.stringify(payload || {}),
      credentials: "same-origin",
    });
    answer = await r.json();
    if (r.status === 401) answer.error = "You were logged out: log in again.";
  } catch (e) {
    answer = {status: "error", error: "The appliance did not answer (" + e.message + ")"};
  }
  if (answer.status === "ok") say(describe(command, answer.result), true);
  else say("Refused: " + answer.error, false);
  return answer;
}

function describe(command, result) {
  switch (command) {
    case "manual_call": case "confirm": return "Called " + result.ball + ".";
    case "void": return "Voided " + result.ball + " (call " + result.voids_seq + ").";
    case "new_game": return "Game " + result.game + " started.";
    case "end_game": return "Game " + result.game + " ended.";
    case "new_occasion": return "Occasion " + result.occasion + " opened.";
    case "end_occasion": return "Occasion " + result.occasion + " closed.";
    case "claim": return "Calling paused after call " + result.at_index + ": check the card.";
    case "resume": return "Calling goes on.";
    case "verify_card": return "Card " + (result.serial || result.card) + (result.winner ? " is a winner." : " is not a winner.");
    case "import_cards": return result.imported + " card" + (result.imported === 1 ? "" : "s")
      + " imported (" + result.cards + " in all).";
    default: return "Done.";
  }
}

function onSubmit(id, handler) {
  const form = $(id);
  if (form) form.addEventListener("submit", (e) => { e.preventDefault(); handler(form); });
}

// -- drawing the state --------------------------------------------------------------------

function render() {
  const game = state && state.game;
  $("summary").textContent = game
    ? "Game " + game.number + " · " + game.status + " · " + (game.pattern.name || "").replace(/_/g, " ")
      + (game.prize ? " · prize " + game.prize : "") + " · " + game.count + " called"
      + (game.cookie_jar ? " · cookie jar " + game.cookie_jar : "")
    : "No game";
  $("occasion").textContent = state && state.occasion ? "Occasion " + state.occasion.id + " open" : "No occasion open";
  // Offer what can be done now; the appliance still decides (and says why not).
  $("new-occasion").disabled = !!(state && state.occasion);
  $("end-occasion").disabled = !(state && state.occasion);
  $("end-game").disabled = !(game && game.status !== "closed");
  if ($("claim")) {
    $("claim").disabled = !(game && game.status === "running");
    $("resume").disabled = !(game && game.status === "claims");
  }

  const faults = (state && state.faults) || [];
  $("faults").hidden = !faults.length;
  $("faults").textContent = faults.map((f) => "Fault " + f.code + ": " + f.message).join(" · ");

  const pending = state && state.awaiting_confirm;
  $("confirm").hidden = !pending;
  if (pending) {
    $("confirm-ball").textContent = pending.ball || "nothing";
    $("confirm-yes-ball").textContent = pending.ball || "";
    $("confirm-yes").disabled = !pending.ball;
    $("confirm-confidence").textContent = "(" + Math.round(pending.confidence * 100) + "% sure)";
    if (frameAttempt !== pending.attempt) {
      frameAttempt = pending.attempt;
      $("confirm-frame").src = "/console/frame?attempt=" + pending.attempt;
    }
  } else {
    frameAttempt = null;
  }
  refreshDrawn();
}

async function refreshDrawn() {
  let answer;
  try {
    answer = await (await fetch("/console/drawn", {credentials: "same-origin"})).json();
  } catch (e) {
    return;  // the live badge already says the appliance is away
  }
  if (answer.status !== "ok") return;
  const result = answer.result;
  const running = state && state.game && state.game.status === "running";
  const rows = result.drawn.map((c) => {
    const tr = document.createElement("tr");
    tr.dataset.ball = c.ball;
    for (const text of [c.index, c.ball, c.source, new Date(c.ts).toLocaleTimeString()]) {
      const td = tr.insertCell();
      td.textContent = text;
    }
    const button = document.createElement("button");
    button.textContent = "Void";
    button.disabled = !running;
    button.className = "void";
    button.addEventListener("click", () => send("void", {seq: c.seq, reason: $("void-reason").value}));
    tr.insertCell().appendChild(button);
    return tr;
  });
  $("drawn").tBodies[0].replaceChildren(...rows);
  $("drawn-count").textContent = "(" + result.drawn.length + ")";
  $("remaining").replaceChildren(...result.remaining.map((ball) => {
    const span = document.createElement("span");
    span.textContent = ball;
    span.className = "ball L" + ball[0];
    return span;
  }));
  $("remaining-count").textContent = "(" + result.remaining.length + ")";
}

// -- the live feed ------------------------------------------------------------------------

function setLive(value) {
  if (value) lastHeard = Date.now();
  const badge = $("live");
  badge.classList.toggle("stale", !value);
  badge.textContent = value ? "live" : "stale · reconnecting";
}

function open() {
  if (source) source.close();
  opened = Date.now();
  source = new EventSource("/events");
  source.addEventListener("state", (e) => { state = JSON.parse(e.data); setLive(true); render(); });
  source.addEventListener("call", () => setLive(true));
  source.addEventListener("read", () => setLive(true));
  source.addEventListener("ping", () => setLive(true));
  source.onerror = () => {
    setLive(false);
    if (source.readyState === EventSource.CLOSED) setTimeout(open, 2000);
  };
}

setInterval(() => {
  if (Date.now() - Math.max(lastHeard, opened) > STALE_AFTER_MS) { setLive(false); open(); }
}, 1000);

// -- the buttons --------------------------------------------------------------------------

$("confirm-yes").addEventListener("click", () => {
  if (state && state.awaiting_confirm) send("confirm", {ball: state.awaiting_confirm.ball});
});
onSubmit("confirm-correct", async () => {
  const answer = await send("confirm", {ball: $("confirm-other").value.trim()});
  if (answer.status === "ok") $("confirm-other").value = "";
});
onSubmit("manual", async () => {
  const answer = await send("manual_call", {ball: $("manual-ball").value.trim()});
  if (answer.status === "ok") $("manual-ball").value = "";
});
onSubmit("new-game", async () => {
  const answer = await send("new_game", {
    pattern: $("pattern").value, prize: $("prize").value.trim(), all_balls_in_blower: $("all-balls").checked,
  });
  // The balls are checked again before every game.
  if (answer.status === "ok") $("all-balls").checked = false;
});
$("end-game").addEventListener("click", () => send("end_game", {}));
$("new-occasion").addEventListener("click", () => send("new_occasion", {}));
$("end-occasion").addEventListener("click", () => send("end_occasion", {}));
onSubmit("verify", async () => {
  const answer = await send("verify_card", {serial: $("verify-serial").value.trim()});
  const out = $("verify-result");
  const face = $("verify-card");
  if (answer.status !== "ok") { out.textContent = ""; face.replaceChildren(); return; }
  const r = answer.result;
  out.className = "verify-result " + (r.winner ? "winner" : "not-winner");
  out.textContent = (r.winner ? "WINNER" : "Not a winner") + " · card " + (r.serial || r.card)
    + (r.arrangement_name ? " · " + r.arrangement_name : "")
    + (r.won_at_index ? " · completed by call " + r.won_at_index + " (" + r.won_on_ball + ")" : "")
    + (r.late ? " · claimed late" : "");
  showCard(face, r);
});

// The card face: covered numbers filled, the winning arrangement outlined.
function showCard(table, r) {
  const called = new Set(((state && state.game && state.game.called) || []).map((b) => parseInt(b.slice(1), 10)));
  const winning = new Set((r.arrangement || []).map(([row, col]) => row + "," + col));
  table.replaceChildren();
  const head = table.insertRow();
  for (const letter of "BINGO") {
    const th = document.createElement("th");
    th.textContent = letter;
    head.appendChild(th);
  }
  r.grid.forEach((cells, row) => {
    const tr = table.insertRow();
    cells.forEach((n, col) => {
      const td = tr.insertCell();
      td.textContent = n === null ? "FREE" : n;
      td.classList.toggle("covered", n === null || called.has(n));
      td.classList.toggle("winning", winning.has(row + "," + col));
    });
  });
}

if ($("claim")) {
  $("claim").addEventListener("click", () => send("claim", {}));
  $("resume").addEventListener("click", () => send("resume", {}));
}

const cardsFile = $("cards-file");
if (cardsFile) cardsFile.addEventListener("change", async () => {
  const file = cardsFile.files[0];
  if (!file) return;
  await send("import_cards", {csv: await file.text()});
  cardsFile.value = "";
});

open();
