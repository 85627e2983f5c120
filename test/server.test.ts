import assert from 'node:assert/strict';
import { readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Served, startServer } from '../src/server/http.ts';
import { acquireWriterLock } from '../src/store/lock.ts';
import { indexPaths } from '../src/workspace/root.ts';
import { indexLexically, makeTree, removeTree, trustProjectFile } from './helpers.ts';
import { type LlmServer, startLlmServer } from './llm-server.ts';

/** A raw HTTP request, so that Host and Origin can be anything. */
function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: options.method ?? 'GET',
        headers: options.headers,
      },
      (res) => {
        let body = '';
        res.on('data', (d) => {
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

describe('quarry serve: the HTTP API', () => {
  let root: string;
  let outside: string;
  let served: Served;
  let base: string;
  let llm: LlmServer;
  before(async () => {
    llm = await startLlmServer();
    outside = makeTree({ 'secret.txt': 'TOP SECRET\n' });
    root = makeTree({
      'src/store.py': 'def save_record(r):\n    """write a record"""\n    return r\n',
      'src/linked.py': 'X = 1\n',
      'quarry.toml': `[llm]\nmodel = "lmstudio:qwen2.5-coder-7b-instruct"\nbase_url = "${llm.url}/v1"\n`,
    });
    trustProjectFile(root);
    symlinkSync(join(outside, 'secret.txt'), join(root, 'src', 'escape.txt'));
    await indexLexically(root);
    served = await startServer({ root, watch: false });
    base = served.url.replace(/\/$/, '');
  });
  after(async () => {
    await served.close();
    await llm.close();
    removeTree(root);
    removeTree(outside);
  });

  it('serves status, search and a file view with a line range', async () => {
    const status = JSON.parse((await raw(`${base}/api/status`)).body);
    assert.equal(status.files, 3);
    const search = JSON.parse((await raw(`${base}/api/search?q=save_record&k=3`)).body);
    assert.equal(search.results[0].path, 'src/store.py');
    const file = JSON.parse((await raw(`${base}/api/file?path=src/store.py&start=2&end=3`)).body);
    assert.deepEqual(file.lines, ['    """write a record"""', '    return r']);
    assert.equal(file.total, 3);
    const bad = await raw(`${base}/api/search?q=`);
    assert.equal(bad.status, 400);
    assert.match(JSON.parse(bad.body).error, /q is empty/);
  });

  it('never serves a path outside the indexed files: traversal, encodings, absolute paths, symlinks', async () => {
    for (const p of [
      '../../etc/passwd',
      '..%2F..%2Fetc%2Fpasswd',
      '%2e%2e/%2e%2e/etc/passwd',
      'src/../../etc/passwd',
      '/etc/passwd',
      'src%5C..%5C..%5Cetc%5Cpasswd',
      'src/escape.txt',
      `..%2F${encodeURIComponent(outside.split('/').pop()!)}%2Fsecret.txt`,
    ]) {
      const r = await raw(`${base}/api/file?path=${p}`);
      assert.ok(r.status >= 400 && r.status < 500, `${p} gave ${r.status}`);
      assert.doesNotMatch(r.body, /TOP SECRET|root:/);
    }
    // an indexed file replaced by a link to outside the root
    rmSync(join(root, 'src', 'linked.py'));
    symlinkSync(join(outside, 'secret.txt'), join(root, 'src', 'linked.py'));
    const r = await raw(`${base}/api/file?path=src/linked.py`);
    assert.equal(r.status, 403);
    assert.doesNotMatch(r.body, /TOP SECRET/);
  });

  it('refuses a wrong Host header, a cross-origin POST, and a POST that is not JSON', async () => {
    const port = new URL(base).port;
    assert.equal(
      (await raw(`${base}/api/status`, { headers: { host: `evil.example:${port}` } })).status,
      403,
    );
    assert.equal((await raw(`${base}/`, { headers: { host: 'attacker.test' } })).status, 403);
    const cross = await raw(`${base}/api/reindex`, {
      method: 'POST',
      headers: { origin: 'https://evil.example', 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(cross.status, 403);
    const form = await raw(`${base}/api/reindex`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=1',
    });
    assert.equal(form.status, 415);
    const same = await raw(`${base}/api/reindex`, {
      method: 'POST',
      headers: { origin: base, 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(same.status, 202);
  });

  it('validates and writes settings to quarry.toml, and refuses bad ones without touching the file', async () => {
    const ok = await raw(`${base}/api/settings`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ search: { top_k: 7 }, context: { packing: 'files' } }),
    });
    assert.equal(ok.status, 200, ok.body);
    const toml = readFileSync(join(root, 'quarry.toml'), 'utf8');
    assert.match(toml, /top_k = 7/);
    assert.match(toml, /packing = "files"/);
    assert.match(toml, /model = "lmstudio:qwen2.5-coder-7b-instruct"/, 'other settings kept');
    const s = JSON.parse((await raw(`${base}/api/settings`)).body);
    assert.equal(s.effective.search.top_k, 7);
    const bad = await raw(`${base}/api/settings`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ context: { packing: 'everything' } }),
    });
    assert.equal(bad.status, 400);
    assert.match(JSON.parse(bad.body).error, /context\.packing must be "files" or "chunks"/);
    assert.equal(readFileSync(join(root, 'quarry.toml'), 'utf8'), toml);
  });

  it('streams an answer with its sources over server-sent events', async () => {
    llm.reply = () => 'It is saved by save_record [1].';
    const r = await raw(`${base}/api/ask`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'how is a record saved?' }),
    });
    assert.equal(r.status, 200);
    assert.match(String(r.headers['content-type']), /text\/event-stream/);
    const events = r.body
      .split('\n\n')
      .filter(Boolean)
      .map((b) => ({ event: /^event: (.*)$/m.exec(b)?.[1], data: /^data: (.*)$/m.exec(b)?.[1] ?? '' }));
    const sources = JSON.parse(events.find((e) => e.event === 'sources')!.data);
    assert.ok(sources.some((s: { path: string }) => s.path === 'src/store.py'));
    const answer = events
      .filter((e) => e.event === 'token')
      .map((e) => JSON.parse(e.data))
      .join('');
    assert.equal(answer, 'It is saved by save_record [1].');
    assert.equal(events.at(-1)!.event, 'done');
  });

  it('a second re-index while one runs reports the running one', async () => {
    const post = () =>
      raw(`${base}/api/reindex`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
    // the re-index the server started with is over
    for (let i = 0; i < 600 && JSON.parse((await raw(`${base}/api/status`)).body).reindexing; i++)
      await new Promise((r) => setTimeout(r, 100));
    // another writer holds the index, so the first re-index waits for it and is still running when the second comes
    const lock = await acquireWriterLock(indexPaths(root).lock, { waitMs: 30_000 });
    try {
      const a = JSON.parse((await post()).body);
      const b = JSON.parse((await post()).body);
      assert.equal(a.started, true);
      assert.equal(b.started, false);
      assert.equal(b.startedAt, a.startedAt);
      const status = JSON.parse((await raw(`${base}/api/status`)).body);
      assert.equal(status.reindexing.startedAt, a.startedAt);
    } finally {
      lock.release();
    }
  });
});

describe('quarry serve on a non-loopback address', () => {
  it('requires the token on every API call', async () => {
    const root = makeTree({ 'a.py': 'A = 1\n' });
    await indexLexically(root);
    const served = await startServer({ root, host: '0.0.0.0', watch: false });
    try {
      assert.ok(served.token && served.token.length >= 20);
      const port = new URL(served.url).port;
      const no = await raw(`http://127.0.0.1:${port}/api/status`);
      assert.equal(no.status, 401);
      const wrong = await raw(`http://127.0.0.1:${port}/api/status`, {
        headers: { 'x-quarry-token': 'nope' },
      });
      assert.equal(wrong.status, 401);
      const yes = await raw(`http://127.0.0.1:${port}/api/status`, {
        headers: { 'x-quarry-token': served.token! },
      });
      assert.equal(yes.status, 200);
      writeFileSync(join(root, 'b.py'), 'B = 2\n');
    } finally {
      await served.close();
      removeTree(root);
    }
  });
});
