import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pg from 'pg';
import { isQuarryError } from '../src/errors.ts';
import { indexProject, openProject } from '../src/project/local/index.ts';
import { openRemoteProject } from '../src/project/remote.ts';
import type { Project } from '../src/project/types.ts';
import { copyPolyglot, makeTree, removeTree, runCli, runCliAsync, spawnCli } from './helpers.ts';
import { freePort, startServer, type TestServer } from './store-servers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));
const oneLine = (s: string) => s.trim().split('\n').length === 1;

/** Starts `quarry serve` as a user would, and waits for the URL it prints. */
async function serve(args: string[], cwd: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawnCli(['serve', '--no-watch', ...args], { cwd });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /quarry panel: (\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.stderr!.on('data', (d) => {
      err += d;
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
  return { child, url };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

describe('a team index: two repositories in one PostgreSQL, served with per-repository tokens', () => {
  let pgServer: TestServer;
  let store: string;
  let rootA: string;
  let rootB: string;
  let cwd: string;
  let tokensFile: string;
  let tokenA = '';
  let tokenAll = '';
  let served: { child: ChildProcess; url: string };
  let port = 0;
  const base = () => `http://127.0.0.1:${port}`;

  before(async () => {
    pgServer = await startServer('postgres');
    store = pgServer.url;
    rootA = copyPolyglot(trees);
    rootB = makeTree({
      'billing/invoice.py':
        'def total_due(invoice):\n    """sum the lines of an invoice"""\n    return sum(l.amount for l in invoice.lines)\n',
      'billing/refund.py':
        'from billing.invoice import total_due\n\ndef refund(invoice):\n    return -total_due(invoice)\n',
    });
    trees.push(rootB);
    for (const [root, repo] of [
      [rootA, 'acme/a'],
      [rootB, 'acme/b'],
    ] as const) {
      const r = runCli(['index', root, '--store', store, '--repo', repo, '--no-embed', '--quiet']);
      assert.equal(r.code, 0, r.stderr);
    }
    // the server has no checkout of either: everything it serves comes from the store
    cwd = makeTree({});
    trees.push(cwd);
    tokensFile = join(mkdtempSync(join(tmpdir(), 'quarry-tokens-')), 'tokens.json');
    const a = runCli(['token', 'add', 'alice', 'acme/a', '--tokens', tokensFile]);
    assert.equal(a.code, 0, a.stderr);
    tokenA = a.stdout.trim();
    const all = runCli(['token', 'add', 'ci', '--all', '--reindex', '--tokens', tokensFile]);
    tokenAll = all.stdout.trim();
    port = await freePort();
    served = await serve(['--store', store, '--tokens', tokensFile, '--port', String(port)], cwd);
  });
  after(async () => {
    if (served) await stop(served.child);
    rmSync(join(tokensFile, '..'), { recursive: true, force: true });
    await pgServer?.dispose();
  });

  const api = async (path: string, token: string | null, init: RequestInit = {}) => {
    const res = await fetch(`${base()}${path}`, {
      ...init,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(init.body ? { 'content-type': 'application/json' } : {}),
      },
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('refuses to index another folder under a taken key, names both, and replaces only with --replace', async () => {
    // regression: indexing another project under acme/b printed "(… 465 deleted)", exit 0, and served its files
    const other = makeTree({ 'secret/notes.py': 'def other_project():\n    return 1\n' });
    trees.push(other);
    const refused = runCli(['index', other, '--store', store, '--repo', 'acme/b', '--no-embed', '--quiet']);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(
      refused.stderr,
      /^quarry: \S+#acme\/b holds .+ on .+, not this folder \(.+\): pass --repo NAME .* or --replace/m,
    );
    assert.equal(refused.stderr.trim().split('\n').length, 1);
    // the same key in other case is no new key (regression: `ACME/B` escaped this check); `acme/b.` is no name
    for (const twin of ['ACME/B', 'Acme/b']) {
      const r = runCli(['index', other, '--store', store, '--repo', twin, '--no-embed', '--quiet']);
      assert.equal(r.code, 2, r.stderr);
      assert.match(
        r.stderr,
        /^quarry: \S+ differs from the repository acme\/b only in case: use --repo acme\/b/m,
      );
    }
    assert.equal(
      runCli(['index', other, '--store', store, '--repo', 'acme/b.', '--no-embed', '--quiet']).code,
      2,
    );
    const search = runCli(['search', '--json', '--store', store, '--repo', 'acme/b', 'total_due'], { cwd });
    assert.equal(search.code, 0, search.stderr);
    assert.ok(
      JSON.parse(search.stdout).results.some((r: { path: string }) => r.path === 'billing/invoice.py'),
    );
    // the same folder again: an update, not a collision
    const again = runCli(['index', rootB, '--store', store, '--repo', 'acme/b', '--no-embed', '--quiet']);
    assert.equal(again.code, 0, again.stderr);
    // --replace on purpose, into a key of its own here so that the other tests keep acme/b
    assert.equal(
      runCli(['index', other, '--store', store, '--repo', 'acme/c', '--no-embed', '--quiet']).code,
      0,
    );
    const replaced = runCli([
      'index',
      rootB,
      '--store',
      store,
      '--repo',
      'acme/c',
      '--no-embed',
      '--quiet',
      '--replace',
    ]);
    assert.equal(replaced.code, 0, replaced.stderr);
    // repos rm takes the key's writer lock (regression: it removed the rows under a running indexer, which died on a
    // foreign key): refused while an indexer holds it, done once it is free
    const writer = await openProject({
      root: rootB,
      env: { QUARRY_STORE_URL: store, QUARRY_REPO: 'acme/c' },
    });
    const lock = await writer.store.acquireWriter();
    try {
      const busy = runCli(['repos', 'rm', 'acme/c', '--store', store], { cwd });
      assert.equal(busy.code, 4, busy.stderr);
      assert.match(
        busy.stderr,
        /^quarry: another quarry is indexing repository "acme\/c": wait for it, or run with --wait$/m,
      );
    } finally {
      await lock.release();
      await writer.close();
    }
    assert.equal(runCli(['repos', 'rm', 'acme/c', '--store', store], { cwd }).code, 0);
    // reset of a key in the shared store: its rows go, under the same lock (reset once took the lock, then rm's
    // own try for it would have failed)
    assert.equal(
      runCli(['index', other, '--store', store, '--repo', 'acme/d', '--no-embed', '--quiet']).code,
      0,
    );
    const reset = runCli(['--root', other, '--store', store, '--repo', 'acme/d', 'reset', '--yes']);
    assert.equal(reset.code, 0, reset.stderr);
    const left = JSON.parse(runCli(['repos', '--json', '--store', store], { cwd }).stdout).repos;
    assert.ok(!left.some((r: { name: string }) => r.name === 'acme/d'), JSON.stringify(left));
  });

  it('lists both repositories in the store, with their size and checkout', () => {
    const r = runCli(['repos', '--json', '--store', store], { cwd });
    assert.equal(r.code, 0, r.stderr);
    const repos = JSON.parse(r.stdout).repos as Array<{
      name: string;
      files: number;
      source: { root: string };
    }>;
    assert.deepEqual(
      repos.map((x) => [x.name, x.files]),
      [
        ['acme/a', 17],
        ['acme/b', 2],
      ],
    );
    assert.equal(repos[1]!.source.root, rootB);
    // from inside a checkout that has no index in this store (regression: exit 3), and searching all of them
    const checkout = makeTree({ '.git/HEAD': 'ref: refs/heads/main\n', 'x.py': 'x = 1\n' });
    trees.push(checkout);
    const inside = runCli(['repos', '--json', '--store', store], { cwd: checkout });
    assert.equal(inside.code, 0, inside.stderr);
    assert.deepEqual(
      JSON.parse(inside.stdout).repos.map((x: { name: string }) => x.name),
      ['acme/a', 'acme/b'],
    );
    const all = runCli(['search', '--all-repos', '--store', store, '--json', 'total_due'], { cwd: checkout });
    assert.equal(all.code, 0, all.stderr);
    assert.ok(JSON.parse(all.stdout).results.some((x: { path: string }) => x.path === 'billing/invoice.py'));
    assert.equal(
      JSON.parse(runCli(['token', 'list', '--json', '--tokens', tokensFile]).stdout).tokens.length,
      2,
    );
  });

  it('keeps tokens hashed, and a token for A never sees B: search, file view, context, route, MCP', async () => {
    const { readFileSync } = await import('node:fs');
    const file = readFileSync(tokensFile, 'utf8');
    assert.ok(!file.includes(tokenA) && !file.includes(tokenAll), 'only hashes are stored');

    assert.equal((await api('/api/repos', null)).status, 401);
    const bad = await api('/api/repos', 'qry_not-a-token');
    assert.equal(bad.status, 401);
    assert.match(String(bad.body.error), /not valid/);

    const mine = await api('/api/repos', tokenA);
    assert.deepEqual(
      (mine.body.repos as Array<{ name: string }>).map((r) => r.name),
      ['acme/a'],
    );
    // where a repository was indexed from (the server's disk, its host name) only to a token that may re-index
    assert.equal((mine.body.repos as Array<{ source: unknown }>)[0]!.source, null);
    const everything = await api('/api/repos', tokenAll);
    const a = (everything.body.repos as Array<{ name: string; source: { root: string } | null }>).find(
      (r) => r.name === 'acme/a',
    );
    assert.ok(a?.source?.root, 'a re-indexing token sees the checkout');
    const hidden = await api('/api/search?q=invoice&repo=acme/b', tokenA);
    const unknown = await api('/api/search?q=invoice&repo=acme/zzz', tokenA);
    assert.equal(hidden.status, 404);
    // a repository the token may not see reads exactly like one that does not exist
    assert.equal(
      String(hidden.body.error).replace('acme/b', 'X'),
      String(unknown.body.error).replace('acme/zzz', 'X'),
    );
    assert.equal((await api('/api/file?repo=acme/b&path=billing/invoice.py', tokenA)).status, 404);
    assert.equal(
      (
        await api('/api/context', tokenA, {
          method: 'POST',
          body: JSON.stringify({ repo: 'acme/b', question: 'refund' }),
        })
      ).status,
      404,
    );
    assert.equal(
      (
        await api('/api/route', tokenA, {
          method: 'POST',
          body: JSON.stringify({ repo: 'acme/b', question: 'where is refund defined' }),
        })
      ).status,
      404,
    );
    // "every repository" means every one this token may see
    const everywhere = await api('/api/search?q=invoice%20total&repo=*', tokenA);
    assert.equal(everywhere.status, 200);
    assert.ok((everywhere.body.results as Array<{ repo?: string }>).every((r) => r.repo !== 'acme/b'));
    // the token without the right to re-index
    assert.equal((await api('/api/reindex', tokenA, { method: 'POST', body: '{}' })).status, 403);

    // the same over MCP, on the same port and tokens
    const client = new McpClient({ name: 'test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${base()}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tokenA}` } },
      }),
    );
    try {
      const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0]!.text;
      /** Asks for the answer's facts as structured content, as quarry's own remote client does. */
      const STRUCTURED = { 'quarry/structured': true };
      // biome-ignore lint/suspicious/noExplicitAny: tests read fields of the answer
      const dataOf = (r: unknown): any => (r as { structuredContent: unknown }).structuredContent;
      const repos = dataOf(await client.callTool({ name: 'list_repos', arguments: {}, _meta: STRUCTURED }));
      assert.deepEqual(
        repos.repos.map((r: { name: string }) => r.name),
        ['acme/a'],
      );
      const denied = (await client.callTool({
        name: 'search_code',
        arguments: { query: 'invoice', repo: 'acme/b' },
      })) as { isError?: boolean };
      assert.equal(denied.isError, true);
      assert.match(text(denied), /no repository "acme\/b"/);
      const read = (await client.callTool({
        name: 'read_file',
        arguments: { path: 'billing/invoice.py', repo: 'acme/b' },
      })) as { isError?: boolean };
      assert.equal(read.isError, true);
      const ok = text(
        await client.callTool({ name: 'search_code', arguments: { query: 'registry register' } }),
      );
      assert.match(ok, /lib\.rs/);
    } finally {
      await client.close();
    }

    // without a token the MCP endpoint is closed too
    const noToken = await fetch(`${base()}/mcp`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(noToken.status, 401);
  });

  it('serves files and context from the store alone (no checkout on the server)', async () => {
    const file = await api('/api/file?repo=acme/b&path=billing/invoice.py&start=1&end=2', tokenAll);
    assert.equal(file.status, 200, JSON.stringify(file.body));
    assert.deepEqual(file.body.lines, ['def total_due(invoice):', '    """sum the lines of an invoice"""']);
    const ctx = await api('/api/context', tokenAll, {
      method: 'POST',
      body: JSON.stringify({ repo: 'acme/b', question: 'how is a refund computed?', budget: 2000 }),
    });
    assert.equal(ctx.status, 200);
    assert.match(String(ctx.body.user), /return -total_due\(invoice\)/);
  });

  it('a second quarry with --remote: ask --dry-run equals the local one; search spans repositories', () => {
    const question = 'how does the registry register names?';
    const local = runCli(['ask', '--dry-run', '--store', store, '--repo', 'acme/a', question], {
      cwd: rootA,
    });
    assert.equal(local.code, 0, local.stderr);
    const remoteUrl = `${base()}/?token=${tokenAll}`;
    const remote = runCli(['--remote', remoteUrl, '--repo', 'acme/a', 'ask', '--dry-run', question], { cwd });
    assert.equal(remote.code, 0, remote.stderr);
    assert.equal(remote.stdout, local.stdout);
    assert.match(remote.stdout, /\[1\] lib\.rs:/);

    const both = runCli(['--remote', remoteUrl, 'search', '--all-repos', '--json', 'invoice registry'], {
      cwd,
    });
    assert.equal(both.code, 0, both.stderr);
    const repos = new Set((JSON.parse(both.stdout).results as Array<{ repo: string }>).map((r) => r.repo));
    assert.deepEqual([...repos].sort(), ['acme/a', 'acme/b']);

    const def = runCli(['--remote', remoteUrl, '--repo', 'acme/b', 'def', 'total_due'], { cwd });
    assert.match(def.stdout, /billing\/invoice\.py:1-3/);

    // bad token, unknown repository: one line each, with an exit code of its own
    const wrong = runCli(['--remote', `${base()}/?token=nope`, 'search', 'x'], { cwd });
    assert.equal(wrong.code, 10, wrong.stderr);
    assert.ok(oneLine(wrong.stderr), wrong.stderr);
    const unknown = runCli(['--remote', remoteUrl, '--repo', 'acme/nope', 'search', 'x'], { cwd });
    assert.equal(unknown.code, 2, unknown.stderr);
    assert.ok(oneLine(unknown.stderr), unknown.stderr);
    assert.match(unknown.stderr, /no repository "acme\/nope"/);
  });

  it('a second quarry with --remote over MCP (the same /mcp endpoint) gives the same prompt and results', () => {
    const question = 'how does the registry register names?';
    const local = runCli(['ask', '--dry-run', '--store', store, '--repo', 'acme/a', question], {
      cwd: rootA,
    });
    const viaMcp = runCli(
      ['--remote', `${base()}/mcp?token=${tokenAll}`, '--repo', 'acme/a', 'ask', '--dry-run', question],
      {
        cwd,
      },
    );
    assert.equal(viaMcp.code, 0, viaMcp.stderr);
    assert.equal(viaMcp.stdout, local.stdout);
    const search = runCli(
      ['--remote', `${base()}/mcp?token=${tokenA}`, 'search', '--json', 'registry register'],
      { cwd },
    );
    assert.equal(search.code, 0, search.stderr);
    assert.equal(JSON.parse(search.stdout).results[0].path, 'lib.rs');
    const hidden = runCli(
      ['--remote', `${base()}/mcp?token=${tokenA}`, '--repo', 'acme/b', 'search', 'invoice'],
      { cwd },
    );
    assert.equal(hidden.code, 2, hidden.stderr);
    assert.ok(oneLine(hidden.stderr), hidden.stderr);
  });

  it('the panel picks a repository and searches across them, within the token', async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({
      executablePath: process.env.QUARRY_CHROMIUM ?? '/usr/bin/chromium',
      args: ['--no-sandbox'],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(`${base()}/?token=${tokenAll}`);
      await page.waitForSelector('#repo:not([hidden])');
      const options = await page.evaluate(
        `[...document.querySelectorAll('#repo option')].map((o) => o.value)`,
      );
      assert.deepEqual(options, ['acme/a', 'acme/b', '*']);
      await page.selectOption('#repo', 'acme/b');
      await page.waitForFunction(`document.getElementById('files').textContent === '2'`);
      await page.selectOption('#repo', '*');
      await page.fill('#q', 'invoice registry');
      await page.click('#search-form button');
      await page.waitForSelector('#results .result');
      const links = (await page.evaluate(
        `[...document.querySelectorAll('#results a')].map((a) => a.textContent)`,
      )) as string[];
      assert.ok(
        links.some((l) => l.startsWith('acme/a: ')) && links.some((l) => l.startsWith('acme/b: ')),
        links.join('|'),
      );
      // a result of B opens B's file, from the store
      await page.click('#results a[data-repo="acme/b"]');
      await page.waitForFunction(`/total_due/.test(document.getElementById('file').textContent)`);
      await page.screenshot({ path: join(tmpdir(), 'quarry-team-panel.png') });

      // with A's token the picker is gone: one repository
      const pageA = await browser.newPage();
      await pageA.goto(`${base()}/?token=${tokenA}`);
      await pageA.waitForFunction(`document.getElementById('files').textContent === '17'`);
      assert.equal(await pageA.evaluate(`document.getElementById('repo').hidden`), true);
    } finally {
      await browser.close();
    }
  });

  it('the remote project survives the server restarting, and says so in one line while it is down', async () => {
    const project: Project = await openRemoteProject({ url: base(), token: tokenAll, repo: 'acme/b' });
    assert.equal((await project.search('refund')).results[0]?.path, 'billing/refund.py');
    await stop(served.child);
    await assert.rejects(project.search('refund'), (err) => {
      assert.ok(isQuarryError(err) && err.code === 'REMOTE');
      assert.match(err.message, /cannot reach quarry at .*is `quarry serve` running/);
      return true;
    });
    const down = await runCliAsync(['--remote', `${base()}/?token=${tokenAll}`, 'search', 'x'], { cwd });
    assert.equal(down.code, 11, down.stderr);
    assert.ok(oneLine(down.stderr), down.stderr);
    served = await serve(['--store', store, '--tokens', tokensFile, '--port', String(port)], cwd);
    assert.equal((await project.search('refund')).results[0]?.path, 'billing/refund.py');
  });

  it('removes a repository with every row of it', async () => {
    const r = runCli(['repos', 'rm', 'acme/b', '--store', store], { cwd });
    assert.equal(r.code, 0, r.stderr);
    const client = new pg.Client({ connectionString: store });
    await client.connect();
    try {
      const left = await client.query(
        `SELECT (SELECT count(*) FROM quarry_repos WHERE name = 'acme/b') AS repos,
                (SELECT count(*) FROM quarry_postings p WHERE NOT EXISTS (SELECT 1 FROM quarry_repos r WHERE r.id = p.repo)) AS postings,
                (SELECT count(*) FROM quarry_file_text) AS texts,
                (SELECT count(*) FROM quarry_files WHERE method <> 'skipped') AS readable,
                (SELECT count(*) FROM quarry_files) AS files`,
      );
      assert.equal(Number(left.rows[0].repos), 0);
      assert.equal(Number(left.rows[0].postings), 0);
      // A's files keep their text, B's went with it
      assert.equal(Number(left.rows[0].texts), Number(left.rows[0].readable));
      assert.equal(Number(left.rows[0].files), 17);
    } finally {
      await client.end();
    }
    const again = runCli(['repos', 'rm', 'acme/b', '--store', store], { cwd });
    assert.equal(again.code, 2, again.stderr);
    assert.ok(oneLine(again.stderr));
  });
});

describe('the shared embedding cache', () => {
  it('a second clone, or the repository moved to PostgreSQL or Chroma, re-embeds nothing the first one embedded', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'quarry-shared-cache-'));
    trees.push(cacheDir);
    const env = {
      ...process.env,
      QUARRY_SHARED_CACHE: 'on',
      QUARRY_SHARED_CACHE_PATH: join(cacheDir, 'embeddings.db'),
    };
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      const reports = [];
      for (let i = 0; i < 2; i++) {
        const project = await openProject({
          root: copyPolyglot(trees),
          create: true,
          userConfig: false,
          env,
        });
        try {
          reports.push((await indexProject(project)).embedding!);
        } finally {
          await project.close();
        }
      }
      assert.ok(reports[0]!.embedded > 0);
      assert.equal(reports[1]!.embedded, 0, 'the second clone found every vector in the shared cache');
      assert.equal(reports[1]!.fromCache, reports[0]!.embedded + reports[0]!.fromCache);
      // the same repository moved to PostgreSQL and to Chroma embeds nothing either (regression: PostgreSQL
      // re-embedded 2,683 of 2,704 texts this machine's cache held)
      for (const kind of ['postgres', 'chroma'] as const) {
        const server = await startServer(kind);
        try {
          const moved = await openProject({
            root: copyPolyglot(trees),
            create: true,
            userConfig: false,
            env,
            overrides: { store: { url: server.url, repo: 'acme/moved' } },
          });
          try {
            const r = (await indexProject(moved)).embedding!;
            assert.equal(r.embedded, 0, `${kind}: every vector came from this machine's cache`);
            assert.equal(r.fromCache, reports[0]!.embedded + reports[0]!.fromCache);
          } finally {
            await moved.close();
          }
        } finally {
          await server.dispose();
        }
      }
      // off: the second clone embeds again
      const off = await openProject({
        root: copyPolyglot(trees),
        create: true,
        userConfig: false,
        env: { ...env, QUARRY_SHARED_CACHE: 'off' },
      });
      try {
        assert.ok((await indexProject(off)).embedding!.embedded > 0);
      } finally {
        await off.close();
      }
    } finally {
      process.env = saved;
    }
  });
});
