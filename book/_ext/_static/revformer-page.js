// A chapter's figure opens at full size over the page: a tap or a click on it (or Enter on its link), where a
// 342 px phone column shrinks an eight-panel figure's labels to 5 px. The overlay scrolls both ways and pinches;
// Escape, the close button or a tap beside the figure closes it and gives the focus back to the figure's link.
// Without this script the figure's link opens the image file itself, as before.
(function () {
  "use strict";
  var zh = /^zh/i.test(document.documentElement.lang || "");
  var WORDS = zh ? {close: "关闭", label: "全尺寸图", hint: "点按图片可放大。"}
                 : {close: "Close", label: "Figure at full size", hint: "Tap the figure to enlarge it."};
  var opened = null;

  function close() {
    if (!opened) { return; }
    var back = opened.from;
    opened.box.remove();
    document.documentElement.classList.remove("rf-zoom-open");
    document.removeEventListener("keydown", onKey, true);
    opened = null;
    if (back) { back.focus(); }
  }

  function onKey(event) {
    if (event.key === "Escape") { event.preventDefault(); close(); }
    if (event.key === "Tab" && opened) { event.preventDefault(); opened.button.focus(); }  // the dialog's one control
  }

  function open(link, img) {
    close();
    var box = document.createElement("div");
    box.className = "rf-zoom";
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-modal", "true");
    box.setAttribute("aria-label", WORDS.label);
    var button = document.createElement("button");
    button.type = "button";
    button.className = "rf-zoom-close";
    button.setAttribute("aria-label", WORDS.close);
    button.textContent = "\u00d7";
    var pane = document.createElement("div");
    pane.className = "rf-zoom-pane";
    var big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt;
    // the file holds twice the pixels it is drawn at (revformer.i18n): at least its drawn size (half its pixels, in
    // CSS px, scrolled on a phone), and on a wide screen as wide as the screen allows, up to one CSS px a pixel
    if (img.naturalWidth) {
      var width = Math.min(img.naturalWidth, Math.max(img.naturalWidth / 2, window.innerWidth - 48));
      big.style.width = Math.round(width) + "px";
    }
    pane.appendChild(big);
    var caption = link.closest("figure") && link.closest("figure").querySelector("figcaption");
    if (caption) {  // the figure's caption under it, without the phone's tap hint and the permalink's "#"
      var copy = caption.cloneNode(true);
      copy.querySelectorAll(".rf-zoom-hint, a.headerlink").forEach(function (el) { el.remove(); });
      var words = document.createElement("p");
      words.textContent = copy.textContent.trim();
      pane.appendChild(words);
    }
    box.appendChild(button);
    box.appendChild(pane);
    box.addEventListener("click", function (event) {
      if (event.target === box || event.target === pane || event.target === button) { close(); }
    });
    document.body.appendChild(box);
    document.documentElement.classList.add("rf-zoom-open");
    document.addEventListener("keydown", onKey, true);
    opened = {box: box, button: button, from: link};
    button.focus();
  }

  function ready() {
    var links = document.querySelectorAll(".bd-article .cell_output a.image-reference");
    links.forEach(function (link) {
      var img = link.querySelector("img");
      if (!img) { return; }
      link.classList.add("rf-zoomable");
      link.addEventListener("click", function (event) {
        if (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) { return; }  // a new tab
        event.preventDefault();
        open(link, img);
      });
    });
    // one hint per figure, shown on narrow screens only (CSS), in the caption's language
    document.querySelectorAll(".bd-article .cell_output figure figcaption").forEach(function (caption) {
      if (!caption.parentNode.querySelector("a.rf-zoomable")) { return; }
      var hint = document.createElement("span");
      hint.className = "rf-zoom-hint";
      hint.textContent = (zh ? "" : " ") + WORDS.hint;  // Chinese sets no space after 。
      (caption.querySelector("p") || caption).appendChild(hint);
    });
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", ready); } else { ready(); }
})();

// The left sidebar opened scrolled whenever the current chapter's link lay below mid-screen (the theme's
// rule), which cut the book's title in half even where the link was in the sidebar's first view. Where the link fits the
// sidebar unscrolled, it opens unscrolled; a position the reader scrolled to (kept by the theme) is left alone.
(function () {
  "use strict";
  function settle() {
    var scroller = document.querySelector("div.bd-sidebar"), nav = document.querySelector(".bd-docs-nav");
    if (!scroller || !nav || sessionStorage.getItem("sidebar-scroll-top") !== null) { return; }
    var active = nav.querySelectorAll(".active");
    if (!active.length || scroller.scrollTop === 0) { return; }
    var link = active[active.length - 1];
    var bottom = link.getBoundingClientRect().bottom + scroller.scrollTop - scroller.getBoundingClientRect().top;
    if (bottom < scroller.clientHeight - 16) { scroller.scrollTop = 0; }
  }
  window.addEventListener("load", function () { window.setTimeout(settle, 0); });
})();
