// Run in each page by tests/test_browser.py: returns what a reader would
// see wrong, as plain data.
async ({checkOverflow, localised, keep}) => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  await document.fonts.ready;  // MathJax's fonts load after it typesets
  const images = [...document.images];
  images.forEach((img) => { img.loading = "eager"; });
  await Promise.all(images.map((img) => img.complete ? null :
    new Promise((done) => { img.onload = img.onerror = done; })));
  const firstLine = (el) =>
    (el.innerText || el.textContent || "").trim().split("\\n")[0].slice(0, 90);
  const report = {untypeset: [], mathErrors: [], rawTex: [], images: [],
                  overflow: [], pageOverflow: [], colab: [], language: [],
                  tofu: [], cjkChecked: 0, localised: [],
                  english: []};

  for (const el of document.querySelectorAll(".math")) {
    if (!el.querySelector("mjx-container")) report.untypeset.push(firstLine(el));
  }
  for (const el of document.querySelectorAll("mjx-merror, [data-mjx-error]")) {
    report.mathErrors.push(el.getAttribute("data-mjx-error") || firstLine(el));
  }
  // Raw TeX delimiters in the visible prose (code and outputs may show any text).
  const skip = "pre, code, script, style, mjx-container, .highlight, textarea";
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest(skip)) continue;
    if (!parent.getClientRects().length) continue;  // not displayed
    const match = node.textContent.match(/\\\\\\(|\\\\\\)|\\\\\\[|\\\\\\]|\\$\\$/);
    if (match) report.rawTex.push(node.textContent.trim().slice(0, 90));
  }
  for (const img of images) {
    if (!img.complete || img.naturalWidth === 0) {
      report.images.push(img.getAttribute("src"));
    }
  }
  if (checkOverflow) {
    const blocks = document.querySelectorAll(
      "article div.highlight pre, article .cell_output pre, " +
      "article div.math, article mjx-container[display='true']");
    for (const el of blocks) {
      if (!el.getClientRects().length) continue;  // folded, not shown
      // Typeset maths: the mjx-container inside div.math is the box that scrolls.
      if (el.matches("div.math") && el.querySelector("mjx-container")) continue;
      const box = el.closest(".bd-article") || document.body;
      const over = Math.max(el.scrollWidth - el.clientWidth,
        el.getBoundingClientRect().right - box.getBoundingClientRect().right);
      if (over > 1) {
        const kind = el.matches("div.math, mjx-container") ? "equation" :
          el.closest(".cell_output, .output") ? "output" : "code";
        report.overflow.push(`${kind} ${Math.round(over)} px too wide: ` +
                             `${firstLine(el)}`);
      }
    }
  }
  // The page itself must not scroll sideways (a phone shows a strip of blank page).
  const W = window.innerWidth;
  if (document.documentElement.scrollWidth > W + 1) {
    const clipped = (el) => {
      for (let a = el.parentElement; a; a = a.parentElement) {
        if (getComputedStyle(a).overflowX !== "visible" &&
            a.getBoundingClientRect().right <= W + 1) return true;
      }
      return false;
    };
    const culprits = [...document.querySelectorAll("article *")].filter(
      (el) => el.getBoundingClientRect().right > W + 1 && !clipped(el) &&
              el.getClientRects().length);
    const outermost = culprits.filter(
      (el) => !culprits.includes(el.parentElement));
    report.pageOverflow.push(
      `page is ${document.documentElement.scrollWidth} px wide in a ${W} px ` +
      "window; widest: " + outermost.slice(0, 5).map(
        (el) => `<${el.tagName.toLowerCase()}> ${firstLine(el)}`).join(" | "));
  }
  for (const a of document.querySelectorAll("a[href*='colab.research.google.com']")) {
    report.colab.push(a.getAttribute("href"));
  }
  // The language switch: its resolved target, and whether a reader can see it.
  for (const a of document.querySelectorAll("a.course-language")) {
    const r = a.getBoundingClientRect();
    const style = getComputedStyle(a);
    const visible = r.width > 0 && r.height > 0 && r.left >= 0 && r.top >= 0 &&
      r.right <= W + 1 && r.bottom <= window.innerHeight &&
      style.visibility !== "hidden" && style.display !== "none" &&
      Number(style.opacity) > 0;
    report.language.push({href: a.href, text: a.textContent.trim(), visible});
  }
  // English UI strings. `localised`: strings the Chinese edition translates, looked for
  // everywhere but code, outputs and maths. `english`: any Latin-script word in a
  // tooltip, label or alt text, or in the text of the page's furniture (header bar,
  // footer, buttons, dropdown menus). Text marked lang="en" is English on purpose.
  const notUI = "pre, code, .highlight, .cell_output, .output, mjx-container, " +
                "script, style, body [lang|='en']";
  const furniture = ".bd-header, .bd-header-article, .bd-footer, .bd-footer-content, " +
                    ".bd-footer-article, .dropdown-menu, button, summary";
  const squash = (text) => text.replace(/\\s+/g, " ").trim();
  const latin = (text) => /[A-Za-z]{2,}/.test(text) && !/[\u3400-\u9fff]/.test(text) &&
                          !keep.includes(text);
  const uiAttributes = ["title", "aria-label", "data-bs-title", "data-bs-original-title",
                        "alt", "placeholder", "data-toggle-hint", "data-tooltip"];
  const seen = new Set();
  const note = (list, what) => { if (!seen.has(what)) { seen.add(what); list.push(what); } };
  for (const el of document.querySelectorAll("body *")) {
    if (el.closest(notUI)) continue;
    for (const name of uiAttributes) {
      const value = squash(el.getAttribute(name) || "");
      if (!value) continue;
      if (localised.includes(value)) note(report.localised, `${name}="${value}"`);
      // A citation's title is its bibliography entry (content, not furniture).
      else if (latin(value) && !(name === "title" && el.matches("a.reference")))
        note(report.english, `${name}="${value}" on <${el.tagName.toLowerCase()}>`);
    }
  }
  const textWalker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = textWalker.nextNode(); node; node = textWalker.nextNode()) {
    const parent = node.parentElement;
    const text = squash(node.textContent);
    if (!parent || !text || parent.closest(notUI)) continue;
    if (localised.includes(text)) note(report.localised, `text "${text}"`);
    else if (parent.closest(furniture) && latin(text))
      note(report.english, `text "${text}" in <${parent.tagName.toLowerCase()}>`);
  }
  // sphinx-togglebutton's hints live in two script variables until a dropdown is opened.
  for (const hint of [typeof toggleHintShow === "undefined" ? "" : toggleHintShow,
                      typeof toggleHintHide === "undefined" ? "" : toggleHintHide]) {
    if (localised.includes(hint)) note(report.localised, `togglebutton hint "${hint}"`);
  }
  // The header bar that holds the switch and the buttons fits in the window.
  for (const bar of document.querySelectorAll(".header-article-items__end")) {
    const right = Math.max(...[...bar.querySelectorAll("a, button")].map(
      (el) => el.getClientRects().length ? el.getBoundingClientRect().right : 0));
    if (right > W + 1) {
      report.pageOverflow.push(`header buttons end at ${Math.round(right)} px ` +
                               `in a ${W} px window`);
    }
  }
  if (checkOverflow) {
    // Missing glyphs: draw each distinct CJK character in the font of its text and
    // compare with the missing-glyph box of an unassigned code point in that font.
    const cjk = /[\u3400-\u9fff\uf900-\ufaff]/g;
    const byFont = new Map();
    const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = texts.nextNode(); node; node = texts.nextNode()) {
      const parent = node.parentElement;
      if (!parent || !parent.getClientRects().length) continue;
      const chars = node.textContent.match(cjk);
      if (!chars) continue;
      const s = getComputedStyle(parent);
      const font = `${s.fontStyle} ${s.fontWeight} 40px ${s.fontFamily}`;
      if (!byFont.has(font)) byFont.set(font, new Set());
      chars.forEach((c) => byFont.get(font).add(c));
    }
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = 48;
    const ctx = canvas.getContext("2d", {willReadFrequently: true});
    const draw = (font, ch) => {
      ctx.clearRect(0, 0, 48, 48);
      ctx.font = font;
      ctx.fillStyle = "#000";
      ctx.textBaseline = "top";
      ctx.fillText(ch, 4, 4);
      return ctx.getImageData(0, 0, 48, 48).data.filter((_, i) => i % 4 === 3);
    };
    const same = (a, b) => a.every((v, i) => v === b[i]);
    for (const [font, chars] of byFont) {
      const box = draw(font, "\u0378");
      for (const ch of chars) {
        const glyph = draw(font, ch);
        report.cjkChecked += 1;
        if (same(glyph, box) || glyph.every((v) => v === 0)) {
          report.tofu.push(`${ch} (U+${ch.codePointAt(0).toString(16)}) ` +
                           `in ${font}`);
        }
      }
    }
  }
  return report;
}
