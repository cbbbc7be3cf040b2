// The book's search (Sphinx's html_search_scorer: loaded after searchtools.js, in language_data.js).
// 1. A term's home chapter and its glossary entry come first: REVFORMER_HOMES (revformer-homes.js, written by
//    book/_ext/revformer_book.py from the glossary's "Taught in" links) maps a term to the page that teaches it.
// 2. Snippets are prose: code cells, outputs' listings, the printed table of contents and the explorers' and
//    quizzes' controls are left out of the text a snippet is cut from.
;(function () {  // the semicolon: this file is appended to language_data.js, after an expression
  if (typeof Scorer === "undefined" || typeof Search === "undefined") { return; }
  function query() {
    return (new URLSearchParams(window.location.search).get("q") || "").toLowerCase().trim();
  }
  Scorer.score = function (result) {  // [docname, title, anchor, descr, score, filename]
    var homes = window.REVFORMER_HOMES || {}, home = homes[query()];
    var score = result[4];
    if (home && result[0] === home) { score += 30; }
    if (home && /(^|\/)glossary$/.test(result[0])) { score += 20; }
    return score;
  };
  var toText = Search.htmlToText;
  Search.htmlToText = function (htmlString, anchor) {
    var page = new DOMParser().parseFromString(htmlString, "text/html");
    page.querySelectorAll(".cell_input, div.highlight, pre, #jb-print-toc, .rf-playground, .rf-quiz, .rf-source, " +
                          "nav, .toctree-wrapper, button, select, input, summary, .bd-header-article, " +
                          ".header-article-items, .onlyprint, mjx-assistive-mml").forEach(function (el) { el.remove(); });
    page.querySelectorAll(".math").forEach(function (el) {  // math as plain symbols: 13-q, not \(13-q\)
      el.textContent = el.textContent.replace(/\\[()\[\]]/g, "").replace(/\\(\w+)/g, "$1");
    });
    return toText(page.documentElement.outerHTML, anchor);
  };
})();
