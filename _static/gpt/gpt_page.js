/* The live GPT's widget (book/gpt_live.md): a prompt, the sampling
 * settings, a seed and a button; the text written token by token; the ten
 * most likely tokens the last one was drawn from, and every head's
 * attention. The engine (gpt.js, window.CourseGPT) and the weights
 * (weights.js, window.GPT_DATA) load by <script> tags only when the reader
 * presses the button, so the page stays light and works from file://.
 * window.GPTLive exposes the model and the last run, for the tests.
 */
(function () {
  "use strict";

  const HERE = document.currentScript ? document.currentScript.src.replace(/[^/]*$/, "") : "";
  const ROWS = 12; // heatmap rows: the last queries
  const COLS = 32; // heatmap columns: the last positions of the window
  const SLICE_MS = 30; // compute this long, then let the page paint

  const TEXT = {
    en: {
      load: "Load the GPT",
      loading: "Loading the weights…",
      loaded: (mb) => `Loaded: ${mb} MB of weights, computed in your browser.`,
      failed: "The weights could not be loaded.",
      refused: (why) => `This page cannot run the exported model: ${why}.`,
      prompt: "Prompt",
      tokens: "New tokens",
      temperature: "Temperature (0: greedy)",
      topK: "Top-k (empty: off)",
      topP: "Top-p (empty: off)",
      seed: "Seed",
      write: "Write",
      stop: "Stop",
      emptyPrompt: "Type a prompt: the model continues it.",
      bad: (what, want) => `${what} must be ${want}.`,
      wantTokens: "a whole number from 1 to 1000",
      wantTemperature: "a number from 0 to 5",
      wantTopK: "a whole number of at least 1, or empty",
      wantTopP: "a number above 0 and at most 1, or empty",
      wantSeed: "a whole number from 0 to 4294967295",
      speed: (n, s, r) => `${n} tokens in ${s} s: ${r} tokens per second.`,
      top: (tok) => `The last token, ${tok}, was drawn from this distribution; the model's ten most likely tokens (temperature 1, before top-k and top-p):`,
      token: "token",
      probability: "probability",
      attention: (n) => `The attention of every head when the model chose the last token: rows are the last ${ROWS} tokens it read as queries, columns the last ${COLS} positions of the window (darker: more weight).`,
      layerHead: (l, h) => `layer ${l}, head ${h}`,
      heatAlt: (l, h) => `Attention weights of layer ${l}, head ${h} over the last positions`,
    },
    zh: {
      load: "加载 GPT 模型",
      loading: "正在加载权重……",
      loaded: (mb) => `已加载：${mb} MB 的权重，全部在你的浏览器里计算。`,
      failed: "权重未能加载。",
      refused: (why) => `本页无法运行导出的模型：${why}。`,
      prompt: "提示",
      tokens: "新词元数",
      temperature: "温度（0：贪心）",
      topK: "Top-k（留空：不用）",
      topP: "Top-p（留空：不用）",
      seed: "随机种子",
      write: "续写",
      stop: "停止",
      emptyPrompt: "请输入提示：模型会接着写下去。",
      bad: (what, want) => `${what}必须是${want}。`,
      wantTokens: "1 到 1000 之间的整数",
      wantTemperature: "0 到 5 之间的数",
      wantTopK: "至少为 1 的整数，或留空",
      wantTopP: "大于 0、至多为 1 的数，或留空",
      wantSeed: "0 到 4294967295 之间的整数",
      speed: (n, s, r) => `${n} 个词元，用时 ${s} 秒：每秒 ${r} 个词元。`,
      top: (tok) => `最后一个词元 ${tok} 就是从这个分布中抽出的；模型认为最可能的十个词元（温度 1，未经 top-k 和 top-p）：`,
      token: "词元",
      probability: "概率",
      attention: (n) => `模型选出最后一个词元时每个头的注意力：行是最后 ${ROWS} 个作为查询读入的词元，列是窗口中最后 ${COLS} 个位置（颜色越深，权重越大）。`,
      layerHead: (l, h) => `第 ${l} 层，第 ${h} 个头`,
      heatAlt: (l, h) => `第 ${l} 层第 ${h} 个头对最后若干位置的注意力权重`,
    },
  };

  const DEFAULT_PROMPT = "BANQUO.\nThe earth hath bubbles, as the water has,\n";

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  // a token's text, shown: spaces as ·, line breaks as ↵
  function shown(text) {
    return "“" + text.replace(/ /g, "·").replace(/\n/g, "↵").replace(/\t/g, "⇥") + "”";
  }

  // weights (rows x cols, 0..1) as a heatmap; column labels: the tokens
  function heatmap(weights, rowLabels, colLabels, alt, cell) {
    const label = cell >= 8 ? 30 : 2; // row labels where the cells are large enough
    const w = label + cell * colLabels.length;
    const h = 12 + cell * rowLabels.length;
    const canvas = el("canvas", { role: "img", "aria-label": alt, class: "gl-heat" });
    const ratio = window.devicePixelRatio || 1;
    canvas.width = w * ratio;
    canvas.height = h * ratio;
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
    const ctx = canvas.getContext("2d");
    ctx.scale(ratio, ratio);
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, w, h);
    for (let r = 0; r < weights.length; r++) {
      for (let c = 0; c < weights[r].length; c++) {
        const v = weights[r][c];
        if (v === null) continue; // a future position (causal mask)
        const shade = Math.round(255 * (1 - Math.sqrt(v)));
        ctx.fillStyle = `rgb(${shade}, ${shade}, 255)`;
        ctx.fillRect(label + c * cell, 12 + r * cell, cell - 1, cell - 1);
      }
    }
    ctx.fillStyle = "#222";
    ctx.font = "9px sans-serif";
    ctx.textAlign = "right";
    if (label > 2) rowLabels.forEach((p, i) => ctx.fillText(p.slice(0, 5), label - 2, 12 + (i + 0.85) * cell));
    return canvas;
  }

  function setup(root) {
    const T = document.documentElement.lang.toLowerCase().startsWith("zh") ? TEXT.zh : TEXT.en;
    const status = el("p", { class: "gl-status", "aria-live": "polite" });
    const button = el("button", { type: "button", class: "gl-load", text: T.load });
    root.append(button, status);
    const api = { model: null, last: null, running: false };
    window.GPTLive = api;
    root.dataset.state = "idle";

    button.addEventListener("click", () => {
      button.disabled = true;
      status.textContent = T.loading;
      // the engine, then the weights: both only now, by <script> tags
      const engine = el("script", { src: HERE + "gpt.js" });
      const script = el("script", { src: HERE + "weights.js" });
      engine.onload = () => document.head.append(script);
      engine.onerror = () => {
        status.textContent = T.failed;
        button.disabled = false;
      };
      script.onload = () => {
        const data = window.GPT_DATA;
        try {
          api.model = new window.CourseGPT.GPTModel(data);
        } catch (err) {
          if (!(err instanceof window.CourseGPT.ExportError)) throw err;
          button.remove();
          status.textContent = T.refused(err.message);
          status.classList.add("gl-refused");
          root.dataset.state = "refused";
          return;
        }
        button.remove();
        status.textContent = T.loaded((data.fp16.length / 1e6).toFixed(1));
        start(root, api, T);
      };
      script.onerror = () => {
        status.textContent = T.failed;
        button.disabled = false;
      };
      if (window.CourseGPT) document.head.append(script);
      else document.head.append(engine);
    });
  }

  function field(T, cls, label, value, attrs) {
    const input = el("input", { class: cls, value, autocomplete: "off", ...attrs });
    return [el("label", {}, [el("span", { text: label }), input]), input];
  }

  function start(root, api, T) {
    const model = api.model;
    const tok = model.tokenizer;
    const prompt = el("textarea", { class: "gl-prompt", rows: "4", spellcheck: "false", "aria-label": T.prompt });
    prompt.value = DEFAULT_PROMPT;
    const [lTokens, nTokens] = field(T, "gl-tokens", T.tokens, "100", { type: "number", min: "1", max: "1000" });
    const [lTemp, temp] = field(T, "gl-temperature", T.temperature, "0.8", { type: "number", min: "0", max: "5", step: "0.05" });
    const [lK, topK] = field(T, "gl-topk", T.topK, "", { type: "number", min: "1" });
    const [lP, topP] = field(T, "gl-topp", T.topP, "", { type: "number", min: "0", max: "1", step: "0.05" });
    const [lSeed, seed] = field(T, "gl-seed", T.seed, "0", { type: "number", min: "0" });
    const write = el("button", { type: "button", class: "gl-write", text: T.write });
    const message = el("p", { class: "gl-message", role: "status" });
    const text = el("pre", { class: "gl-text" });
    const speed = el("p", { class: "gl-speed" });
    const panel = el("div", { class: "gl-panel" });
    root.append(
      el("label", { class: "gl-prompt-label", text: T.prompt }), prompt,
      el("div", { class: "gl-settings" }, [lTokens, lTemp, lK, lP, lSeed]),
      write, message, text, speed, panel,
    );

    // the settings, or a message naming the first bad one
    function settings() {
      const num = (input) => (input.value.trim() === "" ? null : Number(input.value));
      const n = num(nTokens), t = num(temp), k = num(topK), p = num(topP), s = num(seed);
      if (!prompt.value) return T.emptyPrompt;
      if (!(Number.isInteger(n) && n >= 1 && n <= 1000)) return T.bad(T.tokens, T.wantTokens);
      if (!(t !== null && t >= 0 && t <= 5)) return T.bad(T.temperature, T.wantTemperature);
      if (!(k === null || (Number.isInteger(k) && k >= 1))) return T.bad(T.topK, T.wantTopK);
      if (!(p === null || (p > 0 && p <= 1))) return T.bad(T.topP, T.wantTopP);
      if (!(Number.isInteger(s) && s >= 0 && s <= 0xffffffff)) return T.bad(T.seed, T.wantSeed);
      return { n, temperature: t, topK: k, topP: p, seed: s };
    }

    function drawPanel(run) {
      const steps = run.steps;
      if (!steps.length) return;
      const last = steps[steps.length - 1];
      const top = window.CourseGPT.topTokens(last.logits, 10);
      const table = el("table", { class: "gl-top" }, [
        el("thead", {}, [el("tr", {}, [el("th", { text: T.token }), el("th", { text: T.probability })])]),
      ]);
      const body = el("tbody");
      for (const { id, p } of top) {
        const bar = el("span", { class: "gl-bar" });
        bar.style.width = `${Math.max(1, Math.round(p * 100))}%`;
        body.append(el("tr", { class: id === last.token ? "gl-chosen" : "", "data-id": String(id), "data-p": String(p) }, [
          el("td", {}, [el("code", { text: shown(tok.decode([id])) })]),
          el("td", {}, [el("span", { text: `${(100 * p).toFixed(1)}%` }), bar]),
        ]));
      }
      if (!top.some((r) => r.id === last.token)) { // drawn from the tail
        const p = window.CourseGPT.topTokens(last.logits, last.logits.length).find((r) => r.id === last.token).p;
        body.append(el("tr", { class: "gl-chosen gl-extra" }, [
          el("td", {}, [el("code", { text: shown(tok.decode([last.token])) })]),
          el("td", { text: `${(100 * p).toFixed(2)}%` }),
        ]));
      }
      table.append(body);
      // heatmaps: the last ROWS queries of this window over its last COLS positions
      const rows = steps.slice(-ROWS).filter((s) => s.start === last.start);
      const width = last.attention[0][0].length; // positions the last query saw
      const first = Math.max(0, width - COLS);
      const grid = el("div", { class: "gl-grid" });
      // two heatmaps side by side on a phone: smaller cells there
      const cell = (root.clientWidth || 320) < 600 ? 5 : 8;
      last.attention.forEach((heads, l) => heads.forEach((_, h) => {
        const weights = rows.map((s) => {
          const w = s.attention[l][h];
          return Array.from({ length: width - first }, (_, c) => (first + c < w.length ? w[first + c] : null));
        });
        const labels = rows.map((s) => tok.decode([s.input]).replace(/\n/g, "↵"));
        grid.append(el("div", { class: "gl-fig" }, [
          heatmap(weights, labels, new Array(width - first).fill(""), T.heatAlt(l + 1, h + 1), cell),
          el("div", { class: "gl-caption", text: T.layerHead(l + 1, h + 1) }),
        ]));
      }));
      panel.replaceChildren(
        el("p", { text: T.top(shown(tok.decode([last.token]))) }), table,
        el("p", { text: T.attention() }), grid,
      );
    }

    async function run() {
      if (api.running) {
        api.running = false; // the button is "Stop": end after this token
        return;
      }
      const s = settings();
      message.textContent = "";
      if (typeof s === "string") {
        message.textContent = s;
        root.dataset.state = "error";
        return;
      }
      api.running = true;
      root.dataset.state = "busy";
      write.textContent = T.stop;
      panel.replaceChildren();
      const ids = tok.encode(prompt.value);
      const rng = new window.CourseGPT.Mulberry32(s.seed);
      const run = { prompt: ids, settings: s, ids: ids.slice(), steps: [] };
      api.last = run;
      text.replaceChildren(el("span", { class: "gl-given", text: prompt.value }));
      const decoder = new TextDecoder("utf-8");
      const t0 = performance.now();
      let slice = t0;
      const gen = model.generate(ids, s.n, rng, s);
      for (;;) {
        const { value, done } = gen.next();
        if (done) break;
        const input = run.ids[run.ids.length - 1];
        run.ids.push(value.token);
        run.steps.push({ ...value, input });
        const piece = decoder.decode(tok.table[value.token], { stream: true });
        text.append(el("span", { class: "gl-token", title: `#${value.token}`, text: piece }));
        if (performance.now() - slice > SLICE_MS) {
          await new Promise((resolve) => setTimeout(resolve, 0)); // paint
          slice = performance.now();
          if (!api.running) break;
        }
      }
      text.append(decoder.decode());
      const seconds = (performance.now() - t0) / 1000;
      const n = run.steps.length;
      run.ms = seconds * 1000;
      run.tokensPerSecond = n / seconds;
      speed.textContent = T.speed(n, seconds.toFixed(2), run.tokensPerSecond.toFixed(0));
      drawPanel(run);
      const last = run.steps[n - 1];
      if (last) {
        run.top = window.CourseGPT.topTokens(last.logits, 10);
        run.attention = last.attention.map((heads) => heads.map((w) => Array.from(w)));
        run.start = last.start;
      }
      api.running = false;
      write.textContent = T.write;
      api.runs = (api.runs || 0) + 1;
      root.dataset.runs = String(api.runs);
      root.dataset.state = "done";
    }

    write.addEventListener("click", run);
  }

  function init() {
    document.querySelectorAll(".gpt-live").forEach(setup);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
