/* chronokg explorer: every read is a catalog query, answered by the server (live) or from the
   embedded JSON (static export). Vanilla JS, no build step, no network beyond the serving origin. */
"use strict";
(function () {
  const CFG = JSON.parse(document.getElementById("chronokg-config").textContent);
  const FIRST = CFG.data || {}; // what the first view needs; the rest is parsed when first asked for
  let REST = null;
  const DATA = new Proxy({}, { get: (_, k) => k in FIRST ? FIRST[k]
    : (REST || (REST = rest()))[k] });
  function rest() {
    const el = document.getElementById("chronokg-data");
    if (!el || document.readyState === "loading") throw new Error("the page is still loading its data: try again");
    return JSON.parse(el.textContent);
  }
  const LIMIT = 100; // rows a list draws; the count says how many matched
  const TOKEN = new URLSearchParams(location.hash.slice(1)).get("token");
  const $ = (id) => document.getElementById(id);
  const esc = (v) => v === null || v === undefined ? "" : String(v).replace(/[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  window.ckPerf = { firstView: null, keystrokes: [] };
  // an element whose text is set as text: stored strings never reach the page as markup
  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v; else if (k === "dataset") Object.assign(e.dataset, v); else e.setAttribute(k, v);
    }
    for (const kid of kids.flat()) if (kid !== null && kid !== undefined && kid !== false) e.append(kid instanceof Node ? kid : String(kid));
    return e;
  }
  // TempoMed's organisation categories each have a colour; any other category gets the neutral one
  const catClass = (c) => c ? "cat cat-" + String(c).toLowerCase().replace(/[^a-z]+/g, "-") : "";
  // the page's policy allows no inline handler or style attribute: forms never submit, positions are set here
  for (const form of document.querySelectorAll("form")) form.addEventListener("submit", (e) => e.preventDefault());
  function place(root) {
    for (const el of root.querySelectorAll("[data-left]")) {
      el.style.left = el.dataset.left;
      if (el.dataset.width) el.style.width = el.dataset.width;
    }
  }

  // --- reads -------------------------------------------------------------------------------------
  const validAt = (f, d) => (f.valid_from === null || f.valid_from <= d) && (f.valid_to === null || f.valid_to > d);
  const knownAt = (f, k) => k ? (f.known_from === null || f.known_from <= k) && (f.known_to === null || f.known_to > k)
    : f.known_to === null;
  const cmp = (a, b) => a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1;

  function staticQuery(name, p) {
    const need = (key) => {
      const per = DATA.per || {};
      if (!(key in per)) throw new Error("not in this export: " + key + " (export a slice that includes it)");
      return per[key];
    };
    switch (name) {
      case "trajectory-list": case "subject-kinds": case "quality": case "run-summary": case "run-report": case "run-cutoffs":
        return DATA[name] || [];
      case "trajectory-versions": case "trajectory-pairs": return need(name + "|" + p.guideline);
      case "trajectory-questions": // held once per change pair; a trajectory's are those of its pairs
        return need("trajectory-pairs|" + p.guideline).map(questionPair).sort()
          .filter((x, i, xs) => x !== xs[i - 1]).flatMap((pair) => DATA.questions[pair] || []);
      case "question-answers": return need(name + "|" + p.question);
      case "known-grid": { // held compact (a cell its fact ids, a fact read from its subject's timeline)
        const g = need(name + "|" + (p.trajectory ? "trajectory|" : "subject|") + p.subject), facts = {};
        for (const [id, subj, body] of g.facts) facts[id] = body || need("timeline|" + subj).find((f) => f.id === id);
        return g.cells.flatMap(([known, date, ids]) => {
          const cell = { known, date, releases: g.known[known][0], release_captions: g.known[known][1] };
          return ids.length ? ids.map((id) => ({ ...facts[id], ...cell })) : [{ ...cell, id: null }];
        });
      }
      case "verify": return need("verify|" + p.question);
      case "subject-list": {
        const text = (p.text || "").toLowerCase();
        return (DATA.subjects || []).filter((s) => (!p.kind || s.kind === p.kind) &&
          (!text || s.subject.toLowerCase().includes(text) || (s.caption || "").toLowerCase().includes(text)))
          .slice(0, p.limit || 200);
      }
      case "timeline": // the export holds every version (include_retracted): the known-time rule picks them
        return need("timeline|" + p.subject).filter((f) => p.include_retracted && !p.known_at || knownAt(f, p.known_at || null));
      case "as-of": // the catalog's as-of: valid on the date, known at known_at (default: not retracted)
        return need("timeline|" + p.subject).filter((f) => validAt(f, p.date) && knownAt(f, p.known_at || null))
          .sort((a, b) => cmp(a.predicate, b.predicate) || cmp(a.valid_from, b.valid_from) || cmp(a.id, b.id));
      default: throw new Error("no query " + name + " in a static export");
    }
  }

  async function q(name, params) {
    const p = {};
    for (const [k, v] of Object.entries(params || {})) if (v !== null && v !== undefined && v !== "") p[k] = v;
    if (CFG.mode === "static") return staticQuery(name, p);
    const resp = await fetch("explore/api/" + encodeURIComponent(name) + "?" + new URLSearchParams(p),
      { headers: TOKEN ? { Authorization: "Bearer " + TOKEN } : {} });
    const body = await resp.json();
    if (!resp.ok) throw new Error(body.error ? body.error.message : resp.statusText);
    if (body.truncated) status("showing the first " + body.rows.length + " of " + body.total_rows + " rows (" + name + ")");
    return body.rows;
  }
  function status(text, bad) { const s = $("status"); s.textContent = text; s.className = bad ? "error" : ""; }
  function fail(where, err) { status(where + ": " + err.message, true); }

  // --- tabs --------------------------------------------------------------------------------------
  const tabs = ["trajectories", "timelines", "runs", "quality"];
  const loaded = {};
  function show(name) {
    for (const t of tabs) {
      const on = t === name;
      $("tab-" + t).setAttribute("aria-selected", String(on));
      $("tab-" + t).tabIndex = on ? 0 : -1;
      $("view-" + t).hidden = !on;
    }
    if (!loaded[name]) loaded[name] = ({ timelines: initTimelines, runs: initRuns, quality: initQuality })[name]?.() || true;
    return loaded[name];
  }
  tabs.forEach((t, i) => {
    const b = $("tab-" + t);
    b.addEventListener("click", () => show(t));
    b.addEventListener("keydown", (e) => {
      const d = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
      if (d) { const n = tabs[(i + d + tabs.length) % tabs.length]; show(n); $("tab-" + n).focus(); }
    });
  });

  // --- trajectories ------------------------------------------------------------------------------
  let all = [];
  let sorted = [], sortedBy = null;
  let current = null;
  const sorts = {
    "year-desc": (a, b) => (b.year || 0) - (a.year || 0) || cmp(a.current_pmid, b.current_pmid),
    "year-asc": (a, b) => (a.year || 0) - (b.year || 0) || cmp(a.current_pmid, b.current_pmid),
    "depth-desc": (a, b) => b.depth - a.depth || cmp(a.current_pmid, b.current_pmid),
    "pairs-desc": (a, b) => b.pairs - a.pairs || cmp(a.current_pmid, b.current_pmid),
    "pmid-asc": (a, b) => cmp(a.current_pmid, b.current_pmid),
  };
  function options(select, values) {
    select.insertAdjacentHTML("beforeend", values.map((v) => `<option value="${esc(v)}">${esc(v)}</option>`).join(""));
  }
  async function initTrajectories() {
    all = await q("trajectory-list");
    for (const r of all) {
      r.hay = [r.current_pmid, r.topic, r.caption, ...r.organizations, ...r.versions].join("\n").toLowerCase();
      r.topicHay = [r.topic, r.caption].join("\n").toLowerCase();
    }
    const uniq = (xs) => [...new Set(xs)];
    options($("f-year"), uniq(all.map((r) => r.year).filter((y) => y !== null)).sort((a, b) => b - a));
    options($("f-depth"), uniq(all.map((r) => r.depth)).sort((a, b) => a - b));
    options($("f-cat"), uniq(all.map((r) => r.category).filter((c) => c !== null && c !== undefined)).sort());
    options($("f-org"), uniq(all.flatMap((r) => r.organizations)).sort());
    // a column nothing fills (categories come only from trajectory files, not the MCQ file) is not drawn
    const hasCat = all.some((r) => r.category), hasOrg = all.some((r) => r.organizations.length);
    $("traj-table").classList.toggle("no-cat", !hasCat);
    $("traj-table").classList.toggle("no-org", !hasOrg);
    $("traj-table").classList.toggle("no-topic", !all.some((r) => r.topic || r.caption));
    $("f-cat").closest(".field").hidden = !hasCat;
    $("f-org").closest(".field").hidden = !hasOrg;
    initMetrics(hasCat ? uniq(all.map((r) => r.category).filter(Boolean)).sort() : []);
    render();
    window.ckPerf.firstView = performance.now();
  }
  let last = { filters: null, text: null, rows: [] }; // the previous answer: typing on narrows it
  function matches() {
    const text = $("search").value.toLowerCase();
    const words = text.split(/\s+/).filter(Boolean);
    const year = $("f-year").value, depth = $("f-depth").value, org = $("f-org").value, cat = $("f-cat").value;
    const topic = $("f-topic").value.toLowerCase().trim();
    const key = $("f-sort").value;
    if (sortedBy !== key) { sorted = all.slice().sort(sorts[key]); sortedBy = key; } // once per sort, not per key
    const filters = [year, depth, org, cat, topic, key].join("\u0001");
    // A search that only grew (a key typed at the end) matches a subset of what it matched before.
    const from = last.filters === filters && last.text !== null && text.startsWith(last.text) ? last.rows : sorted;
    const rows = from.filter((r) => (!year || String(r.year) === year) && (!depth || String(r.depth) === depth) &&
      (!org || r.organizations.includes(org)) && (!cat || r.category === cat) && (!topic || r.topicHay.includes(topic)) &&
      words.every((w) => r.hay.includes(w)));
    last = { filters, text, rows };
    return rows;
  }
  const metric = {};
  function initMetrics(categories) {
    const card = (key, one, many) => {
      const label = el("span", {}, many);
      metric[key] = { set: (n) => { number.textContent = n; label.textContent = n === 1 ? one : many; } };
      const number = el("strong", {}, "0");
      return el("div", { class: "metric", dataset: { metric: key } }, number, label);
    };
    const box = $("metrics");
    box.replaceChildren(card("n", "trajectory", "trajectories"),
      card("versions", "distinct guideline version", "distinct guideline versions"),
      card("pairs", "change pair", "change pairs"), card("orgs", "organisation", "organisations"));
    if (categories.length) box.append(el("div", { class: "metric cats" }, categories.map((c) =>
      el("span", { class: catClass(c) }, (metric["cat:" + c] = el("strong", {}, "0")), " " + c))));
  }
  function metrics(rows) {
    let pairs = 0;
    const versions = new Set(), orgs = new Set(), cats = {}; // a version in two trajectories is one version
    for (const r of rows) {
      for (const v of r.versions) versions.add(v);
      pairs += r.pairs;
      for (const o of r.organizations) orgs.add(o);
      if (r.category) cats[r.category] = (cats[r.category] || 0) + 1;
    }
    metric.n.set(rows.length); metric.versions.set(versions.size); metric.pairs.set(pairs); metric.orgs.set(orgs.size);
    for (const k of Object.keys(metric)) if (k.startsWith("cat:")) metric[k].textContent = cats[k.slice(4)] || 0;
  }
  const pool = []; // the drawn rows, reused: a keystroke rewrites their text instead of parsing new HTML
  function render() {
    const rows = matches(), tbody = $("traj-table").tBodies[0], n = Math.min(rows.length, LIMIT);
    $("count").textContent = `${rows.length} of ${all.length} trajectories` + (rows.length > LIMIT ? ` (first ${LIMIT} shown)` : "");
    metrics(rows);
    for (let i = 0; i < n; i++) {
      const r = rows[i];
      let tr = pool[i];
      if (!tr) {
        tr = pool[i] = document.createElement("tr");
        tr.tabIndex = 0;
        for (let c = 0; c < 7; c++) tr.insertCell();
      }
      if (tr.dataset.pmid !== r.current_pmid) {
        tr.dataset.pmid = r.current_pmid;
        const cells = [r.current_pmid, r.year, r.depth, r.pairs, r.category, r.organizations.join("; "), r.topic || r.caption];
        for (let c = 0; c < 7; c++) tr.cells[c].textContent = cells[c] === null || cells[c] === undefined ? "" : String(cells[c]);
        tr.cells[4].className = catClass(r.category);
      }
      tr.setAttribute("aria-selected", String(r.current_pmid === current));
      if (tr.parentNode !== tbody || tbody.rows[i] !== tr) tbody.insertBefore(tr, tbody.rows[i] || null);
    }
    while (tbody.rows.length > n) tbody.deleteRow(n);
  }
  function timed(e) {
    const t0 = e.timeStamp;
    render();
    requestAnimationFrame(() => window.ckPerf.keystrokes.push(performance.now() - t0));
  }
  ["search", "f-topic"].forEach((id) => $(id).addEventListener("input", timed));
  ["f-year", "f-depth", "f-cat", "f-org", "f-sort"].forEach((id) => $(id).addEventListener("change", render));
  $("search").addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown") { e.preventDefault(); $("traj-table").tBodies[0].rows[0]?.focus(); }
  });
  const body = $("traj-table").tBodies[0];
  body.addEventListener("click", (e) => { const tr = e.target.closest("tr"); if (tr) openTrajectory(tr.dataset.pmid); });
  body.addEventListener("keydown", (e) => {
    const tr = e.target.closest("tr");
    if (!tr) return;
    if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openTrajectory(tr.dataset.pmid); }
    else if (e.key === "ArrowDown") { e.preventDefault(); tr.nextElementSibling?.focus(); }
    else if (e.key === "ArrowUp") { e.preventDefault(); (tr.previousElementSibling || $("search")).focus(); }
  });

  async function openTrajectory(pmid) {
    current = pmid;
    for (const tr of body.rows) tr.setAttribute("aria-selected", String(tr.dataset.pmid === pmid));
    const aside = $("detail");
    aside.innerHTML = `<p class="muted">loading ${esc(pmid)}…</p>`;
    try {
      // the trajectory's own versions and pairs: what its row in the list counts, never another trajectory's
      const [versions, pairs, questions] = await Promise.all([q("trajectory-versions", { guideline: pmid }),
        q("trajectory-pairs", { guideline: pmid }), q("trajectory-questions", { guideline: pmid })]);
      if (current !== pmid) return;
      const recs = (v) => pairs.flatMap((c) => [
        c.current_pmid === v ? [c.decision_id, c.current_recommendation] : null,
        c.prior_pmid === v ? [c.decision_id, c.prior_recommendation] : null]).filter(Boolean);
      const byPair = {};
      for (const x of questions) (byPair[x.pair] = byPair[x.pair] || []).push(x);
      const listed = all.find((r) => r.current_pmid === pmid);
      const currents = new Set(all.map((r) => r.current_pmid));
      const branched = versions.filter((v) => v.elsewhere.length).length;
      const opener = (p) => currents.has(p) ? `<a href="#" data-open="${esc(p)}">${esc(p)}</a>` : esc(p);
      aside.innerHTML = `<h2>Trajectory of ${esc(pmid)}</h2>` +
        `<p>${listed && listed.category ? `<span class="${catClass(listed.category)}">${esc(listed.category)}</span> ` : ""}` +
        `<button type="button" id="d-grid" data-guideline="${esc(pmid)}">Valid × known time</button></p>` +
        `<h3>${plural(versions.length, "version")}: the current one and ${versions.length - 1} prior (depth), oldest at the top</h3>` +
        `<p class="muted">A line joins each version to every one it supersedes (the older above), as the trajectory's records say.` +
        (branched ? ` ${branched} of these versions ${branched === 1 ? "is" : "are"} also superseded in another ` +
          `trajectory: the data branches there.` : "") + `</p>` +
        `<div class="branch" id="chain"><svg class="links" aria-hidden="true"></svg>` +
        generations(versions).map((gen, i) => `<ol class="gen" data-gen="${i}">` + gen.map((v) =>
          `<li data-pmid="${esc(v.pmid)}" data-supersedes="${esc(v.supersedes.join(" "))}" class="${v.current ? "current" : ""}"><b>${esc(v.pmid)}</b> <span class="tag">${esc(v.year)}</span>` +
          (v.current ? ` <span class="tag now">current</span>` : "") +
          ` ${esc(v.caption || "")} <span class="muted">${esc(v.organizations.join("; "))}</span>` +
          (v.supersedes.length ? `<div class="muted">supersedes ${esc(v.supersedes.join(", "))}</div>` : "") +
          (v.elsewhere.length ? `<div class="elsewhere">also superseded, in another trajectory, by ` +
            v.elsewhere.map(opener).join(", ") + `</div>` : "") +
          `<details><summary>${plural(recs(v.pmid).length, "recommendation")}</summary>` +
          recs(v.pmid).map(([d, t]) => `<p><a href="#" data-subject="${esc(d)}">${esc(d)}</a>: ${esc(t)}</p>`).join("") +
          `</details></li>`).join("") + `</ol>`).join("") + `</div>` +
        `<h3>${plural(pairs.length, "change pair")} (prior → this trajectory's current)</h3><div id="pairs">` +
        pairs.map((c) => `<div class="pair" data-decision="${esc(c.decision_id)}">` +
          `<div><span class="tag">${esc(c.prior_pmid)} (${esc(c.prior_year)}) → ${esc(c.current_pmid)} (${esc(c.current_year)})</span> ` +
          `<a href="#" data-subject="${esc(c.decision_id)}">timeline</a></div>` +
          `<p class="prior"><b>Prior:</b> ${esc(c.prior_recommendation)}</p><p><b>Current:</b> ${esc(c.current_recommendation)}</p>` +
          questionList(byPair[questionPair(c)] || []) + `</div>`).join("") + `</div>`;
      requestAnimationFrame(() => links($("chain")));
    } catch (err) { aside.innerHTML = `<p class="error">${esc(err.message)}</p>`; }
  }
  const plural = (n, one) => `${n} ${one}${n === 1 ? "" : "s"}`;
  /** Versions in rows, the current one at the bottom: a version sits one row above the highest version of the
      trajectory that supersedes it, so priors that only the current one supersedes sit side by side, above it. */
  function generations(versions) {
    const by = Object.fromEntries(versions.map((v) => [v.pmid, v])), up = {};
    const level = (p, seen) => {
      if (p in up) return up[p];
      if (seen.has(p) || !by[p]) return 0;
      seen.add(p);
      const newer = by[p].superseded_by.filter((n) => by[n]);
      return (up[p] = newer.length ? 1 + Math.max(...newer.map((n) => level(n, seen))) : 0);
    };
    const top = Math.max(0, ...versions.map((v) => level(v.pmid, new Set()))), rows = [];
    for (const v of versions) (rows[top - up[v.pmid]] = rows[top - up[v.pmid]] || []).push(v);
    return rows.filter(Boolean);
  }
  /** A line from each version to every version it supersedes, drawn once the cards are laid out (and again when
      one opens or closes). */
  function links(box) {
    if (!box) return;
    const svg = box.querySelector("svg.links"), at = box.getBoundingClientRect(), NS = "http://www.w3.org/2000/svg";
    svg.setAttribute("width", String(box.scrollWidth));
    svg.setAttribute("height", String(box.scrollHeight));
    const lines = [];
    for (const b of box.querySelectorAll("li[data-pmid]")) for (const s of b.dataset.supersedes.split(" ").filter(Boolean)) {
      const a = box.querySelector(`li[data-pmid="${CSS.escape(s)}"]`);
      if (!a) continue;
      const ra = a.getBoundingClientRect(), rb = b.getBoundingClientRect(), f = (n) => n.toFixed(1);
      const rows = Number(b.parentNode.dataset.gen) - Number(a.parentNode.dataset.gen);
      const line = document.createElementNS(NS, "path");
      if (rows === 1) { // the next row: straight down
        line.setAttribute("d", `M${f(ra.left + ra.width / 2 - at.left)},${f(ra.bottom - at.top)} ` +
          `L${f(rb.left + rb.width / 2 - at.left)},${f(rb.top - at.top)}`);
      } else { // past the rows between: around them, in the left margin
        const y1 = ra.top + ra.height / 2 - at.top, y2 = rb.top + rb.height / 2 - at.top, x1 = ra.left - at.left, x2 = rb.left - at.left;
        line.setAttribute("d", `M${f(x1)},${f(y1)} C${f(-24)},${f(y1)} ${f(-24)},${f(y2)} ${f(x2)},${f(y2)}`);
      }
      line.setAttribute("data-from", b.dataset.pmid);
      line.setAttribute("data-to", s);
      lines.push(line);
    }
    svg.replaceChildren(...lines);
  }
  const questionPair = (c) => `cp:${c.decision_id}:${c.prior_pmid}>${c.current_pmid}`;
  function questionList(qs) {
    return qs.map((x) => `<details class="question" data-question="${esc(x.question)}"><summary>${esc(x.kind)} question ` +
      `${esc(x.question)}${x.variant ? " (" + esc(x.variant) + ")" : ""}${x.kind === "generated" ? ", " + x.answers + " stored answers" : ""}</summary>` +
      `<pre>${esc(x.text)}</pre>` + answerWithOptions(x) +
      (x.key_query ? `<p>Answer key: <code>${esc(x.key_query)} ${esc(x.key_params)}</code></p><div class="qmore"></div>` : "") +
      `</details>`).join("");
  }
  function answerWithOptions(x) {
    const choices = x.choices || [];
    const labels = choices.map((_, i) => (x.choice_labels || [])[i] || String.fromCharCode(65 + i));
    const right = labels.findIndex((l, i) => l === x.correct || choices[i] === x.correct);
    return `<p>Answer: <b>${esc(x.correct)}</b>${right >= 0 ? ": " + esc(choices[right]) : ""}</p>` +
      (choices.length ? `<ol class="choices">` + choices.map((c, i) => `<li data-label="${esc(labels[i])}"` +
        `${i === right ? ' class="correct"' : ""}><b>${esc(labels[i])}.</b> ${esc(c)}</li>`).join("") + `</ol>` : "");
  }
  $("detail").addEventListener("click", (e) => {
    const a = e.target.closest("a[data-subject]");
    if (a) { e.preventDefault(); subjectFromDetail(a.dataset.subject); }
    const o = e.target.closest("a[data-open]");
    if (o) { e.preventDefault(); openTrajectory(o.dataset.open); }
    const b = e.target.closest("#d-grid");
    if (b) trajectoryGrid(b.dataset.guideline);
  });
  $("detail").addEventListener("toggle", async (e) => {
    const d = e.target;
    if (d.closest && d.closest("#chain")) links($("chain"));
    if (!d.open || !d.classList.contains("question") || d.dataset.done) return;
    const more = d.querySelector(".qmore");
    if (!more) return;
    d.dataset.done = "1";
    try {
      const [answers, verify] = await Promise.all([q("question-answers", { question: d.dataset.question }),
        q("verify", { question: d.dataset.question })]);
      const v = verify[0];
      more.innerHTML = `<p>bench verify: <b>${v.agrees ? "still agrees" : "evidence changed"}</b> ` +
        `<span class="muted">(${esc(v.rows)} evidence rows)</span></p>` +
        `<table><thead><tr><th>Run</th><th>Model</th><th>Answer</th><th>Correct</th></tr></thead><tbody>` +
        answers.map((r) => `<tr><td>${esc(r.run)}</td><td>${esc(r.model)}</td><td>${esc(r.answer)}</td><td>${esc(r.correct)}</td></tr>`).join("") +
        `</tbody></table>`;
    } catch (err) { more.innerHTML = `<p class="error">${esc(err.message)}</p>`; }
  }, true);

  // --- timelines ---------------------------------------------------------------------------------
  let subject = null;
  let searchTimer = null;
  async function initTimelines() {
    try {
      const kinds = await q("subject-kinds");
      options($("t-kind"), kinds.map((k) => k.kind).filter(Boolean));
      await listSubjects();
    } catch (err) { fail("subjects", err); }
  }
  async function listSubjects() {
    const rows = await q("subject-list", { kind: $("t-kind").value, text: $("t-search").value.trim(), limit: 200 });
    $("t-subjects").innerHTML = rows.map((s) => `<li role="option" tabindex="0" data-subject="${esc(s.subject)}" ` +
      `aria-selected="${s.subject === subject}">${esc(s.subject)} <span class="muted">` +
      [s.kind, (s.caption || "").slice(0, 90), s.facts + (s.facts === 1 ? " fact" : " facts")].filter(Boolean).map(esc).join(" · ") + `</span></li>`).join("");
  }
  $("t-kind").addEventListener("change", () => listSubjects().catch((e) => fail("subjects", e)));
  $("t-search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => listSubjects().catch((e) => fail("subjects", e)), CFG.mode === "static" ? 0 : 150);
  });
  $("t-subjects").addEventListener("click", (e) => { const li = e.target.closest("li"); if (li) openSubject(li.dataset.subject); });
  $("t-subjects").addEventListener("keydown", (e) => {
    const li = e.target.closest("li");
    if (!li) return;
    if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openSubject(li.dataset.subject); }
    else if (e.key === "ArrowDown") { e.preventDefault(); li.nextElementSibling?.focus(); }
    else if (e.key === "ArrowUp") { e.preventDefault(); li.previousElementSibling?.focus(); }
  });
  ["t-date", "t-known"].forEach((id) => $(id).addEventListener("change", () => subject && drawSubject()));

  async function subjectFromDetail(s) {
    await show("timelines");
    subjectPicker(true);
    $("t-kind").value = "";
    $("t-search").value = s;
    await listSubjects().catch((e) => fail("subjects", e));
    await openSubject(s);
    $("t-subjects").querySelector("li")?.focus();
  }
  async function openSubject(s) {
    subject = s;
    for (const li of $("t-subjects").children) li.setAttribute("aria-selected", String(li.dataset.subject === s));
    await Promise.all([drawSubject(), openGrid({ subject: s }, s)]);
  }
  const shown = (f) => f.object_caption || f.object || (f.value === null || f.value === undefined ? "" : String(f.value));
  const iso = (d) => d.toISOString().slice(0, 10);
  /** Ticks for an axis from `lo` to `hi` (fractional years): years, months or days, whichever gives `most` or fewer,
      never finer than the data's `unit` (year-precision facts get years). */
  function axis(lo, hi, most, unit) {
    const span = hi - lo, out = [];
    if (span >= 3 || unit === "year") {
      const step = [1, 2, 5, 10, 20, 50].find((k) => span / k <= most) || 100;
      for (let y = Math.ceil(lo / step) * step; y <= hi; y += step) out.push([y, String(y)]);
      return out;
    }
    const y0 = Math.floor(lo);
    if (span >= 1 / 3 || unit === "month") {
      const step = [1, 2, 3, 6].find((k) => span * 12 / k <= most) || 12;
      for (let m = 0; ; m += step) {
        const d = iso(new Date(Date.UTC(y0, m, 1))), at = year(d);
        if (at > hi) break;
        if (at >= lo) out.push([at, d.slice(0, 7)]);
      }
      return out;
    }
    const step = [1, 2, 7, 14].find((k) => span * 365 / k <= most) || 28;
    let prev = -Infinity;
    for (let day = 0; ; day += 1) {
      const d = iso(new Date(Date.UTC(y0, 0, 1 + day))), at = year(d);
      if (at > hi) break;
      if (at >= lo && day - prev >= step && (step < 7 || new Date(d).getUTCDay() === 1)) { out.push([at, d]); prev = day; }
    }
    return out;
  }
  const MIN_SPAN = { year: 4, month: 1, day: 14 / 365 }; // the shortest axis for each precision, in years
  const RANK = { day: 0, month: 1, year: 2 };
  /** The coarsest precision among the facts (a year-precision version drawn on a day axis would claim days). */
  const coarsest = (facts) => facts.map((f) => f.precision).filter((p) => p in RANK)
    .reduce((a, b) => RANK[b] > RANK[a] ? b : a, "day");
  // a date as fractional years, linear in days (so intervals are drawn to scale): days since 1970 / 365.2425
  const year = (d) => d ? 1970 + Date.UTC(Number(d.slice(0, 4)), Number(d.slice(5, 7)) - 1, Number(d.slice(8, 10))) / 864e5 / 365.2425 : null;
  let drawn = 0; // the latest draw wins, whichever answer arrives last
  async function drawSubject() {
    const s = subject, date = $("t-date").value, known = $("t-known").value, seq = ++drawn;
    const view = $("t-view");
    try {
      const versions = await q("timeline", { subject: s, known_at: known, include_retracted: known ? null : true });
      const answer = date ? await q("as-of", { subject: s, date: date, known_at: known }) : null;
      if (seq !== drawn) return;
      // The axis spans the data at its precision: studies days apart get days or weeks, year-precision guidelines
      // years (at least a few of them). A year- or month-precision version still in force runs to today, to scale.
      const unit = coarsest(versions), today = year(iso(new Date()));
      const stamps = versions.flatMap((f) => [year(f.valid_from), year(f.valid_to)]).filter((y) => y !== null);
      if (date) stamps.push(year(date));
      const open = versions.some((f) => f.valid_to === null);
      if (open && unit !== "day" && stamps.length) stamps.push(Math.max(today, ...stamps));
      const first = stamps.length ? Math.min(...stamps) : today, last = stamps.length ? Math.max(...stamps) : first;
      const span = Math.max(last - first, MIN_SPAN[unit]);
      const lo = first - span * 0.04, hi = first + span + span * (open && unit === "day" ? 0.12 : 0.04);
      const x = (y) => ((y - lo) / (hi - lo) * 100).toFixed(2) + "%";
      const at01 = (at) => (at - lo) / (hi - lo); // a tick near the left edge starts there instead of centring on it
      const ticks = axis(lo, hi, Math.max(3, Math.floor(view.clientWidth / 90)), unit).filter(([at]) => at01(at) >= 0 && at01(at) < 0.95)
        .map(([at, label]) => `<span class="axis${at01(at) < 0.06 ? " edge" : ""}" data-left="${x(at)}">${esc(label)}</span>`);
      view.innerHTML = `<h2>${esc(s)}</h2><p class="muted">${versions.length} versions` +
        (known ? `, as the store believed on ${esc(known)}` : ", retracted ones hatched") + `</p>` +
        `<div class="chart" role="img" aria-label="versions of ${esc(s)} over valid time">${ticks.join("")}` +
        versions.map((f) => {
          const a = year(f.valid_from) ?? lo, b = Math.max(year(f.valid_to) ?? hi, a); // to scale (CSS keeps 2px)
          const cls = (f.known_to ? "bar retracted" : f.valid_to === null ? "bar now" : "bar") + (f.valid_to === null ? " open" : "") +
            ((b - a) / (hi - lo) < 0.15 ? " narrow" : "") + // a short bar's label runs on past it,
            ((a - lo) / (hi - lo) > 0.6 ? " late" : ""); // or, late on the axis, before it
          return `<div class="bar-row"><div class="${cls}" data-fact="${esc(f.id)}" data-left="${x(a)}" data-width="calc(${x(b)} - ${x(a)})" ` +
            `title="${esc(f.predicate)}: ${esc(shown(f))} [${esc(f.valid_from)} – ${esc(f.valid_to || "open")})"><span>${esc(f.predicate)}: ${esc(shown(f))}</span></div></div>`;
        }).join("") + (date ? `<div class="marker" data-left="${x(year(date))}"></div>` : "") + `</div>` +
        (answer === null ? `<p class="muted">Set “True on” to ask what was true that day.</p>` :
          `<h3>True on ${esc(date)}${known ? " as known at " + esc(known) : ""}: ${answer.length} facts</h3>` +
          `<table id="t-answer" aria-label="Facts true on the date"><thead><tr><th>Predicate</th><th>Value</th><th>Valid from</th><th>Valid to</th><th>Known from</th></tr></thead><tbody>` +
          answer.map((f) => `<tr data-fact="${esc(f.id)}"><td>${esc(f.predicate)}</td><td>${esc(shown(f))}</td><td>${esc(f.valid_from)}</td>` +
            `<td>${esc(f.valid_to)}</td><td>${esc(f.known_from)}</td></tr>`).join("") + `</tbody></table>`);
      place(view);
    } catch (err) { view.innerHTML = `<p class="error">${esc(err.message)}</p>`; }
  }

  // --- valid time x known time: what each release believed about each date (known-grid) -----------------
  let gridSeq = 0, grid = null;
  /** The subject picker (kind, search, dates, list) belongs to subject timelines: a trajectory's grid hides it. */
  function subjectPicker(on) {
    $("t-form").hidden = !on;
    $("t-subjects").hidden = !on;
  }
  async function trajectoryGrid(pmid) {
    await show("timelines");
    subject = null;
    subjectPicker(false);
    for (const li of $("t-subjects").children) li.setAttribute("aria-selected", "false");
    const back = el("button", { type: "button", id: "t-back" }, "Pick a subject instead");
    back.addEventListener("click", () => {
      subjectPicker(true);
      $("grid").hidden = true;
      $("t-view").replaceChildren(el("p", { class: "muted" }, "Pick a subject to see every version of its facts over valid time."));
      $("t-search").focus();
    });
    $("t-view").replaceChildren(el("h2", {}, "Trajectory of " + pmid), el("p", { class: "muted" },
      "Every guideline version linked to it by supersession (where the data branches, other trajectories' too: " +
      "known-grid --trajectory) and the decisions of their change pairs, below: open a decision for its timeline. "), back);
    await openGrid({ subject: pmid, trajectory: true }, "trajectory of " + pmid);
    $("g-slider").focus();
  }
  async function openGrid(scope, title) {
    const seq = ++gridSeq;
    $("grid").hidden = false;
    $("g-note").className = "muted";
    $("g-note").textContent = "reading " + title + "…";
    try {
      const rows = await q("known-grid", scope);
      if (seq !== gridSeq) return;
      drawGrid(rows, title);
    } catch (err) {
      if (seq !== gridSeq) return;
      $("g-note").className = "error";
      $("g-note").textContent = err.message;
    }
  }
  // a relation reads with both its ends; a value is its subject's (the cards below name the subject)
  const factText = (f, many) => (many === true || f.object ? f.subject + " " : "") + f.predicate + ": " + shown(f);
  const span = (f) => "[" + (f.valid_from || "…") + " – " + (f.valid_to || "open") + ")";
  function drawGrid(rows, title) {
    const knowns = [...new Set(rows.map((r) => r.known))].sort(), dates = [...new Set(rows.map((r) => r.date))].sort();
    const cell = {}, head = {};
    for (const r of rows) {
      const key = r.known + "|" + r.date;
      (cell[key] = cell[key] || []);
      if (r.id) cell[key].push(r);
      head[r.known] = r;
    }
    const years = dates.every((d) => d.endsWith("-01-01"));
    const label = (d) => years ? d.slice(0, 4) : d;
    grid = { knowns, dates, cell, head, label };
    $("g-title").textContent = "Valid time × known time: " + title;
    $("g-note").className = "muted";
    const n = (k, one, more) => k + " " + (k === 1 ? one : more);
    $("g-note").textContent = rows.length ? `${n(knowns.length, "known time", "known times")} down (releases, by release ` +
      `date), ${n(dates.length, "valid-time point", "valid-time points")} across (each a day something starts or stops being valid). A cell is what that release believed valid ` +
      `on that date (as-of DATE, known at the release); a coloured cell differs from the row above.`
      : "No facts: nothing to grid.";
    const table = $("g-table");
    table.tHead.replaceChildren(el("tr", {}, el("th", { scope: "col", class: "corner" }, "known at ↓ / valid on →"),
      dates.map((d, i) => el("th", { scope: "col", dataset: { col: i, date: d }, title: "valid on " + d }, label(d)))));
    table.tBodies[0].replaceChildren(...knowns.map((k, row) => {
      const h = head[k];
      const who = h.release_captions.length ? h.release_captions.join("; ") : "a known-time change recorded on the facts";
      return el("tr", { dataset: { known: k } }, el("th", { scope: "row" }, el("strong", {}, k), el("span", { class: "muted" }, who)),
        dates.map((d, i) => {
          const fs = cell[k + "|" + d] || [], above = row ? (cell[knowns[row - 1] + "|" + d] || []) : null;
          const ids = fs.map((f) => f.id).sort();
          const changed = above !== null && ids.join(" ") !== above.map((f) => f.id).sort().join(" ");
          return el("td", { class: (changed ? "changed " : "") + (fs.length ? "" : "empty"), dataset: { col: i, facts: ids.join(" ") },
            title: fs.map((f) => factText(f, true) + " " + span(f)).join("\n") || "nothing believed valid" },
          fs.length ? fs.slice(0, 3).map((f) => el("div", { class: "fact" }, factText(f, false))) : "–",
          fs.length > 3 ? el("div", { class: "muted" }, `+${fs.length - 3} more`) : null);
        }));
    }));
    const slider = $("g-slider");
    slider.max = String(Math.max(dates.length - 1, 0));
    slider.value = slider.max;
    slider.disabled = dates.length < 2;
    focusColumn(dates.length - 1);
  }
  function focusColumn(i) {
    if (!grid || !grid.dates.length) { $("g-date").textContent = ""; $("g-focus").replaceChildren(); return; }
    const d = grid.dates[i];
    $("g-date").textContent = grid.label(d) === d ? d : grid.label(d) + " (" + d + ")";
    for (const c of $("g-table").querySelectorAll("[data-col]")) c.classList.toggle("on", c.dataset.col === String(i));
    $("g-table").querySelector(`th[data-col="${i}"]`)?.scrollIntoView({ block: "nearest", inline: "nearest" });
    $("g-focus").replaceChildren(el("h3", {}, "Valid on " + d + ", release by release"), el("div", { class: "cards" },
      grid.knowns.map((k) => {
        const fs = grid.cell[k + "|" + d] || [], h = grid.head[k];
        return el("div", { class: "card", dataset: { known: k } },
          el("div", { class: "card-head" }, el("strong", {}, "known at " + k), " ", el("span", { class: "muted" },
            h.release_captions.join("; ") || "known-time change on the facts")),
          fs.length ? el("ul", {}, fs.map((f) => el("li", {}, factText(f, true), " ", el("span", { class: "muted" }, span(f)))))
            : el("p", { class: "muted" }, "believed nothing valid on this date"));
      })));
  }
  $("g-slider").addEventListener("input", () => focusColumn(Number($("g-slider").value)));

  // --- runs: one column per (run, model), one row per (family, variant) ----------------------------------
  async function initRuns() {
    try {
      const rows = await q("run-summary");
      const cols = [...new Set(rows.map((r) => r.run + "\u0001" + r.model))];
      const keys = [...new Set(rows.map((r) => r.family + "\u0001" + r.variant))].sort();
      const cell = {};
      for (const r of rows) cell[r.family + "\u0001" + r.variant + "\u0002" + r.run + "\u0001" + r.model] = r;
      const table = $("r-table");
      table.tHead.innerHTML = `<tr><th scope="col">Family</th><th scope="col">Variant</th>` + cols.map((c) => {
        const [run, model] = c.split("\u0001");
        return `<th scope="col" data-run="${esc(run)}">${esc(run)}<br><span class="muted">${esc(model)}</span></th>`;
      }).join("") + `</tr>`;
      table.tBodies[0].innerHTML = rows.length ? keys.map((k) => {
        const [family, variant] = k.split("\u0001");
        return `<tr><td>${esc(family)}</td><td>${esc(variant)}</td>` + cols.map((c) => {
          const r = cell[k + "\u0002" + c];
          return r ? `<td data-answered="${r.answered}" data-correct="${r.correct}">${r.correct} / ${r.answered}` +
            (r.accuracy === null ? "" : ` (${(100 * r.accuracy).toFixed(1)}%)`) + `</td>` : `<td class="muted">–</td>`;
        }).join("") + `</tr>`;
      }).join("") : `<tr><td colspan="2" class="muted">no runs in the store</td></tr>`;
    } catch (err) { fail("runs", err); }
    await initCutoffs();
    try { // the report of the --runs folders: HTML the CLI built from them (chronokg eval report's tables and plots)
      const report = await q("run-report");
      $("r-report").innerHTML = report.length ? report[0].html
        : `<p class="muted">No run folders: give them with <code>--runs DIR</code> (serve http, export html).</p>`;
    } catch (err) { fail("run report", err); }
  }

  // --- runs: each model's answers split at its knowledge cutoff (run-cutoffs) -------------------------
  async function initCutoffs() {
    const share = (k, n) => (n = Number(n), k = Number(k), n ? `${k} / ${n} (${(100 * k / n).toFixed(1)}%)` : "–");
    try {
      const rows = await q("run-cutoffs");
      $("r-cutoffs").tBodies[0].innerHTML = rows.length ? rows.map((r) =>
        `<tr><td>${esc(r.run)}</td><td>${esc(r.model)}</td><td>${esc(r.family)}</td>` +
        `<td>${esc(r.cutoff ?? "none")}${r.estimated ? " (estimated)" : ""}</td>` +
        `<td data-n="${Number(r.pre_n)}">${share(r.pre_correct, r.pre_n)}</td>` +
        `<td data-n="${Number(r.post_n)}">${share(r.post_correct, r.post_n)}</td><td>${Number(r.stale)}</td></tr>`).join("")
        : `<tr><td colspan="7" class="muted">no stored answers with a dated gold fact</td></tr>`;
    } catch (err) { fail("cutoffs", err); }
  }

  // --- data quality ------------------------------------------------------------------------------
  async function initQuality() {
    try {
      const rows = await q("quality");
      $("q-table").tBodies[0].innerHTML = rows.map((r) => `<tr><td>${esc(r.section)}</td><td>${esc(r.check)}</td>` +
        `<td>${r.count}</td><td>${r.total}</td><td>${esc(r.examples.join(", "))}</td></tr>`).join("");
    } catch (err) { fail("quality", err); }
  }

  initTrajectories().catch((err) => fail("trajectories", err));
})();
