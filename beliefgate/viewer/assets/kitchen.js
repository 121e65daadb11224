/* beliefgate kitchen drawing: one Overcooked state on a <canvas>, from the compact frame
 * of beliefgate/envs/overcooked/render.py (the Overcooked domain's rendering):
 *   frame = [timestep, score, players, pots, counters]
 *   players[i] = [x, y, orientation, held]  orientation: 0 N, 1 S, 2 E, 3 W
 *   pots[j]    = [ingredients, status, timer]  status: 0 idle, 1 cooking, 2 ready
 *   counters[k]= [x, y, object]; objects: 0 none, 1 onion, 2 tomato, 3 dish, 4 soup
 * OvercookedV2 (layout.v2 set; the frame's sixth element, beliefgate/envs/overcooked_v2/render.py):
 *   extra = {recipe: [ingredient indices] or null (hidden from this viewer), pots: [[indices]],
 *            held: [codes], buttons: [timers], counters: [[x, y, code]], viewers: [players]}
 *   codes are JaxMARL's DynamicObject: bit 0 plate, bit 1 cooked, two bits per ingredient from bit 2.
 *   Ingredients are drawn by type (colour and index), recipe indicators show the recipe, a pressed
 *   button shows it too, and a band under the kitchen shows it with who sees it (gold rings).
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

  // ---------------------------------------------------------------- OvercookedV2
  var INGREDIENT_COLOURS = ["#f2d04b", "#e0433b", "#4caf50", "#8d5524", "#9b59b6", "#ff8c1a", "#16a3b8",
                            "#2c3e50", "#ff6fb5", "#3f7fff"];
  var RECIPE_GOLD = "#d4a017";

  function ingredientsOf(code) {
    var out = [], c = code >> 2, i = 0;
    while (c > 0) { for (var n = 0; n < (c & 3); n++) { out.push(i); } c = c >> 2; i++; }
    return out;
  }

  function drawIngredient(ctx, i, cx, cy, r) {
    circle(ctx, cx, cy, r, INGREDIENT_COLOURS[i % INGREDIENT_COLOURS.length], "#222222");
    ctx.fillStyle = "#111111"; ctx.font = "bold " + Math.max(8, Math.round(r * 1.2)) + "px sans-serif";
    ctx.textAlign = "center"; ctx.textBaseline = "middle"; ctx.fillText(String(i), cx, cy + 0.5);
  }

  function drawIngredientRow(ctx, list, cx, cy, s) {
    var r = s * 0.12, gap = r * 2.1;
    for (var k = 0; k < list.length; k++) { drawIngredient(ctx, list[k], cx + (k - (list.length - 1) / 2) * gap, cy, r); }
  }

  function drawV2Object(ctx, code, cx, cy, s) {
    if (!code) { return; }
    var ing = ingredientsOf(code);
    if (code & 1) {   // a plate, with a soup on it when cooked
      circle(ctx, cx, cy, s * 0.22, "#ffffff", "#777777");
      if (code & 2) { circle(ctx, cx, cy, s * 0.15, "#e8892b"); }
      drawIngredientRow(ctx, ing, cx, cy, s * 0.75);
    } else {
      drawIngredientRow(ctx, ing, cx, cy, s);
    }
  }

  function drawRecipe(ctx, recipe, px, py, s) {   // a recipe card in cell (px, py): the ingredients or "?"
    ctx.fillStyle = "#fff8dc"; ctx.fillRect(px + s * 0.1, py + s * 0.2, s * 0.8, s * 0.6);
    ctx.strokeStyle = RECIPE_GOLD; ctx.lineWidth = 2; ctx.strokeRect(px + s * 0.1, py + s * 0.2, s * 0.8, s * 0.6);
    if (recipe) { drawIngredientRow(ctx, recipe, px + s / 2, py + s / 2, s * 0.85); }
    else {
      ctx.fillStyle = "#7a5c00"; ctx.font = "bold " + Math.round(s * 0.4) + "px sans-serif";
      ctx.textAlign = "center"; ctx.textBaseline = "middle"; ctx.fillText("?", px + s / 2, py + s / 2);
    }
  }

  function drawV2(ctx, v2, frame, s, h, w, labels) {
    var extra = frame[5] || {}, recipe = extra.recipe || null, k, c, i;
    var piles = v2.ingredient_piles || {};
    for (var key in piles) {
      if (!Object.prototype.hasOwnProperty.call(piles, key)) { continue; }
      for (k = 0; k < piles[key].length; k++) {
        c = piles[key][k];
        ctx.fillStyle = "#8b5a2b"; ctx.fillRect(c[0] * s + s * 0.15, c[1] * s + s * 0.15, s * 0.7, s * 0.7);
        drawIngredient(ctx, Number(key), c[0] * s + s / 2, c[1] * s + s / 2, s * 0.22);
      }
    }
    var ind = v2.recipe_indicators || [];
    for (k = 0; k < ind.length; k++) { drawRecipe(ctx, recipe, ind[k][0] * s, ind[k][1] * s, s); }
    var buttons = v2.recipe_buttons || [], timers = extra.buttons || [];
    for (k = 0; k < buttons.length; k++) {
      var bx = buttons[k][0] * s, by = buttons[k][1] * s;
      if (timers[k] > 0) { drawRecipe(ctx, recipe, bx, by, s); }
      else { circle(ctx, bx + s / 2, by + s / 2, s * 0.22, "#c0392b", "#5e1a12"); }
    }
    // the recipe band under the kitchen: the recipe (or "hidden") and who sees it
    var y0 = h * s, viewers = extra.viewers || [];
    ctx.fillStyle = "#fffdf5"; ctx.fillRect(0, y0, w * s, s * 0.7);
    ctx.fillStyle = "#333333"; ctx.font = Math.round(s * 0.26) + "px sans-serif";
    ctx.textAlign = "left"; ctx.textBaseline = "middle";
    ctx.fillText("recipe", s * 0.15, y0 + s * 0.35);
    if (recipe) { drawIngredientRow(ctx, recipe, s * 1.6, y0 + s * 0.35, s); }
    else { ctx.fillText("hidden", s * 1.1, y0 + s * 0.35); }
    ctx.fillStyle = "#333333"; ctx.font = Math.round(s * 0.26) + "px sans-serif";
    ctx.textAlign = "left"; ctx.textBaseline = "middle";
    var who = viewers.map(function (v) { return labels && labels[v] ? labels[v] + " (" + v + ")" : String(v); });
    ctx.fillText("seen by: " + (who.length ? who.join(", ") : "nobody"), s * 2.6, y0 + s * 0.35);
    return { recipe: recipe, viewers: viewers };
  }

  /* draw(canvas, layout, frame, opts): opts.labels = per-player labels, opts.cell = px per cell */
  function draw(canvas, layout, frame, opts) {
    opts = opts || {};
    var terrain = layout.terrain, h = terrain.length, w = terrain[0].length;
    var s = opts.cell || Math.max(24, Math.min(72, Math.floor(Math.min(640 / w, 420 / h))));
    var v2 = layout.v2 || null, band = v2 ? Math.round(s * 0.7) : 0;
    if (canvas.width !== w * s || canvas.height !== h * s + band) { canvas.width = w * s; canvas.height = h * s + band; }
    var ctx = canvas.getContext("2d");
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    for (var y = 0; y < h; y++) { for (var x = 0; x < w; x++) { drawCell(ctx, terrain[y][x], x, y, s); } }
    if (!frame) { return; }
    var extra = v2 ? (frame[5] || {}) : null;
    var drawn = v2 ? drawV2(ctx, v2, frame, s, h, w, opts.labels) : null;
    var pots = frame[3] || [];
    for (var j = 0; j < pots.length && j < layout.pots.length; j++) {
      if (extra && extra.pots && pots[j][1] !== 2) {   // V2: the pot's ingredients by type
        var px = layout.pots[j][0] * s, py = layout.pots[j][1] * s;
        drawIngredientRow(ctx, extra.pots[j] || [], px + s / 2, py + s / 2, s * 0.8);
        drawPot(ctx, [0, pots[j][1], pots[j][2]], layout.pots[j][0], layout.pots[j][1], s);
      } else {
        drawPot(ctx, pots[j], layout.pots[j][0], layout.pots[j][1], s);
      }
    }
    var counters = extra && extra.counters ? extra.counters : frame[4] || [];
    for (var k = 0; k < counters.length; k++) {
      (extra && extra.counters ? drawV2Object : drawObject)(ctx, counters[k][2], counters[k][0] * s + s / 2,
                                                            counters[k][1] * s + s / 2, s);
    }
    var players = frame[2] || [];
    for (var i = 0; i < players.length; i++) {
      var p = players[i];
      if (extra && extra.held) { p = [p[0], p[1], p[2], 0]; }
      if (extra && (extra.viewers || []).indexOf(i) >= 0) {   // sees the recipe: a gold ring
        circle(ctx, p[0] * s + s / 2, p[1] * s + s / 2, s * 0.42, null, RECIPE_GOLD);
      }
      drawPlayer(ctx, p, i, s, opts.labels ? opts.labels[i] : null);
      if (extra && extra.held && extra.held[i]) {
        drawV2Object(ctx, extra.held[i], p[0] * s + s / 2, p[1] * s + s / 2 + s * 0.16, s * 0.8);
      }
    }
    if (drawn) { canvas.setAttribute("data-recipe", drawn.recipe ? drawn.recipe.join(",") : "hidden");
                 canvas.setAttribute("data-recipe-viewers", drawn.viewers.join(",")); }
  }

  window.BGKitchen = { draw: draw, PLAYER_COLOURS: PLAYER_COLOURS, OBJECTS: [null, "onion", "tomato", "dish", "soup"],
                       INGREDIENT_COLOURS: INGREDIENT_COLOURS };
})();
