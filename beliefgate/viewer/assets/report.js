/* beliefgate episode report: kitchen player + time-aligned tracks (SVG), from the JSON in
 * <script id="report-data"> (schema: beliefgate/viewer/report.py, report_data).
 * The tracks show a window of steps [t0, t1): the whole episode ("all") or a zoomed window
 * that follows the cursor; every visible step is one point of the posterior chart. */
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
  var zoomSel = document.getElementById("zoom");
  var label = document.getElementById("frame-label");
  var frame = 0, timer = null;
  var labels = [];
  for (var p = 0; p < (D.frames[0][2] || []).length; p++) {
    labels.push(p === D.seat ? "E" : (p === D.partner ? "P" : String(p)));
  }
  var pr = D.present;
  var hasKappa = D.kappa !== null && D.kappa !== undefined;
  var hasBelief = D.belief.some(function (b) { return b !== null; });
  var reasons = Object.keys(D.gate.suppressed).sort();

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
  function titled(e, s) { el("title", {}, e).textContent = s; return e; }
  function skillName(k) { return k < 0 ? "unknown" : D.names[k]; }
  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]; });
  }

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
  var t0 = 0, t1 = T;  // the visible window of steps
  function x(t) { var n = t1 - t0; return LEFT + (n > 1 ? (t - t0) * plotW / (n - 1) : plotW / 2); }
  function xr(v) { return Math.round(v * 10) / 10; }
  function visible(t) { return t >= t0 && t < t1; }

  var rows = [
    { key: "posterior", h: 120, title: "posterior" },
    { key: "true", h: 14, title: "partner true skill" },
    { key: "ego", h: 14, title: "ego skill" },
    { key: "gate", h: 18, title: "gate events" },
    { key: "suppressed", h: 18, title: "suppressed" },
    { key: "replans", h: 18, title: "replans" },
    { key: "deliveries", h: 18, title: "deliveries" },
    { key: "kappa", h: hasKappa ? 50 : 18, title: "\u03ba / commits" },
    { key: "fallbacks", h: 18, title: "fallbacks" },
    { key: "messages", h: 22, title: "messages" }
  ];
  var KIND_MARK = { propose: "P", request: "R", accept: "\u2713", decline: "\u2717", inform: "i", say: "\u201c" };
  var ROLE_COLOURS = { planner: "#e6550d", judge: "#3182bd", hypothesis: "#756bb1" };
  var GAP = 6, H = 0;
  rows.forEach(function (r) { r.y = 4 + H; H += r.h + GAP; });
  H += 20;
  var svg = el("svg", { id: "timeline", width: width, height: H, viewBox: "0 0 " + width + " " + H });
  document.getElementById("tracks").appendChild(svg);
  var layer = null, cursor = null, row = {};

  function absent(r, msg) { text(r.g, LEFT + 6, r.y + Math.min(r.h, 14) - 2, msg, "absent"); }
  function ticks(r, ts, fill, h, title, cls) {
    ts.forEach(function (t) {
      if (!visible(t)) { return; }
      titled(el("rect", { x: xr(x(t) - 1), y: r.y + (r.h - h) / 2, width: 2, height: h, fill: fill, "class": cls }, r.g),
             title + " at t=" + t);
    });
  }

  function drawPosterior(r) {
    if (!hasBelief) { absent(r, "no belief logged (the ego runs no gate)"); return; }
    var nb = 0;
    D.belief.forEach(function (b) { if (b) { nb = b.length; } });
    var n = t1 - t0, lower = new Array(n).fill(0), xs = [];
    for (var t = t0; t < t1; t++) { xs.push(xr(x(t))); }
    // one polygon per skill: its top edge has one point per visible step, then the bottom edge back
    for (var k = 0; k < nb; k++) {
      var topPts = [], botPts = [];
      for (var i = 0; i < n; i++) {
        var b = D.belief[t0 + i], v = b ? b[k] : 0;
        botPts.push(xs[i] + "," + xr(r.y + r.h - lower[i] * r.h));
        topPts.push(xs[i] + "," + xr(r.y + r.h - (lower[i] + v) * r.h));
        lower[i] += v;
      }
      botPts.reverse();
      titled(el("polygon", { "class": "posterior-band", "data-skill": D.names[k], fill: colour(k), "fill-opacity": 0.9,
                             stroke: "none", points: topPts.concat(botPts).join(" ") }, r.g), D.names[k]);
    }
    var cell = plotW / Math.max(n, 1);
    for (var t2 = t0; t2 < t1; t2++) {  // steps without a logged belief are grey
      if (D.belief[t2] === null) {
        el("rect", { x: xr(x(t2) - cell / 2), y: r.y, width: Math.max(1, xr(cell)), height: r.h, fill: "#cccccc",
                     "class": "no-belief" }, r.g);
      }
    }
  }

  function strip(r, seq) {
    var start = t0;
    for (var t = t0 + 1; t <= t1; t++) {
      if (t === t1 || seq[t] !== seq[start]) {
        var x0 = start === t0 ? LEFT : (x(start - 1) + x(start)) / 2;
        var x1 = t === t1 ? LEFT + plotW : (x(t - 1) + x(t)) / 2;
        titled(el("rect", { x: xr(x0), y: r.y, width: Math.max(0.5, xr(x1 - x0)), height: r.h, fill: colour(seq[start]),
                            "class": "strip-run" }, r.g), skillName(seq[start]) + " t=" + start + ".." + (t - 1));
        start = t;
      }
    }
  }

  function drawGate(r) {
    if (!pr.contradiction && !pr.interrupt && !pr.gate_fired) { absent(r, "no gate fields logged"); return; }
    ticks(r, D.gate.contradictions, "#d62728", 10, "contradiction", "contradiction");
    ticks(r, D.gate.gate_fired, "#ff7f0e", 14, "gate fired", "gate-fired");
    D.gate.interrupts.forEach(function (t) {
      if (!visible(t)) { return; }
      var cx = x(t), y = r.y + 2;
      titled(el("polygon", { points: [xr(cx - 4) + "," + y, xr(cx + 4) + "," + y, xr(cx) + "," + (y + 9)].join(" "),
                             fill: "#111111", "class": "interrupt" }, r.g), "interrupt at t=" + t);
    });
  }

  function drawSuppressed(r) {
    if (!pr.suppressed_reason) { absent(r, "suppressed reasons not logged"); return; }
    reasons.forEach(function (reason, i) {
      ticks(r, D.gate.suppressed[reason], REASON_COLOURS[i % REASON_COLOURS.length], 12, reason, "suppressed");
    });
  }

  function drawReplans(r) {
    if (!pr.replanned) { absent(r, "replans not logged"); return; }
    D.replans.forEach(function (rp) {
      if (!visible(rp[0])) { return; }
      if (!rp[3]) {  // a new plan because the running skill ended: not a replan (the header counts interrupts)
        titled(el("line", { x1: xr(x(rp[0])), x2: xr(x(rp[0])), y1: r.y + r.h / 2 - 3, y2: r.y + r.h / 2 + 3,
                            stroke: "#aaaaaa", "stroke-width": 1, "class": "plan-start" }, r.g),
               "new plan t=" + rp[0] + " (" + (rp[1] || "?") + ")");
        return;
      }
      titled(el("circle", { cx: xr(x(rp[0])), cy: r.y + r.h / 2, r: 3.5, "class": rp[2] ? "replan effective" : "replan",
                            fill: rp[2] ? "#111111" : "#ffffff", stroke: "#d62728", "stroke-width": 1.2 }, r.g),
             "replan t=" + rp[0] + " (" + (rp[1] || "?") + (rp[2] ? ", effective" : ", skill unchanged") + ")");
    });
  }

  function drawDeliveries(r) {
    if (!D.deliveries.length) { absent(r, "no deliveries"); return; }
    D.deliveries.forEach(function (d) {
      if (!visible(d[0])) { return; }
      var cx = x(d[0]), cy = r.y + r.h / 2;
      titled(el("polygon", { points: [xr(cx) + "," + (cy - 6), xr(cx + 5) + "," + cy, xr(cx) + "," + (cy + 6), xr(cx - 5) + "," + cy].join(" "),
                             fill: window.BGKitchen.PLAYER_COLOURS[d[1] % 4], "class": "delivery" }, r.g),
             "soup delivered by player " + d[1] + " at t=" + d[0]);
    });
  }

  function drawKappa(r) {
    if (!hasKappa && !pr.commit) { absent(r, "\u03ba not logged (the ego is no \u03ba agent)"); return; }
    if (hasKappa) {  // κ is logged at decisions: a dot per logged value, joined across the steps between them
      [0, 0.5, 1].forEach(function (v) {  // the axis: κ runs from 0 (bottom) to 1 (top)
        var ty = xr(r.y + r.h - v * r.h);
        el("line", { x1: LEFT - 3, x2: LEFT, y1: ty, y2: ty, stroke: "#888888", "class": "kappa-tick" }, r.g);
        var lab = el("text", { x: LEFT - 5, y: ty + 3, "font-size": 8, "text-anchor": "end", fill: "#555555",
                               "class": "kappa-tick-label" }, r.g);
        lab.textContent = String(v);
      });
      if (D.kappa_theta !== null && D.kappa_theta !== undefined) {  // the commit threshold
        var thy = xr(r.y + r.h - D.kappa_theta * r.h);
        titled(el("line", { x1: LEFT, x2: LEFT + plotW, y1: thy, y2: thy, stroke: "#33a02c", "stroke-dasharray": "4 3",
                            "class": "kappa-theta" }, r.g), "\u03b8 = " + D.kappa_theta + ": commit when \u03ba \u2265 \u03b8");
      }
      var pts = [];
      for (var t = t0; t < t1; t++) {
        var v = D.kappa[t];
        if (v === null) { continue; }
        var px = xr(x(t)), py = xr(r.y + r.h - v * r.h);
        pts.push(px + "," + py);
        titled(el("circle", { cx: px, cy: py, r: 1.8, fill: "#6a3d9a", "class": "kappa" }, r.g), "\u03ba = " + v + " at t=" + t);
      }
      if (pts.length > 1) {
        el("polyline", { points: pts.join(" "), fill: "none", stroke: "#6a3d9a", "stroke-width": 1, opacity: 0.6,
                         "class": "kappa-line" }, r.g);
      }
    }
    D.commits.forEach(function (c) {
      if (!visible(c[0])) { return; }
      titled(el("rect", { x: xr(x(c[0]) - 2.5), y: r.y + r.h - 7, width: 5, height: 5, fill: c[1] ? "#33a02c" : "#ffffff",
                          stroke: "#33a02c", "class": "commit" }, r.g), (c[1] ? "committed" : "not committed") + " at t=" + c[0]);
    });
  }

  function drawFallbacks(r) {
    if (!pr.fallbacks) { absent(r, "fallbacks not logged"); return; }
    if (!D.fallbacks.length) { absent(r, "no fallbacks"); return; }
    D.fallbacks.forEach(function (f) {
      if (!visible(f[0])) { return; }
      titled(el("rect", { x: xr(x(f[0]) - 1.5), y: r.y + 3, width: 3, height: r.h - 6, fill: ROLE_COLOURS[f[1]] || "#555555",
                          "class": "fallback" }, r.g), f[1] + " fell back (" + f[2] + ") at t=" + f[0] + (f[3] ? ": " + f[3] : ""));
    });
  }

  function drawMessages(r) {
    var sent = D.messages || [], refused = D.refusals || [];
    if (!sent.length && !refused.length) { absent(r, "no messages"); return; }
    sent.forEach(function (m) {
      if (!visible(m[0])) { return; }
      var g = el("text", { x: xr(x(m[0]) - 3), y: r.y + r.h - 6, "font-size": 11, "font-weight": "bold",
                           fill: window.BGKitchen.PLAYER_COLOURS[m[1] % 4], "class": "message", "data-kind": m[2] }, r.g);
      g.textContent = KIND_MARK[m[2]] || "?";  // the mark first: the tooltip's <title> goes after it
      titled(g, m[3] + " (t=" + m[0] + ", heard at t=" + (m[0] + 1) + ")");
    });
    refused.forEach(function (f) {
      if (!visible(f[0])) { return; }
      titled(el("rect", { x: xr(x(f[0]) - 1), y: r.y + 1, width: 2, height: 5, fill: "#d62728", "class": "refusal" }, r.g),
             "player " + f[1] + "'s message refused (" + f[2] + ") at t=" + f[0] + (f[3] ? ": " + f[3] : ""));
    });
  }

  function drawAxis() {
    var y = H - 16, n = t1 - t0, step = 1;
    while (n / step > 12) { step = step === 1 ? 2 : (String(step)[0] === "2" ? step * 2.5 : step * 2); }
    for (var t = Math.ceil(t0 / step) * step; t < t1; t += step) {
      el("line", { x1: xr(x(t)), x2: xr(x(t)), y1: y - 4, y2: y, stroke: "#999" }, layer);
      text(layer, xr(x(t)) - 6, y + 12, String(t));
    }
  }

  function render(a, b) {
    t0 = Math.max(0, a); t1 = Math.min(T, Math.max(b, t0 + 1));
    if (layer) { svg.removeChild(layer); }
    layer = el("g", { id: "tracks-layer", "data-t0": t0, "data-t1": t1 }, svg);
    rows.forEach(function (r) {
      row[r.key] = r;
      r.g = el("g", { id: "track-" + r.key, "class": "track" }, layer);
      text(r.g, 4, r.y + Math.min(r.h, 14) - 2, r.title);
      el("rect", { x: LEFT, y: r.y, width: plotW, height: r.h, fill: "none", stroke: "#e3e3e3" }, r.g);
    });
    drawPosterior(row.posterior);
    if (D.true_skill.some(function (k) { return k >= 0; })) { strip(row["true"], D.true_skill); }
    else { absent(row["true"], "partner's true skill not logged (e.g. a person)"); }
    if (D.ego_skill.some(function (k) { return k >= 0; })) { strip(row.ego, D.ego_skill); }
    else { absent(row.ego, "ego skill not logged"); }
    drawGate(row.gate);
    drawSuppressed(row.suppressed);
    drawReplans(row.replans);
    drawDeliveries(row.deliveries);
    drawKappa(row.kappa);
    drawFallbacks(row.fallbacks);
    drawMessages(row.messages);
    drawAxis();
    cursor = el("line", { id: "cursor", x1: LEFT, x2: LEFT, y1: 0, y2: H - 18, stroke: "#000", "stroke-width": 1, opacity: 0.6 }, layer);
  }

  function zoomWindow() { var z = zoomSel ? zoomSel.value : "all"; return z === "all" ? T : Math.min(T, Number(z)); }
  function follow(f) {  // keep the cursor inside a zoomed window
    var w = zoomWindow();
    if (w >= T) { if (t0 !== 0 || t1 !== T) { render(0, T); } return; }
    var t = Math.min(f, T - 1);
    if (t < t0 || t >= t1 || t1 - t0 !== w) {
      var a = Math.max(0, Math.min(T - w, t - Math.floor(w / 4)));
      render(a, a + w);
    }
  }

  // legend and notes
  (function () {
    var lg = document.getElementById("legend"), html = [];
    D.names.forEach(function (n, k) { html.push('<span><i class="swatch" style="background:' + colour(k) + '"></i>' + escapeHtml(n) + "</span>"); });
    html.push('<span><i class="swatch" style="background:#d62728"></i>contradiction</span>');
    html.push('<span><i class="swatch" style="background:#ff7f0e"></i>gate fired</span>');
    html.push("<span>\u25bc interrupt</span><span>\u25cf effective replan</span><span>\u25cb replan, skill unchanged</span>" +
              "<span>| new plan after a finished skill (not a replan)</span>");
    html.push("<span>red ring: replan by interrupt</span>");
    if (D.fallbacks.length) {
      Object.keys(ROLE_COLOURS).forEach(function (role) {
        html.push('<span><i class="swatch" style="background:' + ROLE_COLOURS[role] + '"></i>' + role + " fallback</span>");
      });
    }
    reasons.forEach(function (r, i) {
      html.push('<span><i class="swatch" style="background:' + REASON_COLOURS[i % REASON_COLOURS.length] + '"></i>suppressed: ' + escapeHtml(r) + "</span>");
    });
    lg.innerHTML = html.join("");
    var notes = [];
    if ((pr.interrupt || pr.gate_fired) && !pr.contradiction) { notes.push("This agent does not log contradictions."); }
    if (pr.replanned) {
      notes.push(pr.effective ? "Effective replans as logged." :
        "Effective replan: the ego's active skill after the replan differs from the one before (derived from the logged skills).");
    }
    if (D.renormalised_steps) { notes.push(D.renormalised_steps + " logged posteriors did not sum to one and were normalised."); }
    if (D.nonfinite && D.nonfinite.count) { notes.push(D.nonfinite.count + " logged values were not finite numbers (NaN or infinity) and are shown as missing; the first at " + D.nonfinite.first + "."); }
    notes.push("Click or drag on the tracks to jump to a step; arrow keys step, space plays.");
    document.getElementById("notes").textContent = notes.join(" ");
  })();

  // ------------------------------------------------------------------ step panel
  var stepTable = document.getElementById("step-table"), bars = document.getElementById("bars");
  var ACTIONS = D.action_names || ["north", "south", "east", "west", "stay", "interact"];
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
      var ev = D.events[t].map(function (e, i) { return e.length ? (labels[i] || String(i)) + ": " + e.join(" ") : ""; }).filter(Boolean);
      add("events", ev.join("; ") || "-");
      if (hasKappa) { add("\u03ba", D.kappa[t] === null ? "-" : D.kappa[t]); }
      if (D.plan_source[t]) { add("plan source", D.plan_source[t]); }
      var fb = D.fallbacks.filter(function (f) { return f[0] === t; });
      if (fb.length) { add("fallbacks", fb.map(function (f) { return f[1] + ": " + f[2] + (f[3] ? " (" + f[3] + ")" : ""); }).join("; ")); }
      var ms = (D.messages || []).filter(function (m) { return m[0] === t; });
      if (ms.length) { add("messages sent", ms.map(function (m) { return m[3]; }).join("; ")); }
      var rf = (D.refusals || []).filter(function (m) { return m[0] === t; });
      if (rf.length) { add("messages refused", rf.map(function (m) { return "player " + m[1] + ": " + m[2] + (m[3] ? " (" + m[3] + ")" : ""); }).join("; ")); }
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
    follow(f);
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
  if (zoomSel) {
    // a window as long as the episode or longer shows nothing more than "whole episode": not offered
    Array.prototype.slice.call(zoomSel.options).forEach(function (o) {
      if (o.value !== "all" && Number(o.value) >= T) { zoomSel.removeChild(o); }
    });
    zoomSel.addEventListener("change", function () { render(0, T); show(frame); });
  }
  scrubber.max = String(F - 1);
  scrubber.addEventListener("input", function () { show(Number(scrubber.value)); });
  document.addEventListener("keydown", function (e) {
    if (e.target === scrubber || e.target === speedSel || e.target === zoomSel) { return; }
    if (e.key === " ") { e.preventDefault(); playBtn.click(); }
    else if (e.key === "ArrowRight") { e.preventDefault(); stop(); show(frame + 1); }
    else if (e.key === "ArrowLeft") { e.preventDefault(); stop(); show(frame - 1); }
  });
  var dragging = false;
  function seekFromEvent(e) {
    var rect = svg.getBoundingClientRect(), px = (e.clientX - rect.left) * (width / rect.width);
    var t = t0 + Math.round((px - LEFT) / plotW * (t1 - t0 - 1));
    stop();
    show(Math.max(t0, Math.min(t1 - 1, t)));
  }
  svg.addEventListener("mousedown", function (e) { dragging = true; seekFromEvent(e); });
  svg.addEventListener("mousemove", function (e) { if (dragging) { seekFromEvent(e); } });
  window.addEventListener("mouseup", function () { dragging = false; });

  render(0, T);
  show(0);
  window.beliefgateReport = {
    steps: T, frames: F, skills: K,
    frame: function () { return frame; },
    window: function () { return [t0, t1]; },
    seek: function (f) { stop(); show(f); },
    playing: function () { return timer !== null; },
    readyAt: performance.now()
  };
})();
