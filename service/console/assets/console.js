// The reasoner console: a client of the public API and nothing else.
//
// Safety by construction: every user string (symbols, rule text, relation names, error
// details) reaches the page through text nodes (`node.append(string)`, `textContent`), never
// through HTML parsing, so a symbol such as `<img src=x onerror=...>` is shown, not run. The
// token lives in this tab's sessionStorage and travels in the Authorization header only.

const main = document.getElementById("main");
const TOKEN_KEY = "reasoner-token";
let cleanup = null;

// ---- DOM and API helpers -------------------------------------------------------------

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

function headers(extra = {}) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
}

async function api(path, { method = "GET", json, text, accept } = {}) {
  const extra = {};
  let body;
  if (json !== undefined) {
    extra["Content-Type"] = "application/json";
    body = JSON.stringify(json);
  } else if (text !== undefined) {
    extra["Content-Type"] = "text/plain";
    body = text;
  }
  if (accept) extra.Accept = accept;
  const response = await fetch(path, { method, body, headers: headers(extra) });
  const type = response.headers.get("content-type") || "";
  const payload = type.includes("json") ? await response.json() : await response.text();
  if (!response.ok) {
    throw new ApiError(response.status, typeof payload === "object" ? payload : { detail: payload });
  }
  return payload;
}

function problemText(error) {
  if (!(error instanceof ApiError)) return String(error);
  const p = error.problem;
  const place = p.line ? `${p.line}:${p.column ?? 1}: ` : "";
  return `${place}${p.code || error.status}: ${p.detail}`;
}

function errorBox(error) {
  return h("p", { class: "error", role: "alert" }, problemText(error));
}

