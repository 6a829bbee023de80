// The calibration page: drag and resize the region circle on the picture, test read, save.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const svg = document.getElementById("region-svg");
  const circle = document.getElementById("region-circle");
  const centre = document.getElementById("region-centre");
  const handle = document.getElementById("region-handle");
  const fields = { x: document.getElementById("region-x"), y: document.getElementById("region-y"), r: document.getElementById("region-r") };
  const message = document.getElementById("message");
  const W = Number(svg.dataset.width), H = Number(svg.dataset.height);
  let region = null;          // {x, y, r} in reading-frame pixels, or null = whole picture
  let lastCircle = null;      // the ball the last test read found
  const cameraEdits = {};     // controls changed in the form, saved with the region

  const clamp = (v, lo, hi) => Math.min(Math.max(v, lo), hi);

  function draw() {
    const shown = region || { x: W / 2, y: H / 2, r: H / 3 };
    circle.setAttribute("cx", shown.x); circle.setAttribute("cy", shown.y); circle.setAttribute("r", shown.r);
    centre.setAttribute("cx", shown.x); centre.setAttribute("cy", shown.y);
    handle.setAttribute("cx", shown.x + shown.r); handle.setAttribute("cy", shown.y);
    circle.classList.toggle("off", !region);
    for (const k of ["x", "y", "r"]) fields[k].value = region ? Math.round(region[k]) : "";
    Tech.set("region-state", region
      ? "The reader looks for the ball inside this circle."
      : "No region: the reader searches the whole picture. Drag the circle onto the ball to set one.", "hint");
  }

  function setRegion(next) {
    region = next && { x: clamp(next.x, 0, W), y: clamp(next.y, 0, H), r: clamp(next.r, 6, Math.max(W, H)) };
    draw();
  }

  // -- dragging (mouse, pen and touch alike) -------------------------------------------------
  function toFrame(event) {
    const point = svg.createSVGPoint();
    point.x = event.clientX; point.y = event.clientY;
    return point.matrixTransform(svg.getScreenCTM().inverse());
  }
  let drag = null;
  function begin(mode, event) {
    event.preventDefault();
    const p = toFrame(event);
    const start = region || { x: W / 2, y: H / 2, r: H / 3 };
    drag = { mode, dx: p.x - start.x, dy: p.y - start.y, start };
    svg.setPointerCapture(event.pointerId);
  }
  circle.addEventListener("pointerdown", e => begin("move", e));
  handle.addEventListener("pointerdown", e => begin("resize", e));
  svg.addEventListener("pointermove", e => {
    if (!drag) return;
    const p = toFrame(e);
    if (drag.mode === "move") setRegion({ x: p.x - drag.dx, y: p.y - drag.dy, r: drag.start.r });
    else setRegion({ x: drag.start.x, y: drag.start.y, r: Math.hypot(p.x - drag.start.x, p.y - drag.start.y) });
  });
  const end = () => { drag = null; };
  svg.addEventListener("pointerup", end);
  svg.addEventListener("pointercancel", end);

  for (const k of ["x", "y", "r"]) {
    fields[k].addEventListener("change", () => {
      const v = { x: Number(fields.x.value), y: Number(fields.y.value), r: Number(fields.r.value) };
      if ([v.x, v.y, v.r].every(n => Number.isFinite(n) && n > 0)) setRegion(v);
    });
  }

  // -- buttons ------------------------------------------------------------------------------
  const fit = document.getElementById("fit-ball");
  fit.addEventListener("click", () => {
    if (lastCircle) setRegion({ x: lastCircle[0], y: lastCircle[1], r: lastCircle[2] });
  });
  document.getElementById("no-region").addEventListener("click", () => setRegion(null));

  const readButton = document.getElementById("test-read");
  readButton.addEventListener("click", async () => {
    readButton.disabled = true;
    Tech.say(message, "Reading…");
    const answer = await Tech.call("POST", "/api/test-read", { region });
    readButton.disabled = false;
    if (answer.status !== "ok") { Tech.say(message, "Test read failed: " + answer.error, "error"); return; }
    Tech.say(message, "");
    showReading(answer.result);
    showLamps(answer.result.lamps);  // a reading lights both lamps again
  });

  function showReading(r) {
    document.getElementById("read-result").hidden = false;
    document.getElementById("read-empty").hidden = true;
    const big = document.getElementById("read-ball");
    if (r.ball) { big.textContent = r.ball; big.className = "big-ball"; }
    else {
      big.textContent = "Unsure" + (r.guess ? " (looks like " + r.guess.ball + "?)" : "");
      big.className = "big-ball unsure";
    }
    big.dataset.ball = r.ball || "";
    const outcome = { commit: "would be called", confirm: "would ask a person to confirm",
                      represent: "would be presented again" }[r.decision];
    Tech.set("read-detail", `${outcome} · confidence ${(100 * r.confidence).toFixed(2)} % · ` +
             `${r.frames} frames in ${Math.round(r.ms)} ms (${Math.round(r.ms_per_frame)} ms reading each)` +
             (r.reason ? " · " + r.reason : ""));
    const print = document.getElementById("print-image");
    print.hidden = !r.print_image;
    if (r.print_image) print.src = r.print_image;
    document.getElementById("read-frame").src = r.frame;
    lastCircle = r.circle;
    fit.disabled = !lastCircle;
  }

  document.getElementById("save").addEventListener("click", async () => {
    const changes = { reader: { region } };
    if (Object.keys(cameraEdits).length) changes.camera = { ...cameraEdits };
    const answer = await Tech.call("POST", "/api/config", changes);
    if (answer.status === "ok") Tech.say(message, "Saved to " + answer.result.saved + " and in use now.", "ok");
    else Tech.say(message, "Not saved: " + answer.error, "error");
  });

  // -- camera controls ----------------------------------------------------------------------
  function showControls(camera) {
    const box = document.getElementById("camera-controls");
    box.replaceChildren();
    const names = Object.keys(camera.controls || {});
    if (!names.length) {
      const p = document.createElement("p");
      p.className = "hint";
      p.textContent = camera.error ? "The camera cannot tell its controls: " + camera.error
                                   : "This camera has no adjustable controls.";
      box.append(p);
      return;
    }
    const form = document.createElement("div");
    form.className = "region-fields";
    for (const name of names) {
      const label = document.createElement("label");
      const input = document.createElement("input");
      input.type = "number"; input.step = "any"; input.name = name; input.value = camera.controls[name];
      label.append(name.replace("_", " ") + " ", input);
      form.append(label);
    }
    const apply = document.createElement("button");
    apply.type = "button"; apply.textContent = "Apply now";
    apply.addEventListener("click", async () => {
      const values = {};
      for (const input of form.querySelectorAll("input")) values[input.name] = Number(input.value);
      const answer = await Tech.call("POST", "/api/camera/controls", values);
      if (answer.status !== "ok") { Tech.say(message, "Camera: " + answer.error, "error"); return; }
      for (const key of ["exposure_us", "gain"]) if (key in values) cameraEdits[key] = values[key];
      Tech.say(message, "Applied to the camera; press Save to keep it.", "ok");
    });
    box.append(form, apply);
  }

  // -- glare lamps (camera.lights) ---------------------------------------------------------
  function showLamps(lamps) {
    document.getElementById("lamps").hidden = !lamps;
    if (!lamps) return;
    const lit = ["a", "b"].filter(k => lamps[k]).map(k => k.toUpperCase());
    document.getElementById("lamps-state").textContent =
      lit.length === 2 ? "Both lamps lit." : lit.length ? "Lamp " + lit[0] + " lit alone." : "No lamp lit.";
  }
  for (const button of document.querySelectorAll("#lamps button[data-lit]")) {
    button.addEventListener("click", async () => {
      const answer = await Tech.call("POST", "/api/camera/lamps", { lit: button.dataset.lit });
      if (answer.status === "ok") showLamps(answer.result);
      else Tech.say(message, "Lamps: " + answer.error, "error");
    });
  }

  (async () => {
    const answer = await Tech.call("GET", "/api/config");
    if (answer.status !== "ok") { Tech.say(message, answer.error, "error"); return; }
    const cfg = answer.result;
    setRegion(cfg.region);
    document.getElementById("game-warning").hidden = !cfg.game_running;
    if (!cfg.config_path) Tech.say(message, "Started without a config file: changes can be tried but not saved.", "warn");
    showControls(cfg.camera);
    showLamps(cfg.lamps);
  })();
  draw();
});
