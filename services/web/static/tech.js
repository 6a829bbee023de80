// The technician's pages: shared helpers, and the small pages that only poll and show.
"use strict";

const Tech = (() => {
  const csrf = () => document.querySelector('meta[name="csrf-token"]').content;

  // Every POST carries the session's CSRF token; the answer is {status, result|error}.
  async function call(method, path, body) {
    const options = { method, headers: { "Accept": "application/json" }, credentials: "same-origin" };
    if (method !== "GET") {
      options.headers["Content-Type"] = "application/json";
      options.headers["X-CSRF-Token"] = csrf();
      options.body = JSON.stringify(body === undefined ? {} : body);
    }
    let response;
    try {
      response = await fetch(path, options);
    } catch (e) {
      return { status: "error", error: "the appliance does not answer (" + e.message + ")" };
    }
    if (response.status === 401) { window.location = "/login?next=" + encodeURIComponent(location.pathname); }
    try {
      return await response.json();
    } catch (e) {
      return { status: "error", error: "HTTP " + response.status };
    }
  }

  // Poll a JSON endpoint while the page is open; a failed poll shows as stale, never as an alert.
  function poll(path, render, ms) {
    let timer = null;
    async function tick() {
      const answer = await call("GET", path);
      if (answer.status === "ok") render(answer.result);
      timer = setTimeout(tick, ms);
    }
    tick();
    return () => clearTimeout(timer);
  }

  function say(element, text, kind) {
    element.textContent = text;
    element.className = "message " + (kind || "");
    element.hidden = !text;
  }

  function set(id, text, cls) {
    const el = document.getElementById(id);
    if (!el) return;
    el.textContent = text;
    if (cls !== undefined) el.className = cls;
  }

  function duration(seconds) {
    const d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600);
    const m = Math.floor(seconds % 3600 / 60), s = seconds % 60;
    return (d ? d + " d " : "") + (d || h ? h + " h " : "") + m + " min " + (d ? "" : s + " s");
  }

  function fitPictures() {
    for (const box of document.querySelectorAll(".picture[data-w]")) {
      box.style.aspectRatio = box.dataset.w + " / " + box.dataset.h;
    }
  }

  return { call, poll, say, set, duration, fitPictures };
})();

// -- live view ----------------------------------------------------------------------------------
function initLive() {
  const img = document.getElementById("live-img");
  const boxes = document.querySelectorAll("#overlays input[type=checkbox]");
  const update = () => {
    const on = [...boxes].filter(b => b.checked).map(b => b.name + "=1");
    img.src = "/live.mjpg?" + on.join("&");
  };
  boxes.forEach(b => b.addEventListener("change", update));
  Tech.poll("/api/last-read", read => {
    if (!read) return;
    const dl = document.getElementById("last-read");
    const show = {
      ball: read.ball || "unsure",
      confidence: (100 * read.confidence).toFixed(1) + " %",
      decision: { commit: "called", confirm: "asked a person", represent: "presented again" }[read.decision] || read.decision,
      reason: read.reason || "–",
      ts: new Date(read.ts).toLocaleTimeString(),
    };
    for (const [key, text] of Object.entries(show)) dl.querySelector(`[data-key="${key}"]`).textContent = text;
  }, 1000);
}

// -- sensor -------------------------------------------------------------------------------------
function initSensor() {
  Tech.poll("/api/sensor", s => {
    const lamp = document.getElementById("sensor-state");
    if (!s.running) { lamp.textContent = "Sensor not running"; lamp.className = "lamp unknown"; return; }
    if (s.fault) { lamp.textContent = "Fault: " + s.fault; lamp.className = "lamp fault"; }
    else if (s.active) { lamp.textContent = "Ball in the holder"; lamp.className = "lamp on"; }
    else { lamp.textContent = "Holder empty"; lamp.className = "lamp off"; }
    Tech.set("balls-seen", String(s.balls_seen));
    Tech.set("sensor-pin", s.settings.pin + (s.settings.pull_up === null ? "" : s.settings.pull_up ? " (pull-up)" : " (pull-down)"));
    Tech.set("sensor-debounce", Math.round(s.settings.debounce_s * 1000) + " ms");
    Tech.set("sensor-settle", Math.round(s.settings.settle_s * 1000) + " ms");
    Tech.set("sensor-stuck", s.settings.stuck_s + " s");
    const list = document.getElementById("sensor-faults");
    list.replaceChildren();
    for (const f of [...s.faults].reverse()) {
      const li = document.createElement("li");
      li.textContent = f.time + ": " + f.message + (f.cleared_t === null ? " (still)" : " (cleared)");
      list.append(li);
    }
    if (!s.faults.length) {
      const li = document.createElement("li");
      li.className = "hint"; li.textContent = "none";
      list.append(li);
    }
  }, 500);
}

