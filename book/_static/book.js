/* Wide tables and ledgers scroll sideways. A scrollbar at the bottom of a long table is out of
   view, so each one that is wider than the column gets a visible cue: a line above it saying that
   more columns are to the right (or left), and a shadow on that edge while there is more to see.
   The scroll container is wrapped in a frame (div.ib-scroll-frame) that does not scroll, so the
   shadow stays on the edge and above the cells' own backgrounds. */
(function () {
  "use strict";
  var SELECTOR = ".pst-scrollable-table-container, .claims-ledger";

  function frameOf(box) {
    var parent = box.parentElement;
    if (parent && parent.classList.contains("ib-scroll-frame")) return parent;
    var frame = document.createElement("div");
    frame.className = "ib-scroll-frame";
    box.parentNode.insertBefore(frame, box);
    frame.appendChild(box);
    box.addEventListener("scroll", function () { update(box); }, { passive: true });
    return frame;
  }

  function update(box) {
    var frame = frameOf(box);
    var more = box.scrollWidth > box.clientWidth + 1;
    frame.classList.toggle("ib-scrolls", more);
    frame.classList.toggle("ib-more-right", more && box.scrollLeft + box.clientWidth < box.scrollWidth - 1);
    frame.classList.toggle("ib-more-left", more && box.scrollLeft > 1);
  }

  function all() { document.querySelectorAll(SELECTOR).forEach(update); }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", all);
  else all();
  window.addEventListener("load", all);
  window.addEventListener("resize", all);
  // math typeset late changes widths
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(all);
  setTimeout(all, 1500);
})();
