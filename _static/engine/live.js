/* What both live pages' widgets share (window.CourseLive): the texts in the
 * page's language, DOM elements, heatmaps on a canvas, and the button that
 * loads the scripts and the weights only when the reader presses it (by
 * <script> tags, so the page stays light and works from file://), then
 * builds the model or says why this page cannot run the export.
 *
 * English is the source: each page's script holds its English texts, with
 * {name} slots. A Chinese page (<html lang="zh-CN">) first loads
 * _static/engine/zh.js, which tools/editions/build_book.py writes into the Chinese
 * edition from locale/zh/live/widgets.yml (English text -> Chinese); a text
 * with no entry there stays English and is reported on the console.
 */
(function () {
  "use strict";

  // the English texts, or on a Chinese page their Chinese
  function texts(english) {
    if (!document.documentElement.lang.toLowerCase().startsWith("zh")) return english;
    const zh = window.COURSE_LIVE_ZH || {};
    const out = {};
    for (const [key, text] of Object.entries(english)) {
      if (!Object.hasOwn(zh, text)) {
        console.error(`no Chinese for ${JSON.stringify(text)} in locale/zh/live/widgets.yml`);
      }
      out[key] = Object.hasOwn(zh, text) ? zh[text] : text;
    }
    return out;
  }

  // a text with its {name} slots filled from `values`
  function say(text, values) {
    return text.replace(/\{(\w+)\}/g, (_, name) => String(values[name]));
  }

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  // weights (rows of values in 0..1; null: not drawn) as cells, darker for
  // more (1 - v^gamma), with `left` and `top` px left for labels; the
  // canvas, and its context ready to write them in #222
  function heatmap(weights, cols, { alt, cls, left, top, cell, gap = 0, gamma = 1 }) {
    const w = left + cell * cols;
    const h = top + cell * weights.length;
    const canvas = el("canvas", { role: "img", "aria-label": alt, class: cls });
    const ratio = window.devicePixelRatio || 1;
    canvas.width = w * ratio;
    canvas.height = h * ratio;
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
    const ctx = canvas.getContext("2d");
    ctx.scale(ratio, ratio);
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, w, h);
    weights.forEach((row, r) => row.forEach((v, c) => {
      if (v === null) return;
      const shade = Math.round(255 * (1 - Math.pow(v, gamma)));
      ctx.fillStyle = `rgb(${shade}, ${shade}, 255)`;
      ctx.fillRect(left + c * cell, top + r * cell, cell - gap, cell - gap);
    }));
    ctx.fillStyle = "#222";
    return { canvas, ctx };
  }

  // The load button and its status line in `root` (classes prefix-load,
  // prefix-status). Pressed, it loads `scripts` in order (each once), then
  // calls make(window[global]): the model, or an ExportError, whose reason
  // the status shows (prefix-refused, data-state "refused"). Then the status
  // says how many MB `bytes(data)` loaded and start(model, data) runs. T:
  // the page's texts (load, loading, loaded {mb}, failed, refused {why}).
  function mount(root, { prefix, T, scripts, global, make, bytes, start }) {
    const status = el("p", { class: `${prefix}-status`, "aria-live": "polite" });
    const button = el("button", { type: "button", class: `${prefix}-load`, text: T.load });
    root.append(button, status);
    const loaded = new Set();

    function ready() {
      const data = window[global];
      let model;
      try {
        model = make(data);
      } catch (err) {
        if (!(err instanceof window.CourseEngine.ExportError)) throw err;
        // an export this page cannot compute: say why, compute nothing
        button.remove();
        status.textContent = say(T.refused, { why: err.message });
        status.classList.add(`${prefix}-refused`);
        root.dataset.state = "refused";
        return;
      }
      button.remove();
      status.textContent = say(T.loaded, { mb: (bytes(data) / 1e6).toFixed(1) });
      start(model, data);
    }

    function load(i) {
      if (i === scripts.length) return ready();
      if (loaded.has(scripts[i])) return load(i + 1);
      const script = el("script", { src: scripts[i] });
      script.onload = () => {
        loaded.add(scripts[i]);
        load(i + 1);
      };
      script.onerror = () => {
        status.textContent = T.failed;
        button.disabled = false;
      };
      document.head.append(script);
    }

    button.addEventListener("click", () => {
      button.disabled = true;
      status.textContent = T.loading;
      load(0);
    });
  }

  // the folder of the script running now (call it at its top level)
  function here() {
    return document.currentScript ? document.currentScript.src.replace(/[^/]*$/, "") : "";
  }

  // setup(root) for every element matching `selector`, once the page is read
  function each(selector, setup) {
    const init = () => document.querySelectorAll(selector).forEach(setup);
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
    else init();
  }

  window.CourseLive = { texts, say, el, heatmap, mount, here, each };
})();
