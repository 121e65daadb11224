/* beliefgate play page: draws the server's states and sends the person's keys over /ws.
 * Protocol: beliefgate/viewer/play.py. */
(function () {
  "use strict";
  var KEYS = {
    ArrowUp: "north", ArrowDown: "south", ArrowRight: "east", ArrowLeft: "west",
    w: "north", s: "south", d: "east", a: "west", W: "north", S: "south", D: "east", A: "west",
    " ": "interact", e: "interact", E: "interact"
  };
  var COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"];
  var canvas = document.getElementById("kitchen");
  var status = document.getElementById("status"), hud = document.getElementById("hud");
  var bars = document.getElementById("bars"), table = document.getElementById("agent-table");
  var doneBox = document.getElementById("done");
  var hello = null, labels = [], history = [], HISTORY = 120;
  var historyCanvas = document.getElementById("history");
  var P = window.beliefgatePlay = { connected: false, done: false, hello: null, state: null, states: 0,
                                    sent: 0, errors: [], summary: null, log: null,
                                    said: 0, talk: [], lastProposal: null };
  var talkLog = document.getElementById("talk-log");
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]; });
  }
  var proto = location.protocol === "https:" ? "wss://" : "ws://";
  var ws = new WebSocket(proto + location.host + "/ws");
  P.socket = ws;

  function draw(frame) { window.BGKitchen.draw(canvas, hello.layout, frame, { labels: labels }); }
  function showBelief(m) {
    if (!m.belief) { bars.innerHTML = '<div class="muted">no belief yet (the agent has not seen you act)</div>'; return; }
    var out = [];
    for (var k = 0; k < m.belief.length; k++) {
      var name = hello.names[k] || ("skill " + k), pct = (100 * m.belief[k]).toFixed(1);
      out.push('<div class="bar-row"><span class="bar-name' + (name === m.map ? " map" : "") + '">' + esc(name) +
               '</span><span class="bar-track"><span class="bar-fill" style="display:block;width:' + pct +
               "%;background:" + COLOURS[k % COLOURS.length] + '"></span></span><span class="bar-val">' + pct + "%</span></div>");
    }
    bars.innerHTML = out.join("");
  }
  function drawHistory() {
    var ctx = historyCanvas.getContext("2d"), w = historyCanvas.width, h = historyCanvas.height;
    ctx.clearRect(0, 0, w, h);
    var dx = w / HISTORY, x0 = w - history.length * dx;
    for (var i = 0; i < history.length; i++) {
      var b = history[i], y = h;
      if (!b) { continue; }
      for (var k = 0; k < b.length; k++) {
        var bh = b[k] * h;
        ctx.fillStyle = COLOURS[k % COLOURS.length];
        ctx.fillRect(x0 + i * dx, y - bh, Math.ceil(dx), bh);
        y -= bh;
      }
    }
  }
  function showAgent(m) {
    var rows = [["agent", hello.agent], ["agent's skill", m.agent_skill || "-"], ["its guess about you", m.map || "-"],
                ["last replan", m.reason || "-"], ["keys waiting", m.queued]];
    (hello.seats || []).forEach(function (s) {  /* three-player kitchens: the third chef and its skill */
      if (s.who === "partner") { rows.push([s.label + " (" + s.name + ")", (m.others || {})[s.seat] || "-"]); }
    });
    table.innerHTML = rows.map(function (r) { return "<tr><td>" + esc(r[0]) + "</td><td>" + esc(r[1]) + "</td></tr>"; }).join("");
  }
  /* messages: the typed form of beliefgate/envs/messages.py; the server's channel checks them */
  function fill(id, names) {
    document.getElementById(id).innerHTML = names.map(function (n) { return "<option>" + esc(n) + "</option>"; }).join("");
  }
  function who(seat) {
    if (seat === hello.human_seat) { return "you"; }
    if (seat === hello.agent_seat || !hello.seats || !hello.seats[seat]) { return "AI"; }
    return hello.seats[seat].label;  /* a third player (P2): it hears only what is sent to everyone */
  }
  function line(msg) {
    var body = "";
    if (msg.kind === "propose") {
      body = Object.keys(msg.roles).sort().map(function (s) { return who(+s) + ": " + msg.roles[s]; }).join(", ");
    } else if (msg.kind === "request") {
      var asked = msg.seat !== null && msg.seat !== undefined ? msg.seat : msg.to;  /* the recipient by default */
      body = (asked === null || asked === undefined ? "the others" : who(asked)) + " do " + msg.skill;
    } else if (msg.kind === "accept" || msg.kind === "decline") {
      body = "#" + msg.reply_to + (msg.reason ? " (" + msg.reason + ")" : "");
    } else if (msg.kind === "inform") {
      body = [msg.holds ? "holds " + msg.holds : "", msg.intends ? "intends " + msg.intends : "",
              msg.goal ? "recipe " + msg.goal : ""].filter(Boolean).join(", ");
    }
    return "#" + msg.id + " " + who(msg.sender) + " " + msg.kind + (body ? " " + body : "") + (msg.text ? ' "' + msg.text + '"' : "");
  }
  function addTalk(text, cls) {
    P.talk.push(text);
    var li = document.createElement("li");
    li.textContent = text; li.className = cls;
    talkLog.appendChild(li);
    talkLog.scrollTop = talkLog.scrollHeight;
  }
  function showTalk(m) {
    (m.heard || []).forEach(function (msg) {
      addTalk("t=" + msg.t + " " + line(msg), "from-agent");
      if (msg.kind === "propose") {
        P.lastProposal = msg.id;
        document.getElementById("say-last").textContent = line(msg);
        document.getElementById("say-accept").disabled = document.getElementById("say-decline").disabled = false;
      }
    });
    if (!m.said) { return; }
    m.said.sent.forEach(function (msg) { if (msg.sender === hello.human_seat) { addTalk("t=" + msg.t + " " + line(msg), "from-you"); } });
    m.said.refused.forEach(function (r) {
      if (r.sender === hello.human_seat) { addTalk("t=" + r.t + " refused (" + r.reason + "): " + r.detail, "refused"); }
    });
  }
  function say(message) {
    if (ws.readyState !== 1 || P.done) { return; }
    ws.send(JSON.stringify({ type: "say", message: message }));
    P.said += 1;
    canvas.focus();
  }
  function value(id) { return document.getElementById(id).value; }
  document.getElementById("say-propose").addEventListener("click", function () {
    var roles = {};
    roles[hello.human_seat] = value("say-my-role"); roles[hello.agent_seat] = value("say-agent-role");
    say({ kind: "propose", roles: roles, to: hello.agent_seat });
  });
  document.getElementById("say-request").addEventListener("click", function () {
    say({ kind: "request", skill: value("say-skill"), to: hello.agent_seat });
  });
  ["accept", "decline"].forEach(function (kind) {
    document.getElementById("say-" + kind).addEventListener("click", function () {
      if (P.lastProposal === null) { return; }
      say({ kind: kind, reply_to: P.lastProposal, to: hello.agent_seat });
      document.getElementById("say-accept").disabled = document.getElementById("say-decline").disabled = true;
    });
  });
  document.getElementById("say-goal").addEventListener("click", function () {
    say({ kind: "inform", goal: value("say-goal-name"), to: hello.agent_seat });
  });
  document.getElementById("say-inform").addEventListener("click", function () {
    say({ kind: "inform", intends: value("say-intends"), to: hello.agent_seat });
  });
  ws.onopen = function () { P.connected = true; status.textContent = "connected; press a key to start"; };
  ws.onmessage = function (ev) {
    var m;
    try { m = JSON.parse(ev.data); } catch (err) { P.errors.push("bad server message"); return; }
    if (m.type === "hello") {
      hello = P.hello = m;
      labels = [];
      for (var i = 0; i < m.frame[2].length; i++) {
        labels.push(m.seats && m.seats[i] ? m.seats[i].label : (i === m.human_seat ? "YOU" : "AI"));
      }
      draw(m.frame);
      fill("say-my-role", m.roles); fill("say-agent-role", m.roles); fill("say-skill", m.names); fill("say-intends", m.names);
      fill("say-goal-name", m.goals || []);
      document.getElementById("say-goal-row").hidden = !(m.goals && m.goals.length);
      if (m.roles.length > 1) { document.getElementById("say-agent-role").selectedIndex = 1; }
      document.getElementById("talk-note").textContent = (m.talks ? "" : "(" + m.agent + " does not listen; your messages are logged) ") +
        "budget " + m.budget + " a game, one a step" +
        (m.players > 2 ? "; messages go to the AI only, and a proposal splits roles between you and it" : "");
      var partners = (m.seats || []).filter(function (s) { return s.who === "partner"; })
        .map(function (s) { return " \u00b7 " + s.label + ": " + s.name; }).join("");
      status.textContent = "session " + m.session + " \u00b7 " + m.layout.name + partners + " \u00b7 " + m.tick_hz +
        " ticks/s \u00b7 " + m.horizon + " steps \u00b7 log " + m.log + " \u00b7 press a key to start";
      canvas.focus();
    } else if (m.type === "state") {
      P.state = m; P.states += 1;
      draw(m.frame);
      hud.textContent = "t = " + m.t + " / " + m.horizon + "   score " + m.score +
        (m.events[hello.human_seat].length ? "   you: " + m.events[hello.human_seat].join(" ") : "");
      showBelief(m); showAgent(m); showTalk(m);
      history.push(m.belief); if (history.length > HISTORY) { history.shift(); }
      drawHistory();
      if (P.states === 1) { status.textContent = status.textContent.replace(" \u00b7 press a key to start", " \u00b7 playing"); }
    } else if (m.type === "error") {
      P.errors.push(m.error + ": " + m.detail);
      status.textContent = "server: " + m.error + ": " + m.detail;
    } else if (m.type === "done") {
      P.done = true; P.summary = m.summary; P.log = m.log;
      status.textContent = status.textContent.replace(/ \u00b7 (playing|press a key to start)$/, "") + " \u00b7 game over";
      document.getElementById("end").disabled = true;
      doneBox.hidden = false;
      doneBox.innerHTML = "<b>Game over</b> (" + esc(m.summary.ended) + "): " + m.summary.deliveries + " soups, score " +
        m.summary.reward + " in " + m.summary.steps + " steps.<br>Log: <span class=\"mono\">" + esc(m.log) + "</span>";
    }
  };
  ws.onclose = function () { P.connected = false; if (!P.done) { status.textContent = "disconnected"; } };
  function sendKey(action) {
    if (ws.readyState !== 1 || P.done) { return; }
    ws.send(JSON.stringify({ type: "key", action: action }));
    P.sent += 1;
  }
  document.addEventListener("keydown", function (e) {
    if (e.target && e.target.tagName === "BUTTON" && e.key === " ") { return; }
    if (e.target && e.target.tagName === "SELECT") { return; }
    var action = KEYS[e.key];
    if (!action) { return; }
    e.preventDefault();
    sendKey(action);
  });
  document.getElementById("end").addEventListener("click", function () {
    if (ws.readyState === 1) { ws.send(JSON.stringify({ type: "end" })); }
  });
})();
