/* beliefgate kitchen drawing: one Overcooked state on a <canvas>, from the compact frame
 * of beliefgate/envs/overcooked/render.py (the Overcooked domain's rendering):
 *   frame = [timestep, score, players, pots, counters]
 *   players[i] = [x, y, orientation, held]  orientation: 0 N, 1 S, 2 E, 3 W
 *   pots[j]    = [ingredients, status, timer]  status: 0 idle, 1 cooking, 2 ready
 *   counters[k]= [x, y, object]; objects: 0 none, 1 onion, 2 tomato, 3 dish, 4 soup
 * Shared by the episode report and the play page. No dependencies. */
(function () {
  "use strict";
  var DIRS = [[0, -1], [0, 1], [1, 0], [-1, 0]];
  var PLAYER_COLOURS = ["#2f6fdf", "#1f9d55", "#b8860b", "#8e44ad"];
  var TERRAIN = {
    "X": "#c9a46c", "P": "#8a8d91", "O": "#c9a46c", "T": "#c9a46c", "D": "#c9a46c", "S": "#7fbf7f", " ": "#f4f1ea"
  };

  function circle(ctx, x, y, r, fill, stroke) {
    ctx.beginPath();
    ctx.arc(x, y, r, 0, 2 * Math.PI);
    if (fill) { ctx.fillStyle = fill; ctx.fill(); }
    if (stroke) { ctx.strokeStyle = stroke; ctx.lineWidth = Math.max(1, r / 5); ctx.stroke(); }
  }

  function drawObject(ctx, code, cx, cy, s) {
    if (code === 1) { circle(ctx, cx, cy, s * 0.16, "#f2d04b", "#9c7d12"); }
    else if (code === 2) { circle(ctx, cx, cy, s * 0.16, "#e0433b", "#8b1d17"); }
    else if (code === 3) { circle(ctx, cx, cy, s * 0.2, "#ffffff", "#777777"); }
    else if (code === 4) { circle(ctx, cx, cy, s * 0.2, "#ffffff", "#777777"); circle(ctx, cx, cy, s * 0.12, "#e8892b"); }
  }

  function drawCell(ctx, kind, x, y, s) {
    var px = x * s, py = y * s;
    ctx.fillStyle = TERRAIN[kind] || "#333333";
    ctx.fillRect(px, py, s, s);
    ctx.strokeStyle = "rgba(0,0,0,0.18)";
    ctx.lineWidth = 1;
    ctx.strokeRect(px + 0.5, py + 0.5, s - 1, s - 1);
    var cx = px + s / 2, cy = py + s / 2;
    if (kind === "O" || kind === "T") {
      ctx.fillStyle = "#8b5a2b"; ctx.fillRect(px + s * 0.15, py + s * 0.15, s * 0.7, s * 0.7);
      drawObject(ctx, kind === "O" ? 1 : 2, cx - s * 0.14, cy, s);
      drawObject(ctx, kind === "O" ? 1 : 2, cx + s * 0.14, cy, s);
    } else if (kind === "D") {
      drawObject(ctx, 3, cx - s * 0.08, cy - s * 0.05, s);
      drawObject(ctx, 3, cx + s * 0.08, cy + s * 0.05, s);
    } else if (kind === "S") {
      ctx.fillStyle = "#2d6a2d"; ctx.font = "bold " + Math.round(s * 0.28) + "px sans-serif";
      ctx.textAlign = "center"; ctx.textBaseline = "middle"; ctx.fillText("SERVE", cx, cy);
    } else if (kind === "P") {
      circle(ctx, cx, cy, s * 0.36, "#3b3d40", "#1c1d1f");
    }
  }

  function drawPot(ctx, pot, x, y, s) {
    var cx = x * s + s / 2, cy = y * s + s / 2, n = pot[0], status = pot[1], timer = pot[2];
    if (status === 2) { circle(ctx, cx, cy, s * 0.28, "#e8892b"); }
    for (var i = 0; i < n && status !== 2; i++) {
      drawObject(ctx, 1, cx + (i - (n - 1) / 2) * s * 0.22, cy, s * 0.8);
    }
    ctx.textAlign = "center"; ctx.textBaseline = "middle";
    if (status === 1) {
      ctx.fillStyle = "#ff5a4f"; ctx.font = "bold " + Math.round(s * 0.3) + "px sans-serif";
      ctx.fillText(String(timer), cx, cy - s * 0.3);
    } else if (status === 2) {
      ctx.fillStyle = "#ffffff"; ctx.font = "bold " + Math.round(s * 0.26) + "px sans-serif";
      ctx.fillText("ready", cx, cy);
    }
  }

  function drawPlayer(ctx, p, i, s, label) {
    var cx = p[0] * s + s / 2, cy = p[1] * s + s / 2, d = DIRS[p[2]] || DIRS[0];
    var colour = PLAYER_COLOURS[i % PLAYER_COLOURS.length];
    circle(ctx, cx, cy, s * 0.32, colour, "#111111");
    // facing: a triangle on the side the chef faces
    ctx.beginPath();
    ctx.moveTo(cx + d[0] * s * 0.48, cy + d[1] * s * 0.48);
    ctx.lineTo(cx + d[0] * s * 0.26 - d[1] * s * 0.16, cy + d[1] * s * 0.26 + d[0] * s * 0.16);
    ctx.lineTo(cx + d[0] * s * 0.26 + d[1] * s * 0.16, cy + d[1] * s * 0.26 - d[0] * s * 0.16);
    ctx.closePath();
    ctx.fillStyle = "#111111"; ctx.fill();
    ctx.fillStyle = "#ffffff"; ctx.font = "bold " + Math.round(s * 0.24) + "px sans-serif";
    ctx.textAlign = "center"; ctx.textBaseline = "middle";
    ctx.fillText(label || String(i), cx, cy - (p[3] ? s * 0.12 : 0));
    if (p[3]) { drawObject(ctx, p[3], cx, cy + s * 0.14, s * 0.8); }
  }

  /* draw(canvas, layout, frame, opts): opts.labels = per-player labels, opts.cell = px per cell */
  function draw(canvas, layout, frame, opts) {
    opts = opts || {};
    var terrain = layout.terrain, h = terrain.length, w = terrain[0].length;
    var s = opts.cell || Math.max(24, Math.min(72, Math.floor(Math.min(640 / w, 420 / h))));
    if (canvas.width !== w * s || canvas.height !== h * s) { canvas.width = w * s; canvas.height = h * s; }
    var ctx = canvas.getContext("2d");
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    for (var y = 0; y < h; y++) { for (var x = 0; x < w; x++) { drawCell(ctx, terrain[y][x], x, y, s); } }
    if (!frame) { return; }
    var pots = frame[3] || [];
    for (var j = 0; j < pots.length && j < layout.pots.length; j++) {
      drawPot(ctx, pots[j], layout.pots[j][0], layout.pots[j][1], s);
    }
    var counters = frame[4] || [];
    for (var k = 0; k < counters.length; k++) {
      drawObject(ctx, counters[k][2], counters[k][0] * s + s / 2, counters[k][1] * s + s / 2, s);
    }
    var players = frame[2] || [];
    for (var i = 0; i < players.length; i++) {
      drawPlayer(ctx, players[i], i, s, opts.labels ? opts.labels[i] : null);
    }
  }

  window.BGKitchen = { draw: draw, PLAYER_COLOURS: PLAYER_COLOURS, OBJECTS: [null, "onion", "tomato", "dish", "soup"] };
})();