// -- status -------------------------------------------------------------------------------------
function initStatus() {
  Tech.poll("/api/status", s => {
    Tech.set("st-mqtt", s.mqtt_connected ? "connected to " + s.mqtt_url : "NOT connected to " + s.mqtt_url,
             s.mqtt_connected ? "good" : "bad");
    Tech.set("st-camera", s.camera + ", " + s.camera_fps + " frames per second");
    Tech.set("st-temp", s.cpu_temp_c === null ? "not reported on this machine" : s.cpu_temp_c + " °C",
             s.cpu_temp_c !== null && s.cpu_temp_c >= 80 ? "bad" : "");
    Tech.set("st-disk", s.disk_free_mb + " MB", s.disk_free_mb < s.disk_min_free_mb ? "bad" : "");
    Tech.set("st-game", s.game ? `game ${s.game.number}: ${s.game.status}, ${s.game.count} balls called` : "no game");
    Tech.set("st-faults", s.faults.length ? s.faults.map(f => f.code + ": " + f.message).join("; ") : "none",
             s.faults.length ? "bad" : "good");
    Tech.set("st-version", s.version + (s.simulation ? " (simulation)" : ""));
    Tech.set("st-uptime", Tech.duration(s.uptime_s));
  }, 2000);
}

// -- ball check ---------------------------------------------------------------------------------
function initBallCheck() {
  const body = document.querySelector("#ball-grid tbody");
  const cells = {};
  "BINGO".split("").forEach((letter, row) => {
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    th.textContent = letter;
    tr.append(th);
    for (let n = row * 15 + 1; n <= row * 15 + 15; n++) {
      const td = document.createElement("td");
      const span = document.createElement("span");
      span.className = "cell missing";
      span.textContent = n;
      span.id = "ball-" + n;
      td.append(span);
      tr.append(td);
      cells[n] = span;
    }
    body.append(tr);
  });
  const message = document.getElementById("message");
  const start = document.getElementById("start-check");
  const finish = document.getElementById("finish-check");
  async function act(action, done) {
    const answer = await Tech.call("POST", "/api/ball-check", { action });
    if (answer.status === "ok") Tech.say(message, done, "ok");
    else Tech.say(message, "Refused: " + answer.error, "error");
  }
  start.addEventListener("click", () => act("start", "Ball check started: pass every ball in front of the reader."));
  finish.addEventListener("click", () => act("finish", "Ball check finished: the result is in the record."));
  document.getElementById("enter-ball").addEventListener("submit", async event => {
    event.preventDefault();
    const input = document.getElementById("ball-by-hand");
    const answer = await Tech.call("POST", "/api/ball-check", { action: "ball", ball: input.value.trim() });
    if (answer.status === "ok") { Tech.say(message, input.value.trim().toUpperCase() + " entered.", "ok"); input.value = ""; }
    else Tech.say(message, "Not entered: " + answer.error, "error");
  });
  Tech.poll("/api/ball-check", check => {
    const labels = { none: "no check yet", running: "running", passed: "passed", failed: "FAILED: balls missing or duplicated" };
    start.disabled = !check.available || check.status === "running";
    finish.disabled = !check.available || check.status !== "running";
    Tech.set("check-status", check.available ? labels[check.status] : "not available in this version",
             "tag " + check.status);
    for (const b of check.balls) {
      cells[b.number].className = "cell " + b.state;
      cells[b.number].title = b.ball + ": " + b.state;
    }
    const c = check.counts;
    Tech.set("check-counts", check.balls.length
      ? `${c.seen} of 75 seen · ${c.missing} missing · ${c.duplicated} duplicated · ${c.unreadable} unreadable`
      : "");
  }, 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  Tech.fitPictures();
  const init = { live: initLive, sensor: initSensor, status: initStatus, "ball-check": initBallCheck }[document.body.dataset.page];
  if (init) init();
});
