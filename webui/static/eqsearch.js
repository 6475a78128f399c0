// eqsearch front end: the live LaTeX preview, the balance read-out, and live ingest job and migration progress.
// No framework, nothing fetched from elsewhere. Server answers are inserted as text, or (MathML) parsed as XML
// and adopted only when the root is a MathML <math> element: no HTML element can come in that way.
"use strict";

const MATHML_NS = "http://www.w3.org/1998/Math/MathML";

function parseMathML(markup) {
  if (!markup) return null;
  const doc = new DOMParser().parseFromString(markup, "application/xml");
  const root = doc.documentElement;
  if (!root || root.namespaceURI !== MATHML_NS || root.localName !== "math") return null;
  if (doc.getElementsByTagName("parsererror").length) return null;
  for (const el of root.querySelectorAll("*")) {
    if (el.namespaceURI !== MATHML_NS) return null;
    for (const attr of Array.from(el.attributes)) {
      if (/^on/i.test(attr.name) || /href|src|style/i.test(attr.name)) el.removeAttribute(attr.name);
    }
  }
  return document.importNode(root, true);
}

function setupPreview() {
  const input = document.getElementById("latex");
  const preview = document.getElementById("latex-preview");
  const error = document.getElementById("latex-preview-error");
  if (!input || !preview) return;
  const url = input.dataset.renderUrl;
  let timer = null;
  let controller = null;

  async function render() {
    const latex = input.value;
    if (controller) controller.abort();
    if (!latex.trim()) {
      preview.replaceChildren();
      error.hidden = true;
      preview.dataset.state = "empty";
      return;
    }
    controller = new AbortController();
    preview.dataset.state = "loading";
    try {
      const response = await fetch(url + "?latex=" + encodeURIComponent(latex), {
        signal: controller.signal,
        headers: { Accept: "application/json" },
      });
      const body = await response.json();
      if (!response.ok) throw new Error((body.error && body.error.message) || "the preview is unavailable");
      const math = body.ok ? parseMathML(body.mathml) : null;
      if (math) {
        preview.replaceChildren(math);
        error.hidden = true;
        preview.dataset.state = "ok";
      } else {
        preview.replaceChildren();
        error.textContent = body.message || "This formula could not be read.";
        error.hidden = false;
        preview.dataset.state = "error";
      }
    } catch (e) {
      if (e.name === "AbortError") return;
      error.textContent = "The preview is unavailable right now; you can still search.";
      error.hidden = false;
      preview.dataset.state = "error";
    }
  }

  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(render, 250);
  });
  render();
}

function setupBalance() {
  const range = document.getElementById("balance");
  const output = document.getElementById("balance-value");
  if (!range || !output) return;
  const show = () => {
    output.textContent = Number(range.value).toFixed(1);
  };
  range.addEventListener("input", show);
  show();
}

function setupSearchForm() {
  // Leave empty fields out of the URL so that shared links stay short.
  const form = document.getElementById("search-form");
  if (!form) return;
  form.addEventListener("submit", () => {
    for (const el of form.querySelectorAll("input[name]")) {
      if (!el.value.trim() || (el.name === "w" && el.value === "0.5")) el.disabled = true;
    }
    setTimeout(() => form.querySelectorAll("input[name]").forEach((el) => (el.disabled = false)), 0);
  });
}

// The indices page while a migration copies: reload it every 2 s (progress from the lock record) until it ends.
function setupMigration() {
  const running = document.querySelector("#migration-in-progress[data-running]");
  if (running) setTimeout(() => window.location.reload(), 2000);
}

function setupJob() {
  const job = document.getElementById("job");
  if (!job) return;
  const url = job.dataset.pollUrl;
  const state = document.getElementById("job-state");
  const message = document.getElementById("job-message");
  const progress = document.getElementById("job-progress");
  const progressText = document.getElementById("job-progress-text");
  const errors = document.querySelector("#job-errors tbody");
  const resume = document.getElementById("resume-form");

  function cell(text, className) {
    const td = document.createElement("td");
    if (className) td.className = className;
    td.textContent = text;
    return td;
  }

  function update(record) {
    job.dataset.state = record.state;
    state.textContent = record.state;
    state.className = "state " + record.state;
    message.textContent = record.message || "";
    const done = (record.progress && record.progress.papers_done) || 0;
    const total = (record.progress && record.progress.papers_total) || 0;
    progress.max = total || 1;
    progress.value = done;
    progressText.textContent = done + " / " + total + " papers";
    const counts = document.getElementById("job-counts");
    for (const [key, value] of Object.entries(record.counts || {})) {
      let dd = counts.querySelector('[data-count="' + CSS.escape(key) + '"]');
      if (!dd) {
        const dt = document.createElement("dt");
        dt.textContent = key.replaceAll("_", " ");
        dd = document.createElement("dd");
        dd.dataset.count = key;
        counts.append(dt, dd);
      }
      dd.textContent = value;
    }
    const reasons = Object.entries(record.errors_by_reason || {}).sort((a, b) => b[1] - a[1]);
    if (reasons.length) {
      errors.replaceChildren(
        ...reasons.map(([reason, count]) => {
          const tr = document.createElement("tr");
          const code = document.createElement("code");
          code.textContent = reason;
          const first = cell("");
          first.append(code);
          tr.append(first, cell(count, "num"));
          return tr;
        }),
      );
    }
    resume.hidden = !record.resumable;
  }

  async function poll() {
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      if (response.ok) {
        const record = await response.json();
        update(record);
        if (record.state !== "queued" && record.state !== "running") return;
      }
    } catch (e) {
      message.textContent = "Lost contact with the server; retrying…";
    }
    setTimeout(poll, 1000);
  }

  if (job.dataset.state === "queued" || job.dataset.state === "running") poll();
}

document.addEventListener("DOMContentLoaded", () => {
  setupPreview();
  setupBalance();
  setupSearchForm();
  setupJob();
  setupMigration();
});
