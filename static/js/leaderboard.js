// Leaderboard pages: draw every chart from its JSON data block, and re-query when a filter changes.
// Loaded as a static file (no inline scripts, so the Content-Security-Policy can forbid them).
(function () {
  "use strict";

  function drawCharts() {
    if (typeof window.Plotly === "undefined") {
      return;
    }
    document.querySelectorAll(".chart[data-figure]").forEach(function (element) {
      var block = document.getElementById(element.getAttribute("data-figure"));
      if (!block) {
        return;
      }
      var figure = JSON.parse(block.textContent);
      window.Plotly.newPlot(element, figure.data || [], figure.layout || {}, {
        responsive: true,
        displaylogo: false,
      });
    });
  }

  function wireFilters() {
    var form = document.querySelector("form[data-autosubmit]");
    if (!form) {
      return;
    }
    form.querySelectorAll("select").forEach(function (select) {
      select.addEventListener("change", function () {
        // Another architecture has other GPU models and maybe other tasks: drop choices that may not apply.
        var resets = select.getAttribute("data-resets");
        if (resets && form.elements[resets]) {
          form.elements[resets].value = "";
        }
        form.submit();
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    wireFilters();
    drawCharts();
  });
})();