function cell(value) {
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

function table(columns, rows, { onRow, numeric = [] } = {}) {
  return h(
    "table",
    {},
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", {}, c)))),
    h(
      "tbody",
      {},
      rows.map((row, i) =>
        h(
          "tr",
          onRow ? { class: "clickable", onclick: () => onRow(i) } : {},
          row.map((v, j) => h("td", numeric.includes(j) ? { class: "number" } : {}, cell(v))),
        ),
      ),
    ),
  );
}

function link(route, text) {
  return h("a", { href: `#/${route}` }, text);
}

// ---- Program -------------------------------------------------------------------------

const TOKENS = [
  ["comment", /\/\/[^\n]*|\/\*[\s\S]*?\*\//y],
  ["string", /"(?:[^"\\\n]|\\.)*"/y],
  ["directive", /\.[a-z_]+/y],
  ["number", /\b(?:0x[0-9a-fA-F]+|0b[01]+|\d+(?:\.\d+)?[uf]?)\b/y],
  ["keyword", /:-|\b(?:count|sum|min|max|mean|match|contains|nil)\b/y],
  ["relation", /[A-Za-z_?][A-Za-z0-9_?]*(?=\s*\()/y],
];

function highlighted(text) {
  const out = h("pre", { class: "code" });
  let plain = "";
  let i = 0;
  outer: while (i < text.length) {
    for (const [kind, pattern] of TOKENS) {
      pattern.lastIndex = i;
      const m = pattern.exec(text);
      if (m && m[0].length > 0) {
        if (plain) out.append(plain);
        plain = "";
        out.append(h("span", { class: `tok-${kind}` }, m[0]));
        i += m[0].length;
        continue outer;
      }
    }
    plain += text[i];
    i += 1;
  }
  if (plain) out.append(plain);
  return out;
}

function errorAt(text, error) {
  const box = errorBox(error);
  const line = error instanceof ApiError ? error.problem.line : null;
  if (line) {
    const source = text.split("\n")[line - 1];
    if (source !== undefined) {
      const caret = " ".repeat(Math.max(0, (error.problem.column || 1) - 1)) + "^";
      box.append("\n", h("code", {}, `${source}\n${caret}`));
    }
  }
  return box;
}

function strataGraph(relations) {
  // Columns: the inputs, then each stratum in evaluation order; an edge runs from a relation
  // read to the relation whose rules read it, dashed through a negation, dotted through an
  // aggregate (the edges stratification orders).
  const column = (r) => (r.stratum === null ? 0 : r.stratum + 1);
  const columns = new Map();
  for (const r of relations) {
    if (!columns.has(column(r))) columns.set(column(r), []);
    columns.get(column(r)).push(r);
  }
  const order = [...columns.keys()].sort((a, b) => a - b);
  const place = new Map();
  const [nodeWidth, nodeHeight, gapX, gapY, pad] = [130, 26, 60, 14, 16];
  // Edges that skip columns arc over the nodes between: room above the first row for them.
  const top = pad + Math.min(120, 14 * order.length);
  order.forEach((key, x) => {
    columns.get(key).forEach((r, y) => {
      place.set(r.name, { x: pad + x * (nodeWidth + gapX), y: top + y * (nodeHeight + gapY), column: x });
    });
  });
  const width = pad * 2 + order.length * (nodeWidth + gapX) - gapX;
  const tallest = Math.max(1, ...[...columns.values()].map((c) => c.length));
  const height = top + pad + tallest * (nodeHeight + gapY) - gapY;
  const svg = s("svg", { class: "graph", id: "strata-graph", width, height, viewBox: `0 0 ${width} ${height}` });
  const defs = s("defs");
  for (const kind of ["positive", "negative", "aggregate"]) {
    defs.append(
      s("marker", { id: `arrow-${kind}`, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" },
        s("path", { d: "M0 0 10 5 0 10z", class: `arrowhead ${kind}` })),
    );
  }
  svg.append(defs);
  for (const r of relations) {
    const to = place.get(r.name);
    for (const read of r.reads) {
      const from = place.get(read.relation);
      if (!from) continue;
      const attrs = { class: `edge ${read.kind}`, "data-from": read.relation, "data-to": r.name, "marker-end": `url(#arrow-${read.kind})` };
      if (read.relation === r.name) {
        const [x, y] = [to.x + nodeWidth / 2, to.y];
        attrs.d = `M${x - 12} ${y} C${x - 24} ${y - 22} ${x + 24} ${y - 22} ${x + 12} ${y}`;
      } else {
        const [x1, y1] = [from.x + nodeWidth, from.y + nodeHeight / 2];
        const [x2, y2] = [to.x, to.y + nodeHeight / 2];
        const skipped = to.column - from.column - 1;
        if (skipped > 0) {
          const lift = Math.min(top - 4, 14 * skipped + 10);
          const [ax, bx] = [from.x + nodeWidth / 2, to.x + nodeWidth / 2];
          attrs.d = `M${ax} ${from.y} C${ax} ${top - lift} ${bx} ${top - lift} ${bx} ${to.y}`;
        } else {
          const bend = Math.max(30, (x2 - x1) / 2);
          attrs.d = `M${x1} ${y1} C${x1 + bend} ${y1} ${x2 - bend} ${y2} ${x2} ${y2}`;
        }
      }
      svg.append(s("path", attrs, s("title", {}, `${r.name} reads ${read.relation} (${read.kind})`)));
    }
  }
  for (const r of relations) {
    const at = place.get(r.name);
    const node = s("g", { class: "graph-node", "data-relation": r.name, transform: `translate(${at.x} ${at.y})` });
    node.append(
      s("rect", { width: nodeWidth, height: nodeHeight, rx: 4 }),
      s("text", { x: 8, y: 17 }, r.name.length > 17 ? `${r.name.slice(0, 16)}…` : r.name),
      s("title", {}, `${r.name}: ${r.size} tuples, ${r.stratum === null ? "input" : `stratum ${r.stratum}`}`),
    );
    node.addEventListener("click", () => (location.hash = `#/relations/${encodeURIComponent(r.name)}`));
    svg.append(node);
  }
  return h("div", { class: "graph-frame" }, svg);
}

async function programPage() {
  const [program, rules, relations] = await Promise.all([
    api("/v1/program"),
    api("/v1/rules"),
    api("/v1/relations"),
  ]);
  const input = h("textarea", { id: "rule-text", placeholder: "tc(x, z) :- tc(x, y), edge(y, z)." });
  const status = h("div", { id: "rule-status" });
  async function add(event) {
    event.preventDefault();
    status.replaceChildren();
    try {
      const answer = await api("/v1/rules", { method: "POST", text: input.value });
      status.append(h("p", {}, `epoch ${answer.epoch}: rules ${answer.ids.join(", ")}`));
      input.value = "";
      render();
    } catch (error) {
      status.append(errorAt(input.value, error));
    }
  }
  async function remove(id) {
    try {
      await api(`/v1/rules/${encodeURIComponent(id)}`, { method: "DELETE" });
      render();
    } catch (error) {
      status.replaceChildren(errorBox(error));
    }
  }
  const strata = {};
  for (const r of relations.relations) {
    if (r.stratum !== null) (strata[r.stratum] ||= []).push(r.name);
  }
  return [
    h("h1", {}, `Program (epoch ${program.epoch})`),
    highlighted(program.program),
    h("h2", {}, "Rules"),
    h(
      "table",
      { id: "rules" },
      h("thead", {}, h("tr", {}, h("th", {}, "id"), h("th", {}, "rule"), h("th", {}))),
      h(
        "tbody",
        {},
        rules.rules.map((r) =>
          h(
            "tr",
            {},
            h("td", {}, r.id),
            h("td", {}, h("code", {}, r.text)),
            h("td", {}, h("button", { "data-rule": r.id, onclick: () => remove(r.id) }, "remove")),
          ),
        ),
      ),
    ),
    h("h2", {}, "Strata"),
    h(
      "p",
      { class: "legend" },
      h("span", {}, "inputs, then each stratum left to right; edges: "),
      ["positive", "negative", "aggregate"].map((k) => h("span", { class: `edge-key ${k}` }, k)),
    ),
    strataGraph(relations.relations),
    h(
      "ol",
      { start: "0" },
      Object.keys(strata)
        .sort((a, b) => a - b)
        .map((k) => h("li", {}, strata[k].join(", "))),
    ),
    h("h2", {}, "Add rules"),
    h("form", { id: "rule-form", onsubmit: add }, input, h("button", { type: "submit" }, "Add")),
    status,
  ];
}

// ---- Relations -----------------------------------------------------------------------

async function relationsPage() {
  const answer = await api("/v1/relations");
  const rows = answer.relations.map((r) => [
    r.name,
    r.arity,
    r.size,
    r.stratum === null ? "input" : r.stratum,
    [r.input && "input", r.output && "output", r.derived && "derived"].filter(Boolean).join(" "),
  ]);
  return [
    h("h1", {}, `Relations (epoch ${answer.epoch})`),
    table(["relation", "arity", "size", "stratum", "kind"], rows, {
      numeric: [1, 2],
      onRow: (i) => {
        location.hash = `#/relations/${encodeURIComponent(answer.relations[i].name)}`;
      },
    }),
  ];
}

async function download(path, name) {
  const response = await fetch(path, { headers: headers() });
  if (!response.ok) throw new ApiError(response.status, await response.json());
  const url = URL.createObjectURL(await response.blob());
  const a = h("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

async function relationPage(name) {
  const info = (await api("/v1/relations")).relations.find((r) => r.name === name);
  if (!info) return [h("h1", {}, name), h("p", { class: "error" }, "no such relation")];
  const filters = info.columns.map((c) => h("input", { "data-column": c.name, placeholder: c.name }));
  const out = h("div", { id: "relation-rows" });
  const pages = [];
  async function load(cursor) {
    const params = new URLSearchParams({ limit: "100" });
    filters.forEach((f) => f.value !== "" && params.set(f.dataset.column, f.value));
    if (cursor) params.set("cursor", cursor);
    out.replaceChildren();
    try {
      const page = await api(`/v1/relations/${encodeURIComponent(name)}?${params}`);
      out.append(
        h("p", { class: "muted" }, `epoch ${page.epoch}, ${page.rows.length} rows on this page`),
        table(page.columns, page.rows),
      );
      if (page.next) {
        out.append(h("button", { id: "next-page", onclick: () => load(page.next) }, "Next page"));
      }
    } catch (error) {
      out.append(errorBox(error));
    }
    pages.push(cursor);
  }
  const formats = ["csv", "ndjson", "arrow", "parquet"].map((format) =>
    h(
      "button",
      {
        onclick: () =>
          download(
            `/v1/relations/${encodeURIComponent(name)}/export?format=${format}`,
            `${name}.${format}`,
          ).catch((error) => out.prepend(errorBox(error))),
      },
      format,
    ),
  );
  await load(null);
  return [
    h("h1", {}, `${name} (${info.size} tuples)`),
    h(
      "form",
      { class: "controls", onsubmit: (e) => (e.preventDefault(), load(null)) },
      filters,
      h("button", { type: "submit" }, "Filter"),
    ),
    h("div", { class: "controls" }, "Export:", formats),
    out,
  ];
}

// ---- Query ---------------------------------------------------------------------------

async function queryPage() {
  const input = h("textarea", { id: "query-text", placeholder: 'tc("a", x), !edge("a", x)' });
  const out = h("div", { id: "query-answer" });
  async function run(cursor) {
    out.replaceChildren();
    try {
      const body = { query: input.value, limit: 100 };
      if (cursor) body.cursor = cursor;
      const answer = await api("/v1/query", { method: "POST", json: body });
      out.append(
        h(
          "p",
          { class: "muted" },
          `epoch ${answer.epoch}: ${answer.rows.length} answers on this page, ` +
            `${(answer.seconds * 1000).toFixed(1)} ms${answer.kept ? " (kept)" : ""}`,
        ),
        table(answer.columns, answer.rows),
      );
      if (answer.next) out.append(h("button", { onclick: () => run(answer.next) }, "Next page"));
    } catch (error) {
      out.append(errorAt(input.value, error));
    }
  }
  return [
    h("h1", {}, "Query"),
    h(
      "form",
      { id: "query-form", onsubmit: (e) => (e.preventDefault(), run(null)) },
      input,
      h("button", { type: "submit" }, "Run"),
    ),
    out,
  ];
}

// ---- Explain -------------------------------------------------------------------------

function proofTree(nodes) {
  function item(index, seen) {
    const node = nodes[index];
    const label = h(
      "span",
      { class: "node", "data-relation": node.relation },
      `${node.relation}(${node.row.map(cell).join(", ")})`,
      h("span", { class: "rule" }, node.rule === null ? "fact" : node.rule),
      h("span", { class: "muted" }, `  iteration ${node.iteration}, count ${node.count}`),
      node.absent.length ? h("span", { class: "muted" }, `; absent: ${node.absent.join(", ")}`) : null,
    );
    const below = seen.has(index)
      ? []
      : node.premises.map((p) => item(p, new Set([...seen, index])));
    return h("li", {}, label, below.length ? h("ul", {}, below) : null);
  }
  return h("div", { class: "tree", id: "proof" }, h("ul", {}, item(0, new Set())));
}

function marked(rule, literal) {
  const at = rule.indexOf(literal);
  if (at < 0) return h("code", {}, rule);
  return h(
    "code",
    {},
    rule.slice(0, at),
    h("span", { class: "failing" }, literal),
    rule.slice(at + literal.length),
  );
}

async function explainPage() {
  const relations = (await api("/v1/relations")).relations;
  const select = h(
    "select",
    { id: "explain-relation" },
    relations.map((r) => h("option", { value: r.name }, r.name)),
  );
  const fields = h("span", { class: "controls" });
  const out = h("div", { id: "explain-answer" });
  function columns() {
    const info = relations.find((r) => r.name === select.value);
    fields.replaceChildren(
      ...(info ? info.columns : []).map((c) =>
        h("input", { "data-column": c.name, placeholder: `${c.name}: ${c.type}` }),
      ),
    );
  }
  select.addEventListener("change", columns);
  columns();
  async function explain(event) {
    event.preventDefault();
    out.replaceChildren();
    const params = new URLSearchParams();
    for (const f of fields.querySelectorAll("input")) params.set(f.dataset.column, f.value);
    try {
      const answer = await api(`/v1/explain/${encodeURIComponent(select.value)}?${params}`);
      const tuple = `${answer.relation}(${answer.row.map(cell).join(", ")})`;
      if (answer.holds) {
        out.append(h("p", {}, `${tuple} holds (epoch ${answer.epoch}):`), proofTree(answer.proof.nodes));
      } else {
        out.append(
          h("p", {}, `${tuple} does not hold (epoch ${answer.epoch}). Each rule's failing literal:`),
          h(
            "ul",
            { id: "why-not" },
            answer.why_not.map((f) => h("li", {}, marked(f.rule, f.literal), h("div", { class: "muted" }, f.reason))),
          ),
        );
      }
    } catch (error) {
      out.append(errorBox(error));
    }
  }
  return [
    h("h1", {}, "Explain a tuple"),
    h("form", { id: "explain-form", class: "controls", onsubmit: explain }, select, fields, h("button", { type: "submit" }, "Explain")),
    out,
  ];
}

// ---- Epochs --------------------------------------------------------------------------

function strategyClass(epoch) {
  if (epoch.fallback_reason) return "fallback";
  return epoch.strategy || "unchanged";
}

function epochPlot(epochs) {
  const shown = epochs.filter((e) => e.seconds !== null).slice().reverse();
  const width = 900;
  const height = 220;
  const pad = 40;
  const most = Math.max(1e-6, ...shown.map((e) => e.seconds));
  const step = (width - 2 * pad) / Math.max(1, shown.length);
  const svg = s("svg", { class: "plot", id: "epoch-plot", viewBox: `0 0 ${width} ${height}`, width, height });
  svg.append(
    s("line", { class: "axis", x1: pad, y1: height - pad, x2: width - pad, y2: height - pad }),
    s("line", { class: "axis", x1: pad, y1: pad / 2, x2: pad, y2: height - pad }),
    s("text", { x: 4, y: pad / 2 + 4, "font-size": 11 }, `${most.toFixed(3)} s`),
    s("text", { x: width - pad - 40, y: height - 8, "font-size": 11 }, "epoch"),
  );
  shown.forEach((e, i) => {
    const barHeight = Math.max(1, ((height - 1.5 * pad) * e.seconds) / most);
    const bar = s("rect", {
      class: `bar ${strategyClass(e)}`,
      "data-epoch": e.number,
      x: pad + i * step + 1,
      y: height - pad - barHeight,
      width: Math.max(1, step - 2),
      height: barHeight,
    });
    bar.append(
      s("title", {}, `epoch ${e.number}: ${e.strategy}${e.fallback_reason ? ` (${e.fallback_reason})` : ""}, ${e.seconds.toFixed(3)} s`),
    );
    bar.addEventListener("click", () => (location.hash = `#/epochs/${e.number}`));
    svg.append(bar);
    if (shown.length <= 40 || i % Math.ceil(shown.length / 40) === 0) {
      svg.append(s("text", { x: pad + i * step + step / 2 - 4, y: height - pad + 14, "font-size": 10 }, e.number));
    }
  });
  return svg;
}

async function epochsPage() {
  const answer = await api("/v1/epochs?limit=200");
  const epochs = answer.epochs;
  const legend = h(
    "p",
    { class: "legend" },
    ["update", "bootstrap", "fallback", "unchanged"].map((k) => h("span", {}, h("span", { class: `swatch ${k}` }), k)),
  );
  // Live: a new epoch draws the page again (polled: the epochs' list is small and cheap).
  const newest = epochs.length ? epochs[0].number : -1;
  const timer = setInterval(async () => {
    try {
      const latest = await api("/v1/epochs?limit=1");
      if (latest.epochs.length && latest.epochs[0].number !== newest) render();
    } catch {
      // the next tick asks again
    }
  }, 2000);
  cleanup = () => clearInterval(timer);
  const rows = epochs.map((e) => [
    e.number,
    e.status,
    e.strategy ?? "",
    e.fallback_reason ?? "",
    e.seconds === null ? "" : e.seconds.toFixed(3),
    `+${e.facts_inserted} -${e.facts_retracted}`,
    e.inserted === null ? "" : `+${e.inserted} -${e.retracted}`,
  ]);
  return [
    h("h1", {}, "Epochs"),
    h("p", { class: "muted" }, "Seconds per epoch by strategy, as the elastic paper's Figure 6 (newest right)."),
    legend,
    epochPlot(epochs),
    table(["epoch", "status", "strategy", "fallback", "seconds", "facts", "derived"], rows, {
      numeric: [0, 4],
      onRow: (i) => (location.hash = `#/epochs/${epochs[i].number}`),
    }),
  ];
}

// A stratum's strategy, with why it was bootstrapped alone and where its bulk evaluation began.
function stratumStrategy(st) {
  const why = [st.fallback_reason, st.bulk_from ? `in bulk from iteration ${st.bulk_from}` : null].filter(Boolean);
  return why.length ? `${st.strategy} (${why.join(", ")})` : st.strategy;
}
async function epochPage(number) {
  const e = await api(`/v1/epochs/${encodeURIComponent(number)}`);
  const fields = Object.entries(e).filter(([, v]) => v === null || typeof v !== "object");
  const changes = await api(`/v1/changes?since=${Number(number) - 1}&limit=200`).catch(() => null);
  const ofEpoch = changes ? changes.changes.filter((c) => c.epoch === Number(number)) : [];
  return [
    h("h1", {}, `Epoch ${e.number}`),
    table(["field", "value"], fields),
    h("h2", {}, "Strata"),
    table(
      ["stratum", "relations", "strategy", "seconds"],
      (e.strata || []).map((st) => [st.index, st.relations.join(", "), stratumStrategy(st), st.seconds.toFixed(4)]),
    ),
    h("h2", {}, "Changes (first page)"),
    table(
      ["relation", "retracted", "inserted"],
      ofEpoch.map((c) => [c.relation, c.retracted.map((r) => r.map(cell).join(", ")).join(" | "), c.inserted.map((r) => r.map(cell).join(", ")).join(" | ")]),
    ),
  ];
}

// ---- Live ----------------------------------------------------------------------------

async function livePage() {
  const controller = new AbortController();
  const filter = h("input", { id: "live-relations", placeholder: "relations (comma-separated, empty: all)" });
  const pause = h("button", { id: "live-pause", type: "button" }, "Pause");
  const state = h("span", { class: "muted", id: "live-state" }, "connecting");
  const feed = h("div", { class: "feed", id: "live-feed" });
  let paused = false;
  const held = [];
  let stream = null;
  function show(event) {
    for (const group of event.changes) {
      feed.prepend(
        h(
          "div",
          { class: "change", "data-relation": group.relation },
          `epoch ${event.epoch} ${group.relation}: `,
          group.inserted.map((r) => `+(${r.map(cell).join(", ")}) `),
          group.retracted.map((r) => `-(${r.map(cell).join(", ")}) `),
        ),
      );
    }
  }
  pause.addEventListener("click", () => {
    paused = !paused;
    pause.textContent = paused ? "Resume" : "Pause";
    if (!paused) held.splice(0).forEach(show);
  });
  async function follow() {
    if (stream) stream.abort();
    stream = new AbortController();
    controller.signal.addEventListener("abort", () => stream.abort());
    const ready = await api("/ready");
    const params = new URLSearchParams({ since: String(ready.epoch) });
    if (filter.value.trim()) params.set("relations", filter.value.trim());
    const response = await fetch(`/v1/changes?${params}`, {
      headers: headers({ Accept: "text/event-stream" }),
      signal: stream.signal,
    });
    if (!response.ok) throw new ApiError(response.status, await response.json());
    state.textContent = `following from epoch ${ready.epoch}`;
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const kind = (block.match(/^event: (.*)$/m) || [])[1];
        const data = (block.match(/^data: (.*)$/m) || [])[1];
        if (kind === "epoch" && data) {
          const event = JSON.parse(data);
          if (paused) held.push(event);
          else show(event);
        }
      }
    }
    state.textContent = "the feed ended";
  }
  const start = () =>
    follow().catch((error) => {
      if (error.name !== "AbortError") state.replaceChildren(errorBox(error));
    });
  start();
  cleanup = () => controller.abort();
  return [
    h("h1", {}, "Live changes"),
    h("form", { class: "controls", onsubmit: (e) => (e.preventDefault(), start()) }, filter, h("button", { type: "submit" }, "Follow"), pause, state),
    feed,
  ];
}

// ---- Health --------------------------------------------------------------------------

async function healthPage() {
  let ready;
  try {
    ready = await api("/ready");
  } catch (error) {
    ready = error instanceof ApiError ? error.problem : { ready: false, detail: String(error) };
  }
  const metrics = await api("/metrics").catch((error) => `metrics: ${problemText(error)}`);
  const lines = String(metrics)
    .split("\n")
    .filter((line) => line && !line.startsWith("#"));
  const gauge = (name) => {
    const line = lines.find((l) => l.startsWith(`${name} `));
    return line ? Number(line.split(" ")[1]) : null;
  };
  const mb = (bytes) => (bytes === null ? "unknown" : `${(bytes / 2 ** 20).toFixed(0)} MB`);
  const [resident, cap] = [gauge("reasoner_resident_bytes"), gauge("reasoner_memory_cap_bytes")];
  const [baseline, allowance] = [
    gauge("reasoner_memory_baseline_bytes"),
    gauge("reasoner_evaluation_allowance_bytes"),
  ];
  const used = resident !== null && cap ? Math.min(1, resident / cap) : null;
  return [
    h("h1", {}, "Health"),
    table(
      ["field", "value"],
      Object.entries(ready).filter(([, v]) => v !== null && typeof v !== "object"),
    ),
    h("h2", {}, "Quarantined epochs"),
    h(
      "p",
      { id: "quarantined" },
      (ready.quarantined || []).length
        ? `epochs whose program the last start-up could not evaluate: ${ready.quarantined.join(", ")}`
        : "none",
    ),
    h("h2", {}, "Memory"),
    h(
      "p",
      { id: "memory" },
      `resident ${mb(resident)} of ${mb(cap)} (writes are refused past it)` +
        (used === null ? "" : `, ${(100 * used).toFixed(0)} % used`) +
        `; the committed state's baseline ${mb(baseline)}, each evaluation may add ${mb(allowance)}`,
    ),
    used === null ? null : h("meter", { min: "0", max: "1", value: String(used), high: "0.8" }),
    h("h2", {}, "Metrics"),
    h("pre", { class: "code", id: "metrics" }, lines.join("\n")),
  ];
}

// ---- Routing -------------------------------------------------------------------------

const ROUTES = [
  [/^program$/, programPage],
  [/^relations$/, relationsPage],
  [/^relations\/(.+)$/, (name) => relationPage(decodeURIComponent(name))],
  [/^query$/, queryPage],
  [/^explain$/, explainPage],
  [/^epochs$/, epochsPage],
  [/^epochs\/(\d+)$/, epochPage],
  [/^live$/, livePage],
  [/^health$/, healthPage],
];

async function render() {
  if (cleanup) cleanup();
  cleanup = null;
  const route = location.hash.replace(/^#\/?/, "") || "program";
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", route.startsWith(a.getAttribute("href").slice(2)));
  }
  for (const [pattern, page] of ROUTES) {
    const m = route.match(pattern);
    if (!m) continue;
    try {
      main.replaceChildren(...(await page(...m.slice(1))));
    } catch (error) {
      const hint =
        error instanceof ApiError && error.status === 401
          ? h("p", { id: "token-hint" }, "This server wants a bearer token: enter the read token " +
              "(to look) or the write token (to change things) above.")
          : null;
      main.replaceChildren(h("h1", {}, "Could not load this page"), errorBox(error), hint);
      if (hint) tokenInput.focus();
    }
    main.dataset.page = route;
    return;
  }
  main.replaceChildren(h("h1", {}, "Not found"), link("program", "Program"));
}

const tokenInput = document.getElementById("token");
tokenInput.value = sessionStorage.getItem(TOKEN_KEY) || "";
document.getElementById("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  if (tokenInput.value) sessionStorage.setItem(TOKEN_KEY, tokenInput.value);
  else sessionStorage.removeItem(TOKEN_KEY);
  render();
});
window.addEventListener("hashchange", render);
render();
