// eqsearch bitmap renderer: Presentation MathML -> MathJax SVG -> resvg pixels, one JSON object per line on stdin/stdout.
//
// Started by engine/model/render.py as `node render.js OPTIONS_JSON` (options: {"em": pixels per em}); it prints
// {"ready": true, "mathjax": VERSION, "resvg": VERSION} once, then answers each request in order:
//   {"id": N, "mathml": "<math ...>"} -> {"id": N, "width": W, "height": H, "ink": BASE64}   (W*H bytes, 0 = paper,
//                                                                                          255 = full ink)
//                                     or {"id": N, "error": {"kind": KIND, "message": TEXT}}
// MathJax's SVG output draws every glyph as a path (fontCache "none"), so resvg needs no fonts and the pixels do not
// depend on the fonts installed on the machine. Cropping to the model's input size is Python's job.
"use strict";

const readline = require("readline");
const { mathjax } = require("mathjax-full/js/mathjax.js");
const { MathML } = require("mathjax-full/js/input/mathml.js");
const { SVG } = require("mathjax-full/js/output/svg.js");
const { liteAdaptor } = require("mathjax-full/js/adaptors/liteAdaptor.js");
const { RegisterHTMLHandler } = require("mathjax-full/js/handlers/html.js");
const { Resvg } = require("@resvg/resvg-js");

const options = Object.assign({ em: 14 }, JSON.parse(process.argv[2] || "{}"));
const EX = options.em / 2; // MathJax's SVG output measures in ex, with 1 ex = 0.5 em

const adaptor = liteAdaptor();
RegisterHTMLHandler(adaptor);
let mathmlError = null;
const input = new MathML({
  // MathJax reports bad MathML by drawing an <merror>; a search index wants a failure it can count instead.
  parseError: (node) => {
    throw new Error("MathML parse error: " + adaptor.textContent(node).split("\n")[0]);
  },
  verify: { checkArity: false, checkAttributes: false, fullErrors: false },
});
input.mmlFilters.add(({ math }) => {
  mathmlError = math && math.root && findError(math.root);
});
const document = mathjax.document("", { InputJax: input, OutputJax: new SVG({ fontCache: "none" }) });

function findError(node) {
  if (node.isKind && node.isKind("merror")) return node;
  for (const child of node.childNodes || []) {
    const found = findError(child);
    if (found) return found;
  }
  return null;
}

function pixels(length) {
  const match = /^(-?[0-9.]+)ex$/.exec(length || "");
  return match ? Math.max(1, Math.ceil(parseFloat(match[1]) * EX)) : null;
}

function render(mathml) {
  mathmlError = null;
  const container = document.convert(mathml, { display: true, em: options.em, ex: EX, containerWidth: 100000 });
  if (mathmlError) {
    return { error: { kind: "mathml-error", message: adaptor.textContent(mathmlError) || "MathJax drew an <merror>" } };
  }
  const svg = adaptor.firstChild(container);
  const width = pixels(adaptor.getAttribute(svg, "width"));
  const height = pixels(adaptor.getAttribute(svg, "height"));
  if (width === null || height === null) {
    return { error: { kind: "render-error", message: "MathJax's SVG has no size in ex" } };
  }
  adaptor.setAttribute(svg, "width", String(width));
  adaptor.setAttribute(svg, "height", String(height));
  adaptor.removeAttribute(svg, "style");
  const image = new Resvg(adaptor.outerHTML(svg), {
    background: "white",
    font: { loadSystemFonts: false },
    shapeRendering: 2,
    textRendering: 1,
  }).render();
  const rgba = image.pixels;
  const ink = Buffer.alloc(image.width * image.height);
  for (let i = 0; i < ink.length; i++) ink[i] = 255 - rgba[4 * i];
  return { width: image.width, height: image.height, ink: ink.toString("base64") };
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    process.stdout.write(JSON.stringify({ id: null, error: { kind: "protocol-error", message: String(error) } }) + "\n");
    return;
  }
  let answer;
  try {
    answer = render(String(request.mathml || ""));
  } catch (error) {
    answer = { error: { kind: "mathml-error", message: String((error && error.message) || error).slice(0, 300) } };
  }
  process.stdout.write(JSON.stringify(Object.assign({ id: request.id }, answer)) + "\n");
});

process.stdout.write(
  JSON.stringify({
    ready: true,
    mathjax: mathjax.version,
    resvg: require("@resvg/resvg-js/package.json").version,
  }) + "\n",
);
