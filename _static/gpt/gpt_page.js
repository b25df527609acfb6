/* The live GPT's widget (book/gpt_live.md): a prompt, the sampling
 * settings, a seed and a button; the text written token by token; the ten
 * most likely tokens the last one was drawn from, and every head's
 * attention. The shared engine (_static/engine/engine.js,
 * window.CourseEngine), the model (gpt.js, window.CourseGPT) and the
 * weights (weights.js, window.GPT_DATA) load by <script> tags only when the
 * reader presses the button (_static/engine/live.js), so the page stays
 * light and works from file://. window.GPTLive exposes the model and the
 * last run, for the tests. Under Node (the tests), require() gives its
 * English texts, TEXT.
 */
(function () {
  "use strict";

  const ROWS = 12; // heatmap rows: the last queries
  const COLS = 32; // heatmap columns: the last positions of the window
  const SLICE_MS = 30; // compute this long, then let the page paint

  // English; the Chinese page's are in locale/zh/live/widgets.yml
  const TEXT = {
    load: "Load the GPT",
    loading: "Loading the weights…",
    loaded: "Loaded: {mb} MB of weights, computed in your browser.",
    failed: "The weights could not be loaded.",
    refused: "This page cannot run the exported model: {why}.",
    prompt: "Prompt",
    tokens: "New tokens",
    temperature: "Temperature (0: greedy)",
    topK: "Top-k (empty: off)",
    topP: "Top-p (empty: off)",
    seed: "Seed",
    write: "Write",
    stop: "Stop",
    emptyPrompt: "Type a prompt: the model continues it.",
    bad: "{what} must be {want}.",
    wantTokens: "a whole number from 1 to 1000",
    wantTemperature: "a number from 0 to 5",
    wantTopK: "a whole number of at least 1, or empty",
    wantTopP: "a number above 0 and at most 1, or empty",
    wantSeed: "a whole number from 0 to 4294967295",
    speed: "{n} tokens in {s} s: {rate} tokens per second.",
    top: "The last token, {token}, was drawn from this distribution; the model's ten most likely tokens (temperature 1, before top-k and top-p):",
    token: "token",
    probability: "probability",
    attention: "The attention of every head when the model chose the last token: rows are the last {rows} tokens it read as queries, columns the last {cols} positions of the window (darker: more weight).",
    layerHead: "layer {l}, head {h}",
    heatAlt: "Attention weights of layer {l}, head {h} over the last positions",
  };
  if (typeof document === "undefined") {
    module.exports = { TEXT };
    return;
  }
  const { el, say } = window.CourseLive;
  const HERE = window.CourseLive.here();
  const DEFAULT_PROMPT = "BANQUO.\nThe earth hath bubbles, as the water has,\n";

  // a token's text, shown: spaces as ·, line breaks as ↵
  function shown(text) {
    return "“" + text.replace(/ /g, "·").replace(/\n/g, "↵").replace(/\t/g, "⇥") + "”";
  }

  // weights (rows x cols, 0..1, null: a future position) as a heatmap
  function heatmap(weights, rowLabels, alt, cell) {
    const label = cell >= 8 ? 30 : 2; // row labels where the cells are large enough
    const { canvas, ctx } = window.CourseLive.heatmap(weights, weights[0].length, {
      alt, cls: "gl-heat", left: label, top: 12, cell, gap: 1, gamma: 0.5,
    });
    ctx.font = "9px sans-serif";
    ctx.textAlign = "right";
    if (label > 2) rowLabels.forEach((p, i) => ctx.fillText(p.slice(0, 5), label - 2, 12 + (i + 0.85) * cell));
    return canvas;
  }

  function setup(root) {
    const T = window.CourseLive.texts(TEXT);
    const api = { model: null, last: null, running: false };
    window.GPTLive = api;
    root.dataset.state = "idle";
    window.CourseLive.mount(root, {
      prefix: "gl",
      T,
      // the engine, the model, then the weights: all only now
      scripts: [HERE + "../engine/engine.js", HERE + "gpt.js", HERE + "weights.js"],
      global: "GPT_DATA",
      make: (data) => (api.model = new window.CourseGPT.GPTModel(data)),
      bytes: (data) => data.fp16.length,
      start: () => start(root, api, T),
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

    const bad = (what, want) => say(T.bad, { what, want });
    // the settings, or a message naming the first bad one
    function settings() {
      const num = (input) => (input.value.trim() === "" ? null : Number(input.value));
      const n = num(nTokens), t = num(temp), k = num(topK), p = num(topP), s = num(seed);
      if (!prompt.value) return T.emptyPrompt;
      if (!(Number.isInteger(n) && n >= 1 && n <= 1000)) return bad(T.tokens, T.wantTokens);
      if (!(t !== null && t >= 0 && t <= 5)) return bad(T.temperature, T.wantTemperature);
      if (!(k === null || (Number.isInteger(k) && k >= 1))) return bad(T.topK, T.wantTopK);
      if (!(p === null || (p > 0 && p <= 1))) return bad(T.topP, T.wantTopP);
      if (!(Number.isInteger(s) && s >= 0 && s <= 0xffffffff)) return bad(T.seed, T.wantSeed);
      return { n, temperature: t, topK: k, topP: p, seed: s };
    }

    function drawPanel(run) {
      const steps = run.steps;
      if (!steps.length) return;
      const last = steps[steps.length - 1];
      const top = window.CourseEngine.topTokens(last.logits, 10);
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
        const p = window.CourseEngine.topTokens(last.logits, last.logits.length).find((r) => r.id === last.token).p;
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
          heatmap(weights, labels, say(T.heatAlt, { l: l + 1, h: h + 1 }), cell),
          el("div", { class: "gl-caption", text: say(T.layerHead, { l: l + 1, h: h + 1 }) }),
        ]));
      }));
      panel.replaceChildren(
        el("p", { text: say(T.top, { token: shown(tok.decode([last.token])) }) }), table,
        el("p", { text: say(T.attention, { rows: ROWS, cols: COLS }) }), grid,
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
      speed.textContent = say(T.speed, { n, s: seconds.toFixed(2), rate: run.tokensPerSecond.toFixed(0) });
      drawPanel(run);
      const last = run.steps[n - 1];
      if (last) {
        run.top = window.CourseEngine.topTokens(last.logits, 10);
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

  window.CourseLive.each(".gpt-live", setup);
})();
