// Leaderboard pages: draw every chart from its JSON data block, and re-query when a filter changes.
// Loaded as a static file (no inline scripts, so the Content-Security-Policy can forbid them).
(function () {
  "use strict";

  // On the board pages each chart's title is an HTML heading above it (it wraps on a phone; plotly never wraps
  // text): the figure's own title, there for the JSON's readers, is not drawn a second time.
  function titleOutside(element, layout) {
    if (element.getAttribute("data-title") === "outside") {
      delete layout.title;
    }
  }

  // On a narrow screen a legend entry wider than the chart would be cut at its edge: long model names are
  // shortened there (the organisation prefix first, then the end), keeping the " · correct + verified" part.
  function shortenLegend(data, width) {
    var limit = Math.floor((width - 70) / 6.5);
    if (!width || limit >= 60) {
      return;
    }
    data.forEach(function (trace) {
      if (typeof trace.name !== "string" || trace.name.length <= limit) {
        return;
      }
      var parts = trace.name.split(" · ");
      var tail = parts.length > 1 ? " · " + parts.slice(1).join(" · ") : "";
      var head = parts[0].length + tail.length > limit ? parts[0].replace(/^[^/]*\//, "") : parts[0];
      var room = Math.max(8, limit - tail.length);
      if (head.length > room) {
        head = head.slice(0, room - 1).replace(/&[#a-zA-Z0-9]*$/, "") + "\u2026"; // never half an escape
      }
      trace.name = head + tail;
    });
  }

  // On a narrow screen the legend wraps to about one entry a line and would be taller than the room plotly gives
  // it (it then scrolls inside the chart, entries out of sight): the figure grows by a line per entry instead.
  function fitLegend(data, layout, width) {
    if (!width || width >= 600 || !layout.height || layout.showlegend === false) {
      return;
    }
    var entries = data.filter(function (trace) { return trace.showlegend !== false; }).length;
    if (entries > 2) {
      layout.height += 24 * entries; // a line and the gap between legend groups
      layout.legend = layout.legend || {};
      layout.legend.maxheight = 24 * entries + 40; // pixels: every entry in sight
    }
  }

  // Each chart's figure, read and fitted to its box's width, and its box given the figure's height, so nothing
  // below moves when the chart is drawn later.
  function prepareCharts() {
    var charts = [];
    document.querySelectorAll(".chart[data-figure]").forEach(function (element) {
      var block = document.getElementById(element.getAttribute("data-figure"));
      if (!block) {
        return;
      }
      var figure = JSON.parse(block.textContent);
      figure.data = figure.data || [];
      figure.layout = figure.layout || {};
      titleOutside(element, figure.layout);
      shortenLegend(figure.data, element.clientWidth);
      fitLegend(figure.data, figure.layout, element.clientWidth);
      if (figure.layout.height) {
        element.style.minHeight = figure.layout.height + "px";
      }
      charts.push({element: element, figure: figure});
    });
    return charts;
  }

  // Charts are drawn once the page has loaded, one per task: drawing one costs ~0.1 s of main thread, and five
  // drawn before the load event kept the table, the page's main content, waiting behind them.
  function drawCharts(charts) {
    if (typeof window.Plotly === "undefined") {
      return;
    }
    function next() {
      var chart = charts.shift();
      if (!chart) {
        if (window.performance && performance.mark) {
          performance.mark("charts-drawn"); // what bench/chart_pages.py reads
        }
        return;
      }
      window.Plotly.newPlot(chart.element, chart.figure.data, chart.figure.layout, {
        responsive: true,
        displaylogo: false,
      }).then(function () {
        chart.element.setAttribute("data-drawn", "1"); // drawn, margins settled: what the layout tests wait for
        window.setTimeout(next, 0);
      });
    }
    next();
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
    var charts = prepareCharts();
    window.addEventListener("load", function () {
      window.setTimeout(function () {
        drawCharts(charts);
      }, 0);
    });
  });
})();
