/* beliefgate episode report: kitchen player + time-aligned tracks (SVG), from the JSON in
 * <script id="report-data"> (schema: beliefgate/viewer/report.py, report_data). */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("report-data").textContent);
  var SVGNS = "http://www.w3.org/2000/svg";
  var SKILL_COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                       "#9c755f", "#bab0ac", "#86bcb6", "#d37295"];
  var REASON_COLOURS = ["#8c564b", "#9467bd", "#17becf", "#bcbd22", "#7f7f7f", "#e377c2", "#1f77b4"];
  var T = D.steps, F = D.frames.length, K = D.names.length;
  var kitchen = document.getElementById("kitchen");
  var scrubber = document.getElementById("scrubber");
  var playBtn = document.getElementById("play");
  var speedSel = document.getElementById("speed");
  var label = document.getElementById("frame-label");
  var frame = 0, timer = null;
  var labels = [];
  for (var p = 0; p < (D.frames[0][2] || []).length; p++) {
    labels.push(p === D.seat ? "E" : (p === D.partner ? "P" : String(p)));
  }

  function colour(k) { return k < 0 ? "#dddddd" : SKILL_COLOURS[k % SKILL_COLOURS.length]; }
  function el(name, attrs, parent) {
    var e = document.createElementNS(SVGNS, name);
    for (var a in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, a)) { e.setAttribute(a, attrs[a]); } }
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function text(parent, x, y, s, cls) {
    var t = el("text", { x: x, y: y }, parent);
    if (cls) { t.setAttribute("class", cls); }
    t.textContent = s;
    return t;
  }
  function skillName(k) { return k < 0 ? "unknown" : D.names[k]; }

  // ------------------------------------------------------------------ summary
  (function () {
    var s = D.summary || {}, parts = [];
    ["deliveries", "reward", "steps", "replans", "llm_calls"].forEach(function (key) {
      if (s[key] !== undefined) { parts.push(key + " " + s[key]); }
    });
    if (!D.complete) { parts.push("incomplete log (no final row)"); }
    parts.push("source " + (D.source || "-"));
    document.getElementById("summary").textContent = parts.join(" \u00b7 ");
  })();

  // ------------------------------------------------------------------ tracks
  var LEFT = 120, RIGHT = 12;
  var width = Math.max(720, Math.min(1600, (document.getElementById("tracks").clientWidth || 1000)));
  var plotW = width - LEFT - RIGHT;
  function x(t) { return LEFT + (T > 1 ? t * plotW / (T - 1) : plotW / 2); }
  function xr(v) { return Math.round(v * 10) / 10; }

  var rows = [];
  var hasKappa = D.kappa !== null && D.kappa !== undefined;
  rows.push({ key: "posterior", h: 120, title: "posterior" });
  rows.push({ key: "true", h: 14, title: "partner true skill" });
  rows.push({ key: "ego", h: 14, title: "ego skill" });
  rows.push({ key: "gate", h: 18, title: "gate events" });
  rows.push({ key: "suppressed", h: 18, title: "suppressed" });
  rows.push({ key: "replans", h: 18, title: "replans" });
  rows.push({ key: "deliveries", h: 18, title: "deliveries" });
  rows.push({ key: "kappa", h: hasKappa ? 50 : 18, title: "\u03ba / commits" });
  var GAP = 6, top = 4, H = 0;
  rows.forEach(function (r) { r.y = top + H; H += r.h + GAP; });
  H += 20;
  var svg = el("svg", { id: "timeline", width: width, height: H, viewBox: "0 0 " + width + " " + H });
  document.getElementById("tracks").appendChild(svg);
  var row = {};
  rows.forEach(function (r) {
    row[r.key] = r;
    var g = el("g", { id: "track-" + r.key, "class": "track" }, svg);
    r.g = g;
    text(g, 4, r.y + Math.min(r.h, 14) - 2, r.title);
    el("rect", { x: LEFT, y: r.y, width: plotW, height: r.h, fill: "none", stroke: "#e3e3e3" }, g);
  });
  function absent(r, msg) { text(r.g, LEFT + 6, r.y + Math.min(r.h, 14) - 2, msg, "absent"); }
  function ticks(r, ts, fill, h, title) {
    ts.forEach(function (t) {
      var e = el("rect", { x: xr(x(t) - 1), y: r.y + (r.h - h) / 2, width: 2, height: h, fill: fill }, r.g);
      if (title) { el("title", {}, e).textContent = title + " at t=" + t; }
    });
  }

  // posterior: one polygon per skill, its top edge one point per step, then the bottom edge back
  (function () {
    var r = row.posterior, hasBelief = D.belief.some(function (b) { return b !== null; });
    if (!hasBelief) { absent(r, "no belief logged (the ego runs no gate)"); return; }
    var nb = D.belief[0] ? D.belief[0].length : 0;
    D.belief.forEach(function (b) { if (b) { nb = b.length; } });
    var lower = new Array(T).fill(0);
    var xs = [];
    for (var t = 0; t < T; t++) { xs.push(xr(x(t))); }
    for (var k = 0; k < nb; k++) {
      var topPts = [], botPts = [];
      for (var t2 = 0; t2 < T; t2++) {
        var b = D.belief[t2], v = b ? b[k] : 0;
        var y0 = r.y + r.h - lower[t2] * r.h, y1 = r.y + r.h - (lower[t2] + v) * r.h;
        botPts.push(xs[t2] + "," + xr(y0));
        topPts.push(xs[t2] + "," + xr(y1));
        lower[t2] += v;
      }
      botPts.reverse();
      var poly = el("polygon", { "class": "posterior-band", "data-skill": D.names[k], fill: colour(k),
                                 "fill-opacity": 0.9, stroke: "none", points: topPts.concat(botPts).join(" ") }, r.g);
      el("title", {}, poly).textContent = D.names[k];
    }
    // steps without a logged belief are hatched grey
    for (var t3 = 0; t3 < T; t3++) {
      if (D.belief[t3] === null) {
        el("rect", { x: xr(x(t3) - plotW / Math.max(T, 1) / 2), y: r.y, width: Math.max(1, xr(plotW / Math.max(T, 1))),
                     height: r.h, fill: "#cccccc", "class": "no-belief" }, r.g);
      }
    }
  })();

  function strip(r, seq) {
    var start = 0;
    for (var t = 1; t <= T; t++) {
      if (t === T || seq[t] !== seq[start]) {
        var x0 = start === 0 ? LEFT : (x(start - 1) + x(start)) / 2;
        var x1 = t === T ? LEFT + plotW : (x(t - 1) + x(t)) / 2;
        var e = el("rect", { x: xr(x0), y: r.y, width: Math.max(0.5, xr(x1 - x0)), height: r.h,
                             fill: colour(seq[start]), "class": "strip-run" }, r.g);
        el("title", {}, e).textContent = skillName(seq[start]) + " t=" + start + ".." + (t - 1);
        start = t;
      }
    }
  }
  if (D.true_skill.some(function (k) { return k >= 0; })) { strip(row["true"], D.true_skill); }
  else { absent(row["true"], "partner's true skill not logged (e.g. a person)"); }
  if (D.ego_skill.some(function (k) { return k >= 0; })) { strip(row.ego, D.ego_skill); }
  else { absent(row.ego, "ego skill not logged"); }

  var pr = D.present;
  (function () {
    var r = row.gate;
    if (!pr.contradiction && !pr.interrupt && !pr.gate_fired) { absent(r, "no gate fields logged"); return; }
    ticks(r, D.gate.contradictions, "#d62728", 10, "contradiction");
    ticks(r, D.gate.gate_fired, "#ff7f0e", 14, "gate fired");
    D.gate.interrupts.forEach(function (t) {
      var cx = x(t), y = r.y + 2;
      var e = el("polygon", { points: [xr(cx - 4) + "," + y, xr(cx + 4) + "," + y, xr(cx) + "," + (y + 9)].join(" "),
                              fill: "#111111", "class": "interrupt" }, r.g);
      el("title", {}, e).textContent = "interrupt at t=" + t;
    });
  })();
  var reasons = Object.keys(D.gate.suppressed).sort();
  if (!pr.suppressed_reason) { absent(row.suppressed, "suppressed reasons not logged"); }
  else {
    reasons.forEach(function (reason, i) {
      ticks(row.suppressed, D.gate.suppressed[reason], REASON_COLOURS[i % REASON_COLOURS.length], 12, reason);
    });
  }
  (function () {
    var r = row.replans;
    if (!pr.replanned) { absent(r, "replans not logged"); return; }
    D.replans.forEach(function (rp) {
      var e = el("circle", { cx: xr(x(rp[0])), cy: r.y + r.h / 2, r: 3.5, "class": rp[2] ? "replan effective" : "replan",
                             fill: rp[2] ? "#111111" : "#ffffff", stroke: rp[3] ? "#d62728" : "#111111", "stroke-width": 1.2 }, r.g);
      el("title", {}, e).textContent = "replan t=" + rp[0] + " (" + (rp[1] || "?") + (rp[2] ? ", effective" : ", no change") + ")";
    });
  })();
  (function () {
    var r = row.deliveries;
    if (!D.deliveries.length) { absent(r, "no deliveries"); return; }
    D.deliveries.forEach(function (d) {
      var cx = x(d[0]), cy = r.y + r.h / 2;
      var e = el("polygon", { points: [xr(cx) + "," + (cy - 6), xr(cx + 5) + "," + cy, xr(cx) + "," + (cy + 6), xr(cx - 5) + "," + cy].join(" "),
                              fill: window.BGKitchen.PLAYER_COLOURS[d[1] % 4], "class": "delivery" }, r.g);
      el("title", {}, e).textContent = "soup delivered by player " + d[1] + " at t=" + d[0];
    });
  })();
  (function () {
    var r = row.kappa;
    if (!hasKappa && !pr.commit) { absent(r, "\u03ba not logged (the ego is no \u03ba agent)"); return; }
    if (hasKappa) {
      var segs = [], cur = [];
      D.kappa.forEach(function (v, t) {
        if (v === null) { if (cur.length) { segs.push(cur); cur = []; } return; }
        cur.push(xr(x(t)) + "," + xr(r.y + r.h - v * r.h));
      });
      if (cur.length) { segs.push(cur); }
      segs.forEach(function (s) {
        el("polyline", { points: s.join(" "), fill: "none", stroke: "#6a3d9a", "stroke-width": 1.2, "class": "kappa" }, r.g);
      });
    }
    D.commits.forEach(function (c) {
      var e = el("rect", { x: xr(x(c[0]) - 2.5), y: r.y + r.h - 7, width: 5, height: 5,
                           fill: c[1] ? "#33a02c" : "#ffffff", stroke: "#33a02c", "class": "commit" }, r.g);
      el("title", {}, e).textContent = (c[1] ? "committed" : "not committed") + " at t=" + c[0];
    });
  })();
  // time axis
  (function () {
    var y = H - 16, step = Math.pow(10, Math.max(0, Math.floor(Math.log10(Math.max(T, 10))) - 1));
    while (T / step > 12) { step *= 2; }
    for (var t = 0; t < T; t += step) {
      el("line", { x1: xr(x(t)), x2: xr(x(t)), y1: y - 4, y2: y, stroke: "#999" }, svg);
      text(svg, xr(x(t)) - 6, y + 12, String(t));
    }
  })();
  var cursor = el("line", { id: "cursor", x1: LEFT, x2: LEFT, y1: 0, y2: H - 18, stroke: "#000", "stroke-width": 1, opacity: 0.6 }, svg);

  // legend
  (function () {
    var lg = document.getElementById("legend"), html = [];
    D.names.forEach(function (n, k) { html.push('<span><i class="swatch" style="background:' + colour(k) + '"></i>' + escapeHtml(n) + "</span>"); });
    html.push('<span><i class="swatch" style="background:#d62728"></i>contradiction</span>');
    html.push('<span><i class="swatch" style="background:#ff7f0e"></i>gate fired</span>');
    html.push("<span>\u25bc interrupt</span><span>\u25cf effective replan</span><span>\u25cb replan, skill unchanged</span>");
    reasons.forEach(function (r, i) {
      html.push('<span><i class="swatch" style="background:' + REASON_COLOURS[i % REASON_COLOURS.length] + '"></i>suppressed: ' + escapeHtml(r) + "</span>");
    });
    lg.innerHTML = html.join("");
    var notes = [];
    if ((pr.interrupt || pr.gate_fired) && !pr.contradiction) { notes.push("Contradictions are not logged by this agent."); }
    if (pr.replanned) {
      notes.push(pr.effective ? "Effective replans as logged." :
        "Effective replan: the ego's active skill after the replan differs from the one before (derived from the logged skills).");
    }
    if (D.renormalised_steps) { notes.push(D.renormalised_steps + " logged posteriors did not sum to one and were normalised."); }
    notes.push("Click or drag on the tracks to jump to a step.");
    document.getElementById("notes").textContent = notes.join(" ");
  })();
  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]; });
  }

  // ------------------------------------------------------------------ step panel
  var stepTable = document.getElementById("step-table"), bars = document.getElementById("bars");
  var ACTIONS = ["north", "south", "east", "west", "stay", "interact"];
  function panel(f) {
    var t = Math.min(f, T - 1), fr = D.frames[f], rowsHtml = [];
    function add(k, v) { rowsHtml.push("<tr><td>" + k + "</td><td>" + escapeHtml(v) + "</td></tr>"); }
    add("timestep", fr[0] + (f >= T ? " (final state)" : ""));
    add("score", fr[1]);
    if (f < T) {
      add("actions", D.actions[t].map(function (a) { return ACTIONS[a] || a; }).join(", "));
      add("ego skill", skillName(D.ego_skill[t]));
      add("partner true skill", skillName(D.true_skill[t]));
      add("partner MAP", D.partner_map[t] || "-");
      add("replan reason", D.reasons[t] || "-");
      var ev = D.events[t].map(function (e, i) { return e.length ? "P" + i + ": " + e.join(" ") : ""; }).filter(Boolean);
      add("events", ev.join("; ") || "-");
      if (hasKappa) { add("\u03ba", D.kappa[t] === null ? "-" : D.kappa[t]); }
    }
    stepTable.innerHTML = rowsHtml.join("");
    var b = D.belief[t], out = [];
    if (!b) { bars.innerHTML = '<div class="muted">no belief at this step</div>'; return; }
    for (var k = 0; k < b.length; k++) {
      out.push('<div class="bar-row"><span class="bar-name' + (k === D.true_skill[t] ? " true" : "") + '">' + escapeHtml(D.names[k]) +
               '</span><span class="bar-track"><span class="bar-fill" style="display:block;width:' + (100 * b[k]).toFixed(1) +
               "%;background:" + colour(k) + '"></span></span><span class="bar-val">' + (100 * b[k]).toFixed(1) + "%</span></div>");
    }
    bars.innerHTML = out.join("");
  }

  // ------------------------------------------------------------------ player
  function show(f) {
    f = Math.max(0, Math.min(F - 1, f | 0));
    frame = f;
    window.BGKitchen.draw(kitchen, D.layout, D.frames[f], { labels: labels });
    kitchen.setAttribute("data-frame", String(f));
    if (String(scrubber.value) !== String(f)) { scrubber.value = String(f); }
    label.textContent = "t = " + D.frames[f][0] + " / " + (F - 1);
    var cx = f >= T ? LEFT + plotW : x(f);
    cursor.setAttribute("x1", xr(cx)); cursor.setAttribute("x2", xr(cx));
    panel(f);
  }
  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    playBtn.innerHTML = "&#9654; play";
  }
  function start() {
    if (frame >= F - 1) { show(0); }
    stop();
    timer = setInterval(function () {
      if (frame >= F - 1) { stop(); return; }
      show(frame + 1);
    }, 1000 / Number(speedSel.value || 10));
    playBtn.innerHTML = "&#10074;&#10074; pause";
  }
  playBtn.addEventListener("click", function () { if (timer === null) { start(); } else { stop(); } });
  speedSel.addEventListener("change", function () { if (timer !== null) { start(); } });
  scrubber.max = String(F - 1);
  scrubber.addEventListener("input", function () { show(Number(scrubber.value)); });
  document.addEventListener("keydown", function (e) {
    if (e.target === scrubber || e.target === speedSel) { return; }
    if (e.key === " ") { e.preventDefault(); playBtn.click(); }
    else if (e.key === "ArrowRight") { e.preventDefault(); stop(); show(frame + 1); }
    else if (e.key === "ArrowLeft") { e.preventDefault(); stop(); show(frame - 1); }
  });
  var dragging = false;
  function seekFromEvent(e) {
    var rect = svg.getBoundingClientRect(), px = (e.clientX - rect.left) * (width / rect.width);
    var t = Math.round((px - LEFT) / plotW * (T - 1));
    stop();
    show(Math.max(0, Math.min(T - 1, t)));
  }
  svg.addEventListener("mousedown", function (e) { dragging = true; seekFromEvent(e); });
  svg.addEventListener("mousemove", function (e) { if (dragging) { seekFromEvent(e); } });
  window.addEventListener("mouseup", function () { dragging = false; });

  show(0);
  window.beliefgateReport = {
    steps: T, frames: F, skills: K,
    frame: function () { return frame; },
    seek: function (f) { stop(); show(f); },
    playing: function () { return timer !== null; },
    readyAt: performance.now()
  };
})();
