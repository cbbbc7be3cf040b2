// The book's search (Sphinx's html_search_scorer: loaded after searchtools.js, in language_data.js).
// 1. A term's home chapter and its glossary entry come first: REVFORMER_HOMES (revformer-homes.js, written by
//    book/_ext/revformer_book.py from the glossary's "Taught in" links) maps a term to the page that teaches it.
// 2. Snippets are prose: code cells, outputs' listings, the printed table of contents and the explorers' and
//    quizzes' options are left out of the text a snippet is cut from; a snippet cut mid-sentence ends in "…".
// 3. A glossary term found as a term is not listed a second time as the glossary page.
// 4. Chinese queries: a word the index does not hold as a whole (训练集, which jieba indexed as 训练 and 集) is
//    looked up as its longest indexed pieces, all of which a page must hold.
;(function () {  // the semicolon: this file is appended to language_data.js, after an expression
  if (typeof Scorer === "undefined" || typeof Search === "undefined") { return; }
  // 10. No result: say what to try. Sphinx's sentence asks for "enough categories", which this page does
  //     not offer (the sixteenth Chinese review). translations.js, which it would come from, loads earlier.
  if (typeof Documentation !== "undefined" && Documentation.TRANSLATIONS) {
    Documentation.TRANSLATIONS["Your search did not match any documents. Please make sure that all words " +
      "are spelled correctly and that you've selected enough categories."] =
      /^zh/.test(document.documentElement.lang || "")
        ? "没有找到匹配的页面。请检查拼写，或换一种说法：术语表列出了本书的用语和它们的其他叫法。"
        : "No page matches. Check the spelling, or try another word: the glossary lists the book's terms " +
          "and their other names.";
  }
  function query() {
    return (new URLSearchParams(window.location.search).get("q") || "").toLowerCase().trim();
  }
  // the chapter that teaches an alias's term (REVFORMER_ALIASES: [as written, headword, anchor])
  function homeOf(alias) {
    var homes = window.REVFORMER_HOMES || {};
    return homes[alias[0].toLowerCase()] || homes[alias[1].toLowerCase()];
  }
  Scorer.score = function (result) {  // [docname, title, anchor, descr, score, filename]
    var alias = (window.REVFORMER_ALIASES || {})[query()];
    var home = (window.REVFORMER_HOMES || {})[query()] || (alias && homeOf(alias));
    var score = result[4];
    if (home && result[0] === home) { score += 30; }
    if (home && /(^|\/)glossary$/.test(result[0])) { score += 20; }
    return score;
  };
  // TeX as a reader would write it in plain text: x_out = LN(x + Sublayer(x)), j ≤ i, (1)/(6) Σ ..., not the
  // command words a stripped backslash leaves ("operatorname", "infty", "le", "frac").
  var CJK = /[\u3400-\u9fff]/;
  function indexed(word) {
    var index = Search._index || {};
    return (index.terms && word in index.terms) || (index.titleterms && word in index.titleterms);
  }
  function pieces(word) {  // longest indexed pieces first, left to right
    var out = [], i = 0, n;
    while (i < word.length) {
      for (n = Math.min(8, word.length - i); n > 0 && !indexed(word.substr(i, n)); n--) {}
      // a character no page holds: the word is in no page, and a search for its other pieces would
      // list pages that hold none of it (薛定谔 found 决定's 定; the seventeenth Chinese review)
      if (n === 0) { return [word]; }
      out.push(word.substr(i, n));
      i += n;
    }
    return out;
  }
  // 7. Phrases: two or three words of a query that the index holds as one phrase (logit lens as logit_lens_,
  //    Pre-LN as pre_ln_, written by book/_ext/revformer_book.py's phrase_keys) are looked up as that phrase,
  //    not as words that each match far more (lens stems to len, in PROMPT_LEN; pre is part of every "predict").
  function phrases(words) {
    var out = [], i = 0, n, key;
    while (i < words.length) {
      for (n = Math.min(3, words.length - i); n > 1; n--) {
        key = words.slice(i, i + n).join("_").toLowerCase() + "_";
        if (indexed(key)) { break; }
      }
      if (n > 1) { out.push(key); i += n; } else { out.push(words[i]); i += 1; }
    }
    return out;
  }
  // 8. A query word is stemmed as the index stemmed it: the Chinese index keeps a short Latin word whole where
  //    its stem would be shorter than three letters (eos, bos: Sphinx's SearchChinese.stem), and the page's
  //    Porter stemmer made the query eo and bo, which nothing matched.
  if (typeof Stemmer === "function") {
    var Porter = Stemmer;
    Stemmer = function () {
      var stemmer = new Porter(), stem = stemmer.stemWord;
      stemmer.stemWord = function (word) {
        var stemmed = stem.call(stemmer, word);
        return !indexed(stemmed) && indexed(word) ? word : stemmed;
      };
      return stemmer;
    };
  }
  // 9. A glossary entry's other name (层归一化, 掩码, 随机化检验: REVFORMER_ALIASES, from the entries' 也称 and
  //    原文 lines) that the term's own chapter does not write is looked up as the chapters write it (LayerNorm,
  //    mask, 符号翻转检验), and the results say so; a name the teaching chapter writes is searched as it is.
  function files(word) {
    var index = Search._index || {};
    return [index.terms, index.titleterms].reduce(function (out, table) {
      var found = table && table[word];
      return out.concat(found === undefined ? [] : found);
    }, []);
  }
  function unwrittenAt(alias, as) {
    var index = Search._index || {}, names = index.docnames || [];
    var home = homeOf(as), holders = files(alias);
    if (!home) {  // no teaching chapter known: only the glossary may write it
      return holders.every(function (file) { return /(^|\/)glossary$/.test(names[file]); });
    }
    return holders.indexOf(names.indexOf(home)) === -1;
  }
  var split = splitQuery, inPieces = {}, readAs = {};  // the query's words looked up as their pieces (note 6),
  splitQuery = function (text) {                       // or as the chapters write them (note 9)
    var out = [], aliases = window.REVFORMER_ALIASES || {};
    Object.keys(aliases).sort(function (a, b) { return b.length - a.length; }).forEach(function (alias) {
      var at = text.toLowerCase().indexOf(alias);
      if (at !== -1 && unwrittenAt(alias, aliases[alias])) {
        readAs[alias] = aliases[alias];  // once: Sphinx splits the query more than once
        text = text.slice(0, at) + " " + aliases[alias][0] + " " + text.slice(at + alias.length);
      }
    });
    var chinese = CJK.test(text), words = phrases(split(text));
    // "p 值": a letter and the Chinese word after it are one indexed word (p值), as book/_ext indexes them
    words = words.reduce(function (out, word, i) {
      if (chinese && /^[a-z]$/i.test(word) && CJK.test(words[i + 1] || "")) {
        words[i + 1] = word.toLowerCase() + words[i + 1];
      } else if (!(chinese && /^[a-z]$/i.test(word))) { out.push(word); }
      return out;
    }, []);
    words.forEach(function (word) {
      if (CJK.test(word) && Search._index && !indexed(word.toLowerCase())) {
        var parts = pieces(word);
        if (parts.length > 1) { inPieces[word] = parts; }
        out.push.apply(out, parts);
      }
      else { out.push(word); }
    });
    return out;
  };
  var perform = Search._performSearch;
  Search._performSearch = function () {
    var results = perform.apply(Search, arguments);
    var terms = {};
    results.forEach(function (r) { if (r[2]) { terms[r[0]] = true; } });
    // a glossary result found by its text leads to the entry the query names (EOS: the special tokens' entry,
    // an other name: its entry), not to the top of the glossary
    var named = Object.keys(readAs), alias = (window.REVFORMER_ALIASES || {})[query()];
    var anchor = named.length ? readAs[named[0]][2] : (window.REVFORMER_ANCHORS || {})[query()] || (alias && alias[2]);
    if (anchor) {
      results.forEach(function (r) { if (!r[2] && /(^|\/)glossary$/.test(r[0])) { r[2] = "#" + anchor; } });
    }
    results = results.filter(function (r) { return r[2] || !terms[r[0]] || !/(^|\/)glossary$/.test(r[0]); });
    // one result a page, its best (the list ends with the best, which is shown first): a page found by its
    // text and by a section's title, or two glossary entries, counted twice in "found 3 pages"
    var kept = {};
    return results.reverse().filter(function (r) { return kept[r[0]] ? false : (kept[r[0]] = true); }).reverse();
  };
  // 5. Every word of a Chinese query is required. Sphinx requires only the words longer than two characters
  //    ("short words are discarded"), so 直接 logit 归因 listed every page with "logit"; a Chinese word of one or
  //    two characters is a whole word, and a page must hold it too.
  var termsSearch = Search.performTermsSearch;
  Search.performTermsSearch = function (searchTerms) {
    var results = termsSearch.apply(Search, arguments);
    var index = Search._index, short = [];
    searchTerms.forEach(function (word) { if (word.length <= 2 && CJK.test(word)) { short.push(word); } });
    function holds(files, file) {
      return files !== undefined && (files === file || (files.length !== undefined && files.indexOf(file) !== -1));
    }
    return results.filter(function (r) {
      var file = index.docnames.indexOf(r[0]);
      return short.every(function (w) { return holds(index.terms[w], file) || holds(index.titleterms[w], file); });
    });
  };
  // 6. A query with an other name (note 9) says how it was read, above the results.
  //    A word the index does not hold whole is looked up as its pieces, and the results say so.
  var ask = Search.query;
  Search.query = function (text) {
    inPieces = {};
    readAs = {};
    ask.apply(Search, arguments);
    var note = document.createElement("p"), root = document.documentElement.dataset.content_root || "";
    var glossary = ((Search._index || {}).docnames || []).filter(function (name) {
      return /(^|\/)glossary$/.test(name);
    })[0];
    function say(text) { note.appendChild(document.createTextNode(text)); }
    Object.keys(readAs).forEach(function (alias) {  // said once, the glossary entry a link
      var as = readAs[alias], entry = document.createElement(glossary ? "a" : "span");
      var typed = (new URLSearchParams(window.location.search).get("q") || "").trim();
      var at = typed.toLowerCase().indexOf(alias);  // as the reader typed it: KV缓存, not kv缓存
      say("“" + (at === -1 ? alias : typed.slice(at, at + alias.length)) + "”按本书正文的写法“" + as[0] +
          "”检索（见");
      if (glossary) { entry.href = root + glossary + ".html#" + as[2]; }
      entry.textContent = "术语表“" + as[1] + "”";
      note.appendChild(entry);
      say("）。");
    });
    Object.keys(inPieces).forEach(function (word) {
      // the index knows words, not whether a page writes them side by side: say how it searched, not that
      // the book lacks the word (外推: the index holds 外 and 推, chapter 21 writes 外推)
      say("“" + word + "”按“" + inPieces[word].join("”“") + "”分开检索：下面的页面都含有它们，未必连在一起。");
    });
    if (note.childNodes.length && Search.output && !document.querySelector(".rf-search-note")) {
      note.className = "rf-search-note";
      Search.output.parentNode.insertBefore(note, Search.output);
    }
  };
  // A snippet is cut around the words as the page writes them: a phrase (logit_lens_ is "logit lens" or
  // "logit-lens") and a letter with its Chinese word (p值 is "p 值"), which Sphinx looks for only as keyed.
  function escaped(text) { return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }
  function written(keyword) {
    var letter = /^([a-z])([\u3400-\u9fff].*)$/.exec(keyword);
    if (/^[a-z0-9_]+_$/.test(keyword)) {
      return new RegExp(keyword.slice(0, -1).split("_").map(escaped).join("[\\s\\-]+"), "i");
    }
    return letter ? new RegExp(escaped(letter[1]) + "\\s?" + escaped(letter[2]), "i") : null;
  }
  // The results highlight a phrase and a letter's word as the page writes them (logit lens, Pre-LN, p 值),
  // not as their index keys (logit_lens_, p值), which no page holds.
  var parse = Search._parseQuery;
  Search._parseQuery = function () {
    var parsed = parse.apply(Search, arguments), shown = new Set();
    parsed[3].forEach(function (term) {
      var letter = /^([a-z])([\u3400-\u9fff].*)$/.exec(term), words = term.slice(0, -1).split("_");
      if (/^[a-z0-9_]+_$/.test(term)) { shown.add(words.join(" ")); shown.add(words.join("-")); }
      else if (letter) { shown.add(letter[1] + " " + letter[2]); shown.add(letter[1] + letter[2]); }
      else { shown.add(term); }
    });
    parsed[3] = shown;
    return parsed;
  };
  var summarise = Search.makeSearchSummary;
  Search.makeSearchSummary = function (htmlText, keywords, anchor) {
    var text = null, found = [], plain = [];
    Array.from(keywords).forEach(function (keyword) {
      var pattern = written(keyword), match;
      if (!pattern) { plain.push(keyword); return; }
      text = text === null ? Search.htmlToText(htmlText, anchor) : text;
      match = pattern.exec(text);
      if (match) { found.push(match[0]); }
    });
    var summary = summarise(htmlText, plain.concat(found), anchor);
    if (summary && !/[.。!！?？:：;；)）…]$/.test(summary.textContent)) { summary.textContent += "…"; }
    return summary;
  };
  var SYMBOLS = {infty: "∞", le: "≤", leq: "≤", ge: "≥", geq: "≥", neq: "≠", approx: "≈", sum: "Σ", prod: "Π",
                 ell: "ℓ", cdot: "·", times: "×", odot: "⊙", to: "→", rightarrow: "→", sqrt: "√", in: "∈",
                 top: "ᵀ", dots: "…", ldots: "…", cdots: "⋯", alpha: "α", beta: "β", gamma: "γ", sigma: "σ",
                 mu: "μ", epsilon: "ε", varepsilon: "ε", lambda: "λ", theta: "θ", quad: " ", qquad: " ",
                 left: "", right: "", big: "", Big: "", bigl: "", bigr: "", Bigl: "", Bigr: "",
                 lVert: "‖", rVert: "‖", Vert: "‖", lvert: "|", rvert: "|"};
  function plain(tex) {
    return tex.replace(/\\[()\[\]]/g, "")
      .replace(/\\frac\{(\w+)\}\{(\w+)\}/g, "$1/$2")
      .replace(/\\frac\{([^{}]*)\}\{([^{}]*)\}/g, "($1)/($2)")
      .replace(/\\(sum|prod)_\{([^{}]*)\}\^\{?(\w+)\}?/g, "\\$1[$2..$3]")
      .replace(/\\(?:text|operatorname|mathrm|mathbf|mathit|mathbb|mathcal|boldsymbol|textbf)\{([^{}]*)\}/g, "$1")
      .replace(/\\([A-Za-z]+)/g, function (m, word) { return word in SYMBOLS ? SYMBOLS[word] : word; })
      .replace(/\\[,;:! ]/g, " ").replace(/[{}]/g, "");
  }
  var toText = Search.htmlToText;
  Search.htmlToText = function (htmlString, anchor) {
    var page = new DOMParser().parseFromString(htmlString, "text/html");
    // a quiz's question is prose; its options, feedback and data are not
    page.querySelectorAll(".cell_input, div.highlight, pre, #jb-print-toc, .rf-playground, .rf-quiz [role=radiogroup], " +
                          ".rf-quiz-feedback, script, style, .rf-source, .rf-run, " +
                          "nav, .toctree-wrapper, button, select, input, summary, .bd-header-article, " +
                          ".header-article-items, .onlyprint, mjx-assistive-mml").forEach(function (el) { el.remove(); });
    // a block's text ends in a space: a term and its definition are not run together ("logit lensReading")
    page.querySelectorAll("dt, dd, p, li, h1, h2, h3, h4, h5, h6, th, td, caption, figcaption").forEach(function (el) {
      el.append(" ");
    });
    page.querySelectorAll(".math").forEach(function (el) {  // math as plain symbols: 13-q, not \(13-q\)
      el.textContent = plain(el.textContent);
    });
    return toText(page.documentElement.outerHTML, anchor);
  };
})();
