// eqsearch KaTeX worker: LaTeX -> Presentation MathML, one JSON object per line on stdin and stdout.
//
// Started by engine/latex/worker.py as `node worker.js OPTIONS_JSON`; it prints {"ready": true, "katex": VERSION} once,
// then answers requests in the order they arrive:
//   {"symbols": {"\\multimapinv": "\\mathrel{⟜}", ...}}    the symbol fallback table (engine/latex/symbols.py; no answer)
//   {"define": KEY, "macros": {"\\R": "\\mathbb{R}", ...}, "withheld": [NAME...]}
//                                                              stores a document's macros under KEY (no answer)
//   {"id": N, "latex": "...", "macros": KEY|null}             -> {"id": N, "mathml": "<math ...>", "unknown": [...]}
//                                                              or {"id": N, "error": {kind, message, position}}
// A macros table is copied for every render because KaTeX writes into it (\def, \gdef inside an equation).
// Unknown control sequences are retried as \text{name} (up to options.unknownMacroRetries); the names come back
// in "unknown" so that Python can mark the result approximate. Before that, an unknown name the symbol table holds is
// defined as its symbol (up to options.symbolRetries; the equation stays exact), unless the document defines it
// through TeX internals ("withheld": its own definition wins, even when no converter can expand it).
// KaTeX's mhchem extension is loaded: chemistry (\ce{H2O}, \pu{123 kJ/mol}) converts as it does in LaTeX.
"use strict";

const readline = require("readline");
const katex = require("katex");
require("katex/dist/contrib/mhchem.js"); // mhchem's \ce and \pu, shipped with the pinned KaTeX

const options = Object.assign({ maxExpand: 1000, unknownMacroRetries: 8, symbolRetries: 32, macroTables: 32 }, JSON.parse(process.argv[2] || "{}"));
const tables = new Map(); // KEY -> {macros, withheld}, oldest first; Python evicts in the same order
let symbols = {};

function katexOptions(macros) {
  return {
    output: "mathml",
    displayMode: true,
    throwOnError: true,
    strict: "ignore",
    trust: false,
    maxExpand: options.maxExpand,
    macros: macros,
  };
}

// Keep only <math>: drop KaTeX's <span> wrapper and the <semantics>/<annotation> pair holding the source.
function mathOnly(html) {
  const open = html.indexOf("<math");
  const close = html.lastIndexOf("</math>");
  if (open < 0 || close < 0) return html;
  let math = html.slice(open, close + 7);
  const headEnd = math.indexOf(">") + 1;
  const annotation = math.lastIndexOf('<annotation encoding="application/x-tex">');
  if (math.startsWith("<semantics>", headEnd) && annotation > 0 && math.endsWith("</semantics></math>")) {
    math = math.slice(0, headEnd) + math.slice(headEnd + 11, annotation) + "</math>";
  }
  return math;
}

function classify(error) {
  if (error instanceof RangeError && /call stack/i.test(error.message)) return "too-deep";
  if (!(error instanceof katex.ParseError)) return "internal-error";
  const raw = error.rawMessage || "";
  if (raw.startsWith("Undefined control sequence")) return "undefined-macro";
  if (raw.startsWith("No such environment")) return "undefined-environment";
  if (raw.startsWith("Too many expansions")) return "too-many-expansions";
  return "parse-error";
}

function textName(name) {
  const letters = name.slice(1).replace(/[^A-Za-z0-9@]/g, "");
  return "\\text{" + (letters || "?") + "}";
}

function render(request) {
  const table = request.macros == null ? { macros: {}, withheld: new Set() } : tables.get(request.macros);
  if (table === undefined) {
    return { id: request.id, error: { kind: "internal-error", message: "unknown macros table " + request.macros, position: null } };
  }
  const answer = attempt(request, table, true);
  // a symbol that breaks the formula (\mathrel in text mode, a class command after \left): as before, without them
  const final = answer.error && answer.symbols > 0 ? attempt(request, table, false) : answer;
  delete final.symbols;
  return final;
}

// Render, retrying unknown names: as the symbol table's entry (when useSymbols), else as their names in text.
function attempt(request, table, useSymbols) {
  const base = table.macros;
  const unknown = [];
  let extra = {};
  let symbolsUsed = 0;
  for (;;) {
    try {
      const mathml = mathOnly(katex.renderToString(request.latex, katexOptions(Object.assign({}, base, extra))));
      return { id: request.id, mathml: mathml, unknown: unknown };
    } catch (error) {
      const kind = classify(error);
      const match = kind === "undefined-macro" ? /^Undefined control sequence: (\\\S+)/.exec(error.rawMessage) : null;
      const name = match ? match[1] : null;
      if (
        useSymbols && name && !(name in extra) && !table.withheld.has(name) &&
        Object.prototype.hasOwnProperty.call(symbols, name) && symbolsUsed < options.symbolRetries
      ) {
        symbolsUsed++;
        extra = Object.assign({}, extra, { [name]: symbols[name] });
        continue;
      }
      if (name && unknown.length < options.unknownMacroRetries && !(name in extra)) {
        unknown.push(name);
        extra = Object.assign({}, extra, { [name]: textName(name) });
        continue;
      }
      return {
        id: request.id,
        error: {
          kind: kind,
          message: error instanceof katex.ParseError ? error.rawMessage : String(error && error.message),
          position: error && typeof error.position === "number" ? error.position : null,
        },
        unknown: unknown,
        symbols: symbolsUsed,
      };
    }
  }
}

function handle(line) {
  if (!line) return;
  const request = JSON.parse(line);
  if (request.symbols !== undefined) {
    symbols = request.symbols;
    return;
  }
  if (request.define !== undefined) {
    tables.delete(request.define);
    tables.set(request.define, { macros: request.macros, withheld: new Set(request.withheld || []) });
    while (tables.size > options.macroTables) tables.delete(tables.keys().next().value);
    return;
  }
  // written at once, never batched: the next line may hang, and Python times out the oldest unanswered request
  process.stdout.write(JSON.stringify(render(request)) + "\n");
}

readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false }).on("line", handle);
process.stdout.write(JSON.stringify({ ready: true, katex: katex.version }) + "\n");
