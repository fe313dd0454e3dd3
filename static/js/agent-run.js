// Polls the run's JSON (/api/v1/runs/<id>?v=2: the canonical names, docs/api.md) and updates states, metrics and per-turn rows in place.
// Model and user text only ever goes in through textContent.
(function () {
  "use strict";
  var box = document.getElementById("run");
  if (!box || box.dataset.final === "1") return;
  var url = box.dataset.statusUrl;
  var FIELDS = ["state", "status", "arch_status", "speedup_factor", "prompt_tokens", "completion_tokens",
                "reasoning_tokens", "model_latency_s"];

  function fmt(field, value) {
    if (value === null || value === undefined) return "";
    if (field === "speedup_factor") return Number(value).toFixed(3);
    if (field === "model_latency_s") return Number(value).toFixed(1);
    if (field === "state") return String(value).replace("_", " ");
    return String(value);
  }

  function setField(scope, name, text) {
    var el = scope.querySelector('[data-field="' + name + '"]');
    if (el) el.textContent = text;
  }

  function turnRow(tbody, turn) {
    var row = tbody.querySelector('tr[data-turn="' + turn.index + '"]');
    if (row) return row;
    row = document.createElement("tr");
    row.dataset.turn = String(turn.index);
    var first = document.createElement("td");
    first.className = "num";
    first.textContent = String(turn.index + 1); // turns are numbered from 1 on pages and charts
    row.appendChild(first);
    FIELDS.forEach(function (name) {
      var td = document.createElement("td");
      td.dataset.field = name;
      if (["speedup_factor", "prompt_tokens", "completion_tokens", "reasoning_tokens", "model_latency_s"].indexOf(name) >= 0) {
        td.className = "num";
      }
      row.appendChild(td);
    });
    tbody.appendChild(row);
    return row;
  }

  function render(data) {
    var state = document.getElementById("run-state");
    if (state) state.textContent = data.state;
    var budget = document.getElementById("run-budget"), b = data.evaluation_budget;
    if (budget && b) {
      budget.textContent = b.used + " / " + (b.limit === null ? "no limit" : b.limit) + " evaluations of this run" +
        (b.waiting_turns ? "; " + b.waiting_turns + " turn" + (b.waiting_turns > 1 ? "s" : "") + " waiting" : "");
    }
    (data.metrics || []).forEach(function (m) {
      var row = document.querySelector('tr[data-metric="' + m.task + "|" + m.k + '"]');
      if (!row) return;
      setField(row, "correct", m.correct + "/" + m.trajectories);
      setField(row, "correct_arch", m.correct_arch + "/" + m.trajectories);
      // As the page draws it: three significant digits, "—" when no turn was correct (not solved).
      setField(row, "best_speedup", m.speedup ? Number(m.speedup).toPrecision(3) + "x" : "— not solved");
      setField(row, "tokens", String(m.tokens));
      setField(row, "complete", m.complete ? "yes" : "not yet");
    });
    (data.trajectories || []).forEach(function (t) {
      var section = document.querySelector('[data-trajectory="' + t.id + '"]');
      if (!section) return;
      setField(section, "trajectory-state", t.state + (t.stop_reason ? ": " + t.stop_reason.replace("_", " ") : ""));
      setField(section, "stop_message", t.stop_message || "");
      var tbody = section.querySelector("table.turns tbody");
      t.turns.forEach(function (turn) {
        var row = turnRow(tbody, turn);
        FIELDS.forEach(function (name) { setField(row, name, fmt(name, turn[name])); });
      });
    });
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (data) {
        render(data);
        if (data.final) box.dataset.final = "1";
        else setTimeout(poll, 3000);
      })
      .catch(function () { setTimeout(poll, 10000); });
  }
  setTimeout(poll, 2000);
})();
