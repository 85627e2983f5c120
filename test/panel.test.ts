import assert from 'node:assert/strict';
import { cpSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { type Served, startServer } from '../src/server/http.ts';
import { indexLexically, makeTree, REPO, removeTree, trustProjectFile } from './helpers.ts';
import { type LlmServer, startLlmServer } from './llm-server.ts';

// the panel needs no vectors; the model would only slow the machine down while the browser runs
process.env.QUARRY_EMBED = 'none';
// Debian's Chromium, installed by scripts/install-test-tools.sh (part of scripts/test.sh)
const CHROMIUM = process.env.QUARRY_CHROMIUM ?? '/usr/bin/chromium';

/** Waits until the element's text matches; on timeout, says what it showed instead. */
async function waitText(
  page: Page,
  selector: string,
  want: RegExp | ((text: string) => boolean),
  ms = 30_000,
): Promise<string> {
  const ok = typeof want === 'function' ? want : (t: string) => want.test(t);
  const end = Date.now() + ms;
  let last = '';
  while (Date.now() < end) {
    last = (await page.textContent(selector).catch(() => '')) ?? '';
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${selector} never showed what was awaited (${want}); it showed "${last}"`);
}

describe('the web panel in a real browser', () => {
  let root: string;
  let served: Served;
  let browser: Browser;
  let page: Page;
  let llm: LlmServer;
  before(async () => {
    llm = await startLlmServer();
    // real data: quarry's own source; the model is a stand-in server on 127.0.0.1
    root = makeTree({
      'README.md': readFileSync(join(REPO, 'README.md'), 'utf8'),
      'quarry.toml': `[llm]\nmodel = "ollama:qwen2.5-coder:7b"\nbase_url = "${llm.url}/api"\n`,
      // Go's indentation is tabs; one line is longer than any box
      'probe/tabs.go': `package probe\n\nfunc TabsProbe(name string) string {\n\tif name == "" {\n\t\treturn "${'tabsProbe wraps a long line '.repeat(8)}"\n\t}\n\treturn name\n}\n`,
    });
    trustProjectFile(root);
    cpSync(join(REPO, 'src'), join(root, 'src'), { recursive: true });
    await indexLexically(root);
    served = await startServer({ root });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(served.url);
  });
  after(async () => {
    await browser?.close();
    await served?.close();
    await llm?.close();
    removeTree(root);
  });

  it('shows the index status, live', async () => {
    const files = (await served.project!.store.stats()).files;
    await waitText(page, '#files', new RegExp(`^${files}$`));
    await waitText(page, '#sync', /synced|watching/);
    // regression: the boxes offered quarry's own example questions on every repository
    assert.equal(await page.getAttribute('#question', 'placeholder'), 'a question about this repository');
    assert.equal(await page.getAttribute('#q', 'placeholder'), 'a question, a symbol or a file name');
  });

  it('searches, highlights, and opens a result in the read-only file view', async () => {
    await page.fill('#q', 'acquireWriterLock');
    await page.click('#search-form button');
    await page.waitForSelector('#results .result a');
    const first = await page.textContent('#results .result a');
    assert.match(first!, /^src\/store\/lock\.ts:\d+-\d+$/);
    assert.ok((await page.locator('#results mark').count()) > 0, 'query terms highlighted');
    await page.click('#results .result a');
    await waitText(page, '#file-title', /src\/store\/lock\.ts \(\d+ lines\)/);
    const hl = await page.locator('#file .hl').allTextContents();
    assert.ok(
      hl.some((l) => l.includes('acquireWriterLock')),
      'the result’s lines are marked',
    );
  });

  it('streams an answer with its sources into the ask box, and opens a source', async () => {
    llm.reply = () => 'The lock is taken by acquireWriterLock [1], which creates the lock file exclusively.';
    await page.fill('#question', 'how is the writer lock taken?');
    await page.click('#ask-form button');
    await waitText(
      page,
      '#answer',
      (t) =>
        t.trim() === 'The lock is taken by acquireWriterLock [1], which creates the lock file exclusively.',
    );
    const sources = await page.locator('#sources a').allTextContents();
    assert.ok(
      sources.length > 0 && sources.every((t) => /^\[\d+\] \S+:\d+-\d+$/.test(t)),
      sources.join(' | '),
    );
    assert.ok(
      sources.some((t) => t.includes('src/store/lock.ts')),
      'retrieval sent the lock code',
    );
    await page.locator('#sources a', { hasText: 'src/store/lock.ts' }).first().click();
    await waitText(page, '#file-title', /src\/store\/lock\.ts \(\d+ lines\)/);
  });

  it('changes a setting and writes it to quarry.toml', async () => {
    // the form shows the settings in force
    const end = Date.now() + 30_000;
    while ((await page.inputValue('[name="search.top_k"]')) === '' && Date.now() < end)
      await new Promise((r) => setTimeout(r, 100));
    assert.equal(await page.inputValue('[name="search.top_k"]'), '10');
    await page.fill('[name="search.top_k"]', '5');
    await page.selectOption('[name="context.packing"]', 'files');
    await page.click('#settings-form button');
    await waitText(page, '#settings-msg', /^saved$/);
    const toml = readFileSync(join(root, 'quarry.toml'), 'utf8');
    assert.match(toml, /top_k = 5/);
    assert.match(toml, /packing = "files"/);
    // a value out of range: the form refuses it before anything is sent (the API's own check is in server.test.ts)
    await page.fill('[name="search.top_k"]', '-3');
    await page.click('#settings-form button');
    assert.equal(
      await page.$eval(
        '[name="search.top_k"]',
        (el) => (el as unknown as { validity: { valid: boolean } }).validity.valid,
      ),
      false,
    );
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(readFileSync(join(root, 'quarry.toml'), 'utf8'), toml);
    await page.fill('[name="search.top_k"]', '5');
  });

  it('re-indexes on request and shows a saved file in the status', async () => {
    const before = Number(await page.textContent('#files'));
    await page.click('#reindex');
    await waitText(page, '#reindex-msg', /re-indexing|already running|up to date/);
    writeFileSync(
      join(root, 'src', 'brand_new_module.ts'),
      'export function brandNewThing(): number {\n  return 42;\n}\n',
    );
    await waitText(page, '#files', (t) => Number(t) > before);
    await page.fill('#q', 'brandNewThing');
    await page.click('#search-form button');
    await waitText(page, '#results .result a', /^src\/brand_new_module\.ts/);
    // the README's screenshot, taken on this real data (QUARRY_UPDATE_SCREENSHOT=1 writes it into docs/)
    const shot = process.env.QUARRY_UPDATE_SCREENSHOT
      ? join(REPO, 'docs', 'panel.png')
      : join(root, 'panel.png');
    await page.fill('#q', 'where is the writer lock taken');
    await page.click('#search-form button');
    await page.waitForSelector('#results .result a');
    await page.click('#results .result a');
    await page.waitForSelector('#file .hl');
    await page.screenshot({ path: shot });
    assert.ok(statSync(shot).size > 10_000);
  });

  it('renders the answer as sanitised markdown with highlighted code and citations that open their source', async () => {
    llm.reply = () =>
      '## Lock\n\nThe lock is **taken** by `acquireWriterLock` [1].\n\n```ts\nconst fd = openSync(path, "wx");\n```\n\n<img src="x" onerror="window.__pwned = 1"><script>window.__pwned = 2</script>\n';
    await page.fill('#question', 'how is the writer lock taken?');
    await page.click('#ask-form button');
    await waitText(page, '#answer h2', /^Lock$/);
    await waitText(page, '#answer', /const fd = openSync/);
    assert.equal(await page.textContent('#answer strong'), 'taken');
    assert.equal(await page.textContent('#answer p code'), 'acquireWriterLock');
    assert.ok((await page.locator('#answer pre code.hljs').count()) === 1, 'the code block is highlighted');
    assert.ok((await page.locator('#answer pre code .hljs-keyword').count()) > 0, 'with highlight.js spans');
    // the model's HTML is data: no handler, no script survives
    assert.equal(await page.locator('#answer script').count(), 0);
    assert.equal(await page.locator('#answer [onerror]').count(), 0);
    assert.equal(await page.evaluate('window.__pwned'), undefined);
    const cite = page.locator('#answer a.cite').first();
    assert.equal(await cite.textContent(), '[1]');
    await cite.click();
    await waitText(page, '#file-title', /\(\d+ lines\)/);
    assert.match(page.url(), /#.+:\d+(-\d+)?$/, 'the open file is in the URL');
  });

  it('shows a file as it is (tabs, long lines), an empty file box as such, and has a favicon (issue 65)', async () => {
    const fresh = await browser.newPage({ viewport: { width: 1000, height: 800 } });
    try {
      await fresh.goto(served.url);
      assert.equal(
        await fresh.evaluate(`getComputedStyle(document.getElementById('file'), '::before').content`),
        '"no file open"',
        'the empty file box says so, rather than showing a bare bar',
      );
      assert.match(
        (await fresh.getAttribute('link[rel="icon"]', 'href')) ?? '',
        /^data:image\/svg\+xml,<svg /,
      );
      await fresh.fill('#q', 'tabsProbe wraps a long line');
      await fresh.click('#search-form button');
      await fresh.locator('#results .result a', { hasText: 'probe/tabs.go' }).first().click();
      await waitText(fresh, '#file-title', /probe\/tabs\.go \(8 lines\)/);
      // where each line's code starts (its first character that is not a tab), the line number left out
      const starts = (await fresh.evaluate(`[3, 4, 5].map((n) => {
        const w = document.createTreeWalker(document.getElementById('L' + n), NodeFilter.SHOW_TEXT);
        for (let t; (t = w.nextNode()); ) {
          if (t.parentElement.closest('.ln')) continue;
          const i = t.textContent.search(/\\S/);
          if (i < 0) continue;
          const r = document.createRange(); r.setStart(t, i); r.setEnd(t, i + 1);
          return { left: r.getBoundingClientRect().left, width: r.getBoundingClientRect().width };
        }
      })`)) as Array<{ left: number; width: number }>;
      const [func, one, two] = starts as [(typeof starts)[0], (typeof starts)[0], (typeof starts)[0]];
      // each tab one stop of several columns: the first one too (it was eaten, the code's stops counted from the number)
      assert.ok(one.left - func.left > 2 * func.width, `one tab: ${one.left - func.left}px`);
      assert.ok(Math.abs(two.left - one.left - (one.left - func.left)) < 1, JSON.stringify(starts));
      // the long line wraps, in the file view and in the snippet: nothing is cut at the right edge
      for (const box of ['#file', '#results .result pre'])
        assert.ok(
          await fresh.evaluate(
            `(() => { const e = document.querySelector(${JSON.stringify(box)}); return e.scrollWidth <= e.clientWidth; })()`,
          ),
          `${box} is cut at its right edge`,
        );
    } finally {
      await fresh.close();
    }
  });

  it('keeps its state in the URL, goes to a definition from the file view, and works at 400 px', async () => {
    await page.fill('#q', 'acquireWriterLock');
    await page.click('#search-form button');
    await page.waitForSelector('#results .result a');
    assert.match(page.url(), /[?&]q=acquireWriterLock/);
    await page.click('#results .result a');
    await waitText(page, '#file-title', /src\/store\/lock\.ts/);
    const shared = page.url();
    assert.match(shared, /#src\/store\/lock\.ts:\d+/);

    // a shared link opens the same search and the same file, here in a narrow window
    const narrow = await browser.newPage({ viewport: { width: 400, height: 800 } });
    try {
      await narrow.goto(shared);
      await narrow.waitForSelector('#results .result a');
      await waitText(narrow, '#file-title', /src\/store\/lock\.ts \(\d+ lines\)/);
      assert.equal(await narrow.inputValue('#q'), 'acquireWriterLock');
      assert.ok((await narrow.locator('#file .hljs-keyword').count()) > 0, 'the file view is highlighted');
      // nothing wider than the window: no sideways scrolling of the page
      const width = await narrow.evaluate('document.documentElement.scrollWidth');
      assert.ok(Number(width) <= 400, `the page is ${width}px wide at 400px`);
      const shot = join(root, 'panel-400.png');
      await narrow.screenshot({ path: shot, fullPage: true });
      assert.ok(statSync(shot).size > 10_000);
      if (process.env.QUARRY_KEEP_SCREENSHOTS)
        cpSync(shot, join(process.env.QUARRY_KEEP_SCREENSHOTS, 'panel-400.png'));

      // double-click a name: its definitions and uses, as links
      const name = narrow.locator('#file span', { hasText: 'acquireWriterLock' }).first();
      await name.scrollIntoViewIfNeeded();
      await narrow.evaluate(`(() => {
        const line = [...document.querySelectorAll('#file > span')].find((s) => s.textContent.includes('function acquireWriterLock'));
        const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
        let node; while ((node = walker.nextNode())) { const i = node.textContent.indexOf('acquireWriterLock'); if (i >= 0) { const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 17); const sel = getSelection(); sel.removeAllRanges(); sel.addRange(r); break; } }
        document.getElementById('file').dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
      })()`);
      await waitText(narrow, '#xref', /acquireWriterLock defined: src\/store\/lock\.ts:\d+/);
      assert.ok((await narrow.locator('#xref a').count()) >= 2, 'a definition and a use');
    } finally {
      await narrow.close();
    }
  });
});
