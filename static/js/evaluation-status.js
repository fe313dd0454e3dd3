// Polls the evaluation's JSON and updates the stage table in place; when the evaluation is final,
// swaps in the server-rendered verdict fragment. Text goes in through textContent only.
(function () {
  "use strict";
  var box = document.getElementById("evaluation");
  if (!box || box.dataset.final === "1") return;
  var statusUrl = box.dataset.statusUrl;
  var verdictUrl = box.dataset.verdictUrl;

  function setText(id, text) {
    var el = document.getElementById(id);
    if (el) el.textContent = text || "";
  }

  function render(data) {
    setText("eval-state", data.state);
    setText("eval-message", data.message);
    setText("eval-position", data.queue_position ? "position " + data.queue_position + " in " + data.queue : "");
    (data.stages || []).forEach(function (row) {
      var tr = document.querySelector('#stages tr[data-stage="' + row.stage + '"]');
      if (!tr) return;
      var state = tr.querySelector(".state");
      state.textContent = row.state;
      state.className = "state state-" + row.state;
      tr.querySelector(".message").textContent = row.message || "";
    });
  }

  function finish() {
    box.dataset.final = "1";
    fetch(verdictUrl, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : ""; })
      .then(function (html) {
        // Server-rendered by Django templates with autoescaping; no model or user text arrives unescaped.
        if (html) document.getElementById("verdict-slot").innerHTML = html;
      });
  }

  function poll() {
    fetch(statusUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.json(); })
      .then(function (data) {
        render(data);
        if (data.final) finish();
        else setTimeout(poll, 1500);
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1000);
})();
