// The site header on a phone: the main links on one line, the rest behind "More" (CSS in site.css shows the
// button and hides `nav .secondary` only once this script has marked the header compact, so without JavaScript
// every link stays visible).
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var header = document.querySelector("header.site");
    var button = document.getElementById("nav-toggle");
    if (!header || !button) {
      return;
    }
    header.classList.add("compact");
    button.addEventListener("click", function () {
      var open = header.classList.toggle("open");
      button.setAttribute("aria-expanded", open ? "true" : "false");
      button.textContent = open ? "Less" : "More";
    });
  });
})();
