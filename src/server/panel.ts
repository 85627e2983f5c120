/**
 * The web panel: one page, no build step, talking to the JSON API of `quarry serve`. Its libraries are served from
 * quarry's own dependencies under /assets/ (http.ts): marked (markdown), DOMPurify (sanitising the model's HTML),
 * highlight.js (code), eventsource-parser (the answer's server-sent events).
 */
export const PANEL_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>quarry</title>
<link rel="icon" href="data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'><rect width='32' height='32' rx='7' fill='%23171a21'/><circle cx='14' cy='14' r='7.5' fill='none' stroke='%236cb6ff' stroke-width='3.5'/><path d='M19.5 19.5l6.5 6.5' stroke='%236cb6ff' stroke-width='4' stroke-linecap='round'/></svg>">
<link rel="stylesheet" href="/assets/highlight.css">
<style>
  :root { --bg:#0f1115; --panel:#171a21; --line:#262b36; --text:#e6e6e6; --dim:#8b93a7; --acc:#6cb6ff; --ok:#7ee787; --warn:#f2cc60; --bad:#ff7b72; }
  * { box-sizing: border-box; }
  body { margin:0; font:14px/1.45 system-ui, -apple-system, Segoe UI, sans-serif; background:var(--bg); color:var(--text); }
  header { display:flex; gap:16px; align-items:center; padding:10px 16px; border-bottom:1px solid var(--line); background:var(--panel); flex-wrap:wrap; }
  header h1 { font-size:16px; margin:0; letter-spacing:.5px; }
  .pill { padding:2px 8px; border-radius:10px; background:#222833; color:var(--dim); font-size:12px; }
  .pill b { color:var(--text); font-weight:600; }
  main { display:grid; grid-template-columns: minmax(0,1.1fr) minmax(0,1fr); gap:12px; padding:12px 16px; }
  section { background:var(--panel); border:1px solid var(--line); border-radius:8px; padding:12px; min-width:0; }
  h2 { font-size:13px; text-transform:uppercase; color:var(--dim); margin:0 0 8px; letter-spacing:.6px; }
  input, select, textarea, button { font:inherit; color:var(--text); background:#0c0e12; border:1px solid var(--line); border-radius:6px; padding:6px 8px; }
  button { background:#1f6feb; border-color:#1f6feb; cursor:pointer; }
  button.secondary { background:#222833; border-color:var(--line); }
  form.row { display:flex; gap:8px; }
  form.row input { flex:1; }
  .result { border-top:1px solid var(--line); padding:8px 0; }
  .result a { color:var(--acc); text-decoration:none; font-family:ui-monospace, monospace; }
  .result .sym { color:var(--ok); margin-left:6px; }
  .result .score { color:var(--dim); float:right; font-size:12px; }
  pre { margin:6px 0 0; padding:8px; background:#0c0e12; border-radius:6px; overflow:auto; font:12px/1.4 ui-monospace, monospace; tab-size:4; }
  .result pre { white-space:pre-wrap; overflow-wrap:anywhere; }
  mark { background:#5a4a00; color:#fff; border-radius:2px; }
  #file { max-height:60vh; overflow:auto; }
  #file .ln { color:var(--dim); user-select:none; flex:none; width:4em; text-align:right; padding-right:8px; }
  /* the code in a box of its own: a tab's stops count from where the code starts, not from the line number (a Go
     file's first tab of indentation was eaten), and a long line wraps beside its number instead of being cut */
  #file > span { display:flex; min-height:1.4em; }
  #file .code { flex:1; min-width:0; white-space:pre-wrap; overflow-wrap:anywhere; }
  #file:empty::before { content:'no file open'; color:var(--dim); }
  #file .hl { background:#1d2b45; }
  #answer { min-height:2em; overflow-wrap:anywhere; }
  #answer p { margin:.4em 0; } #answer pre code { background:none; padding:0; }
  #answer code { font:12px ui-monospace, monospace; background:#0c0e12; padding:1px 4px; border-radius:4px; }
  #answer a.cite { color:var(--acc); text-decoration:none; }
  #xref { font-size:12px; margin:6px 0; } #xref a { color:var(--acc); text-decoration:none; font-family:ui-monospace, monospace; margin-right:10px; }
  .hljs { background:none; }
  @media (max-width: 720px) {
    main { grid-template-columns: minmax(0,1fr); padding:8px; }
    header { padding:8px; gap:8px; }
    .settings label { grid-template-columns: minmax(0,1fr); }
    form.row { flex-wrap:wrap; } form.row input { min-width:0; }
    .result .score { float:none; margin-left:6px; }
  }
  .settings label { display:grid; grid-template-columns: 11em 1fr; gap:8px; align-items:center; margin:4px 0; }
  .msg { color:var(--dim); font-size:12px; margin-left:8px; }
  .msg.bad { color:var(--bad); } .msg.ok { color:var(--ok); }
  .full { grid-column: 1 / -1; }
</style>
</head>
<body>
<header>
  <h1>quarry</h1>
  <select id="repo" title="repository" hidden></select>
  <span class="pill" id="root">…</span>
  <span class="pill">files <b id="files">–</b></span>
  <span class="pill">chunks <b id="chunks">–</b></span>
  <span class="pill">vectors <b id="vectors">–</b></span>
  <span class="pill">auto-sync <b id="sync">–</b></span>
  <span class="pill">pending <b id="pending">–</b></span>
  <button class="secondary" id="reindex">Re-index</button><span class="msg" id="reindex-msg"></span>
</header>
<main>
  <section>
    <h2>Search</h2>
    <form class="row" id="search-form"><input id="q" placeholder="a question, a symbol or a file name" autocomplete="off"><button>Search</button></form>
    <div class="msg" id="search-msg"></div>
    <div id="results"></div>
  </section>
  <section>
    <h2>File</h2>
    <div class="msg" id="file-title">Open a result to see its file (read-only). Double-click a name for its definitions and uses.</div>
    <div id="xref"></div>
    <pre id="file"></pre>
  </section>
  <section>
    <h2>Ask</h2>
    <form class="row" id="ask-form"><input id="question" placeholder="a question about this repository" autocomplete="off"><button>Ask</button></form>
    <div class="msg" id="ask-msg"></div>
    <div id="answer"></div>
    <div id="sources"></div>
  </section>
  <section class="settings">
    <h2>Settings <span class="msg">written to quarry.toml</span></h2>
    <form id="settings-form">
      <label>search.top_k <input name="search.top_k" type="number" min="1" max="100"></label>
      <label>context.packing <select name="context.packing"><option>chunks</option><option>files</option></select></label>
      <label>context.budget <input name="context.budget" type="number" min="0"></label>
      <label>llm.model <input name="llm.model" placeholder="ollama:qwen2.5-coder"></label>
      <button>Save</button><span class="msg" id="settings-msg"></span>
    </form>
  </section>
</main>
<script type="module">
import { marked } from '/assets/marked.js';
import DOMPurify from '/assets/purify.js';
import hljs from '/assets/highlight.js';
import { createParser } from '/assets/eventsource-parser.js';
const token = new URLSearchParams(location.search).get('token') || sessionStorage.getItem('quarry-token') || '';
if (token) sessionStorage.setItem('quarry-token', token);
const H = token ? { 'x-quarry-token': token } : {};
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
async function api(path, opts = {}) {
  const r = await fetch(path, { ...opts, headers: { ...H, ...(opts.body ? { 'content-type': 'application/json' } : {}), ...(opts.headers || {}) } });
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}
// the repository picker: hidden when the server holds one; "every repository" applies to search only
let repo = '';
const rq = (name) => name && name !== '*' ? '&repo=' + encodeURIComponent(name) : '';
const one = () => repo === '*' ? '' : repo;
function showStatus(s) {
  $('root').textContent = s.repo || s.root;
  $('root').title = s.root;
  $('files').textContent = s.files;
  $('chunks').textContent = s.chunks;
  const e = s.embedding;
  $('vectors').textContent = (!e.embedder ? 'none' : e.refined >= e.files ? 'all' : e.coarse < e.files ? 'phase 1 ' + Math.floor(100 * e.coarse / Math.max(1, e.files)) + '%' : 'phase 2 ' + Math.floor(100 * e.refined / Math.max(1, e.files)) + '%')
    + (e.progress ? ' · ' + Math.round(e.progress.textsPerSec) + ' texts/s' + (e.progress.etaMs != null ? ', about ' + Math.max(1, Math.round(e.progress.etaMs / 60000)) + ' min left' : '') : '');
  const y = s.sync;
  $('sync').textContent = !y ? 'off' : y.state !== 'idle' ? y.state : y.lastSync ? 'synced ' + new Date(y.lastSync).toLocaleTimeString() + ' (' + y.lastChanged + ' changed)' : 'watching';
  $('pending').textContent = s.pending;
  if (s.reindexing) $('reindex-msg').textContent = 're-indexing…';
  else if ($('reindex-msg').textContent === 're-indexing…') $('reindex-msg').textContent = 'up to date ' + new Date().toLocaleTimeString();
}
let events = null;
function follow() {
  if (events) events.close();
  events = new EventSource('/api/events?' + (token ? 'token=' + encodeURIComponent(token) : '') + rq(one()));
  events.addEventListener('status', (ev) => showStatus(JSON.parse(ev.data)));
}
api('/api/repos').then((r) => {
  repo = r.default || (r.repos[0] && r.repos[0].name) || '';
  if (r.repos.length > 1) {
    $('repo').innerHTML = r.repos.map((x) => '<option value="' + esc(x.name) + '">' + esc(x.name) + '</option>').join('') + '<option value="*">every repository (search)</option>';
    $('repo').value = repo;
    $('repo').hidden = false;
  }
  follow();
  api('/api/status?' + rq(one()).slice(1)).then(showStatus).catch(() => {});
}).catch(() => follow());
$('repo').addEventListener('change', () => {
  repo = $('repo').value;
  follow();
  if (one()) api('/api/status?' + rq(one()).slice(1)).then(showStatus).catch(() => {});
});

function highlight(text, terms) {
  let html = esc(text);
  for (const t of terms) if (t.length > 2) html = html.replace(new RegExp('(' + t.replace(/[.*+?^\${}()|[\\]\\\\]/g, '\\\\$&') + ')', 'gi'), '<mark>$1</mark>');
  return html;
}
$('search-form').addEventListener('submit', (ev) => { ev.preventDefault(); runSearch(); });
// the page's state is in its URL: ?q= the search, #path:line the open file (shareable, and kept on reload)
function setUrl(q, hash) {
  const u = new URL(location.href);
  if (q !== undefined) { if (q) u.searchParams.set('q', q); else u.searchParams.delete('q'); }
  if (token) u.searchParams.delete('token');
  if (hash !== undefined) u.hash = hash;
  history.replaceState(null, '', u);
}
async function runSearch() {
  const q = $('q').value.trim();
  if (!q) return;
  setUrl(q);
  $('search-msg').className = 'msg';
  $('search-msg').textContent = 'searching…';
  try {
    const r = await api('/api/search?q=' + encodeURIComponent(q) + (repo === '*' ? '&repo=*' : rq(repo)));
    const stop = new Set(['the', 'and', 'for', 'where', 'what', 'how', 'does', 'with', 'from', 'that', 'this', 'are', 'was', 'which', 'when', 'who', 'why']);
    const terms = q.split(/[^A-Za-z0-9_]+/).filter((t) => t && !stop.has(t.toLowerCase()));
    $('search-msg').textContent = r.results.length + ' results, ' + r.mode + ', ' + Math.round(r.tookMs) + ' ms';
    $('results').innerHTML = r.results.map((x) =>
      '<div class="result"><a href="#" data-repo="' + esc(x.repo || one()) + '" data-path="' + esc(x.path) + '" data-start="' + x.startLine + '" data-end="' + x.endLine + '">' + (x.repo ? esc(x.repo) + ': ' : '') + esc(x.path) + ':' + x.startLine + '-' + x.endLine + '</a>' +
      (x.label ? '<span class="sym">' + esc(x.label) + '</span>' : '') + '<span class="score">' + x.score.toFixed(3) + '</span>' +
      '<pre>' + highlight(x.snippet, terms) + '</pre></div>').join('') || '<div class="msg">no matches</div>';
  } catch (e) { $('search-msg').className = 'msg bad'; $('search-msg').textContent = e.message; }
}
$('results').addEventListener('click', (ev) => {
  const a = ev.target.closest('a[data-path]');
  if (!a) return;
  ev.preventDefault();
  openFile(a.dataset.path, Number(a.dataset.start), Number(a.dataset.end), a.dataset.repo);
});
/** A line of code as highlighted HTML (highlight.js, by the file's extension; escaped text when it knows none). */
function codeLine(line, lang) {
  if (!lang) return esc(line);
  try { return hljs.highlight(line, { language: lang, ignoreIllegals: true }).value; } catch { return esc(line); }
}
function langOf(path) {
  const ext = (path.split('.').pop() || '').toLowerCase();
  const alias = { mjs: 'javascript', cjs: 'javascript', tsx: 'typescript', jsx: 'javascript', h: 'c', hpp: 'cpp', kt: 'kotlin', rs: 'rust', rb: 'ruby', py: 'python', go: 'go', md: 'markdown', yml: 'yaml', sh: 'bash' };
  const name = alias[ext] || ext;
  return hljs.getLanguage(name) ? name : null;
}
let openPath = null;
async function openFile(path, start, end, inRepo) {
  try {
    const f = await api('/api/file?path=' + encodeURIComponent(path) + rq(inRepo || one()));
    openPath = { path, repo: inRepo || one() };
    $('file-title').textContent = path + ' (' + f.total + ' lines)';
    const lang = langOf(path);
    $('file').innerHTML = f.lines.map((l, i) => { const n = f.start + i; const cls = n >= start && n <= end ? ' class="hl"' : ''; return '<span' + cls + ' id="L' + n + '"><span class="ln">' + n + '</span><span class="code">' + codeLine(l, lang) + '</span></span>'; }).join('');
    setUrl(undefined, path + ':' + start + (end && end !== start ? '-' + end : ''));
    const t = document.getElementById('L' + start); if (t) t.scrollIntoView({ block: 'center' });
  } catch (e) { $('file-title').textContent = e.message; $('file').textContent = ''; }
}
// go to definition and references: double-click a name in the file view
$('file').addEventListener('dblclick', async () => {
  const name = String(window.getSelection() || '').trim();
  if (!/^[A-Za-z_$][\\w$]*$/.test(name)) return;
  const r = openPath && openPath.repo ? rq(openPath.repo) : '';
  try {
    const [defs, refs] = await Promise.all([api('/api/definitions?name=' + encodeURIComponent(name) + r), api('/api/references?name=' + encodeURIComponent(name) + r)]);
    const d = (defs.definitions || []).map((x) => '<a href="#" data-path="' + esc(x.path) + '" data-start="' + x.startLine + '" data-end="' + x.endLine + '">' + esc(x.path) + ':' + x.startLine + '</a>').join('');
    const u = (refs.references || []).slice(0, 20).map((x) => '<a href="#" data-path="' + esc(x.path) + '" data-start="' + x.lines[0] + '" data-end="' + x.lines[0] + '">' + esc(x.path) + ':' + x.lines.join(',') + '</a>').join('');
    $('xref').innerHTML = '<b>' + esc(name) + '</b> defined: ' + (d || 'nowhere in the index') + '<br>used: ' + (u || 'nowhere else');
  } catch (e) { $('xref').textContent = e.message; }
});
$('xref').addEventListener('click', (ev) => { const a = ev.target.closest('a[data-path]'); if (!a) return; ev.preventDefault(); openFile(a.dataset.path, Number(a.dataset.start), Number(a.dataset.end), openPath && openPath.repo); });
$('reindex').addEventListener('click', async () => {
  try { const r = await api('/api/reindex', { method: 'POST', body: JSON.stringify(one() ? { repo: one() } : {}) }); $('reindex-msg').textContent = r.started ? 're-indexing…' : 'already running since ' + new Date(r.startedAt).toLocaleTimeString(); }
  catch (e) { $('reindex-msg').textContent = e.message; }
});
async function loadSettings() {
  const s = await api('/api/settings');
  const form = $('settings-form');
  for (const el of form.elements) {
    if (!el.name) continue;
    const [sec, key] = el.name.split('.');
    el.value = (s.effective[sec] && s.effective[sec][key] !== undefined) ? s.effective[sec][key] : '';
    el.dataset.loaded = el.value; // what the server had: only fields the user changes are written
  }
}
$('settings-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const patch = {};
  for (const el of ev.target.elements) {
    if (!el.name || el.value === el.dataset.loaded) continue;
    const [sec, key] = el.name.split('.');
    patch[sec] = patch[sec] || {};
    patch[sec][key] = el.type === 'number' ? (el.value === '' ? null : Number(el.value)) : (el.value === '' ? null : el.value);
  }
  if (!Object.keys(patch).length) { $('settings-msg').className = 'msg'; $('settings-msg').textContent = 'nothing changed'; return; }
  try { await api('/api/settings', { method: 'PUT', body: JSON.stringify(patch) }); $('settings-msg').className = 'msg ok'; $('settings-msg').textContent = 'saved'; await loadSettings(); }
  catch (e) { $('settings-msg').className = 'msg bad'; $('settings-msg').textContent = e.message; }
});
$('ask-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const question = $('question').value.trim();
  if (!question) return;
  $('answer').textContent = ''; $('sources').innerHTML = ''; $('ask-msg').className = 'msg'; $('ask-msg').textContent = 'thinking…';
  const r = await fetch('/api/ask', { method: 'POST', headers: { ...H, 'content-type': 'application/json' }, body: JSON.stringify({ question, ...(one() ? { repo: one() } : {}) }) });
  if (!r.ok) { const j = await r.json().catch(() => ({})); $('ask-msg').className = 'msg bad'; $('ask-msg').textContent = j.error || r.statusText; return; }
  let text = '';
  let sources = [];
  const parser = createParser({ onEvent: (e) => {
    const type = e.event || 'message';
    const data = e.data;
    if (type === 'token') { text += JSON.parse(data); showAnswer(text, sources); }
    else if (type === 'sources') { sources = JSON.parse(data); $('sources').innerHTML = sources.map((s) => '<div class="result"><a href="#" data-path="' + esc(s.path) + '" data-start="' + s.startLine + '" data-end="' + s.endLine + '">[' + s.n + '] ' + esc(s.path) + ':' + s.startLine + '-' + s.endLine + '</a></div>').join(''); }
    else if (type === 'routed') { showAnswer(JSON.parse(data).text, []); $('ask-msg').textContent = 'from the symbol index'; }
    else if (type === 'note') $('ask-msg').textContent = data;
    else if (type === 'error') { $('ask-msg').className = 'msg bad'; $('ask-msg').textContent = data; }
    else if (type === 'done') { if ($('ask-msg').textContent === 'thinking…') $('ask-msg').textContent = ''; }
  } });
  const reader = r.body.getReader(); const dec = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read(); if (done) break;
    parser.feed(dec.decode(value, { stream: true }));
  }
});
/**
 * The answer as markdown, rendered by marked and sanitised by DOMPurify (the model's text is never trusted as HTML),
 * code highlighted, each citation [n] a link to its source.
 */
function showAnswer(md, sources) {
  const byN = new Map(sources.map((s) => [String(s.n), s]));
  const linked = md.replace(/\\[(\\d+)\\](?!\\()/g, (m, n) => byN.has(n) ? '[[' + n + ']](#cite-' + n + ')' : m);
  $('answer').innerHTML = DOMPurify.sanitize(marked.parse(linked, { async: false }));
  for (const a of $('answer').querySelectorAll('a[href^="#cite-"]')) { const s = byN.get(a.getAttribute('href').slice(6)); a.className = 'cite'; a.dataset.path = s.path; a.dataset.start = s.startLine; a.dataset.end = s.endLine; a.title = s.path + ':' + s.startLine + '-' + s.endLine; }
  for (const el of $('answer').querySelectorAll('pre code')) hljs.highlightElement(el);
}
$('answer').addEventListener('click', (ev) => { const a = ev.target.closest('a[data-path]'); if (!a) return; ev.preventDefault(); openFile(a.dataset.path, Number(a.dataset.start), Number(a.dataset.end)); });
$('sources').addEventListener('click', (ev) => { const a = ev.target.closest('a[data-path]'); if (!a) return; ev.preventDefault(); openFile(a.dataset.path, Number(a.dataset.start), Number(a.dataset.end)); });
loadSettings().catch(() => {});
// state from the URL: a shared link opens the same search and file
{
  const u = new URL(location.href);
  const q = u.searchParams.get('q');
  if (q) { $('q').value = q; runSearch(); }
  const m = /^#(.+?):(\\d+)(?:-(\\d+))?$/.exec(decodeURIComponent(location.hash));
  if (m) openFile(m[1], Number(m[2]), Number(m[3] || m[2]));
}
</script>
</body>
</html>
`;
