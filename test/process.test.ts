// How quarry's long-running processes start and stop: a folder that is no project is refused (an agent that starts
// `quarry mcp` in the home folder must not index it), start-up errors exit at once and leave nothing running, and a
// stop signal ends a server while it is still indexing.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, statSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { bigTree, makeTree, removeTree, runCliAsync, spawnCli, writeFiles } from './helpers.ts';

const trees: string[] = [];
after(() => {
  for (const t of trees) removeTree(t);
});

function emptyFolder(): string {
  const dir = makeTree({ 'notes.txt': 'not a project\n' });
  trees.push(dir);
  return dir;
}

test('serve, mcp and watch refuse a folder that is no project: exit 3, one line, nothing created', async () => {
  const dir = emptyFolder();
  for (const args of [['serve', '--port', '0'], ['mcp'], ['mcp', '--http'], ['watch']]) {
    const r = await runCliAsync(args, { cwd: dir });
    assert.equal(r.code, 3, `${args.join(' ')}: ${r.stderr}`);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, /no quarry project at or above .*--init/);
    assert.equal(existsSync(join(dir, '.quarry')), false, `${args.join(' ')} created .quarry/`);
  }
});

test('a bad port is refused at once with exit 2, before anything is opened', async () => {
  const dir = emptyFolder();
  writeFiles(dir, { '.git/HEAD': 'ref: refs/heads/main\n', 'a.ts': 'export const a = 1;\n' });
  for (const args of [
    ['serve', '--port', '99999'],
    ['serve', '--port', '-1'],
    ['serve', '--port', 'abc'],
    ['mcp', '--http', '--port', '70000'],
  ]) {
    const r = await runCliAsync(args, { cwd: dir });
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /expected a port: a whole number from 1 to 65535/);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
  assert.equal(existsSync(join(dir, '.quarry')), false);
});

test('a busy port: serve and mcp --http exit 6 at once with one line, index nothing, leave nothing running', async () => {
  const dir = makeTree({});
  trees.push(dir);
  writeFiles(dir, { '.git/HEAD': 'ref: refs/heads/main\n', 'a.ts': 'export const a = 1;\n' });
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as { port: number }).port;
  try {
    for (const args of [
      ['serve', '--port', String(port), '--no-watch'],
      ['mcp', '--http', '--port', String(port), '--no-watch'],
    ]) {
      const r = await runCliAsync(args, { cwd: dir });
      assert.equal(r.code, 6, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is in use`));
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.doesNotMatch(r.stderr, /internal error|EADDRINUSE|at /);
    }
    assert.equal(existsSync(join(dir, '.quarry')), false, 'the busy port left an index behind');
  } finally {
    blocker.close();
  }
});

/** Starts `quarry serve` and resolves with its URL once it prints it. */
function startServe(args: string[], cwd: string) {
  const child = spawnCli(['serve', '--port', '0', ...args], { cwd });
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  const url = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /quarry panel: (http:\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.on('close', (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
  });
  const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  return { child, url, exited, stderr: () => stderr };
}

test('serve --init starts an index in a new folder; SIGTERM while it indexes ends it within seconds', async () => {
  const dir = bigTree(1500, trees);
  const s = startServe(['--init', '--no-watch'], dir);
  const url = await s.url;
  assert.ok(existsSync(join(dir, '.quarry')), 'serve --init made no index');
  const status = (await (await fetch(new URL('/api/status', url))).json()) as { root: string };
  assert.equal(status.root, dir);
  const t0 = performance.now();
  s.child.kill('SIGTERM');
  const code = await s.exited;
  const took = performance.now() - t0;
  assert.equal(code, 0, s.stderr());
  // the bound is generous on a shared machine; before, the server finished the whole index run first
  assert.ok(took < 15_000, `serve took ${took.toFixed(0)} ms to stop`);
});

test('PUT /api/settings with __proto__ is refused, pollutes nothing and writes no file (regression: prototype pollution)', async () => {
  const dir = makeTree({ '.git/HEAD': 'ref: refs/heads/main\n', 'a.ts': 'export const alpha = 1;\n' });
  trees.push(dir);
  const s = startServe(['--no-watch'], dir);
  const url = await s.url;
  try {
    for (const body of ['{"__proto__":{"polluted":1}}', '{"search":{"__proto__":{"polluted":1}}}']) {
      const r = await fetch(new URL('/api/settings', url), {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body,
      });
      assert.equal(r.status, 400, await r.text());
    }
    assert.equal(existsSync(join(dir, 'quarry.toml')), false, 'a refused change wrote quarry.toml');
    // every route still answers
    const st = await fetch(new URL('/api/status', url));
    assert.equal(st.status, 200);
    const ok = await fetch(new URL('/api/settings', url), {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"search":{"top_k":7}}',
    });
    assert.equal(ok.status, 200, await ok.text());
    const toml = readFileSync(join(dir, 'quarry.toml'), 'utf8');
    assert.match(toml, /top_k = 7/);
    assert.doesNotMatch(toml, /polluted|model|provider/);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});

test('a search in a checkout with a running serve asks it, with the same answer; the note goes when the server stops', async () => {
  const dir = makeTree({
    '.git/HEAD': 'ref: refs/heads/main\n',
    'src/lock.ts': 'export function takeWriterLock(path: string) {\n  return path;\n}\n',
    'src/other.ts': 'export const unrelated = 1;\n',
  });
  trees.push(dir);
  const s = startServe(['--no-watch'], dir);
  await s.url;
  const note = join(dir, '.quarry', 'server.json');
  try {
    const announced = JSON.parse(readFileSync(note, 'utf8')) as { pid: number; url: string; repo: string };
    assert.equal(announced.pid, s.child.pid);
    assert.equal(typeof announced.repo, 'string');
    // the owner's only: `quarry mcp --http` writes its token in it
    if (process.platform !== 'win32') assert.equal(statSync(note).mode & 0o777, 0o600);
    // its answers say that it redacted them, so the search here prints them as they come
    const api = (await (await fetch(`${announced.url}/api/search?q=writer+lock`)).json()) as {
      redacted?: boolean;
    };
    assert.equal(api.redacted, true);
    const asked = await runCliAsync(['--verbose', 'search', '--json', 'writer lock'], { cwd: dir });
    assert.equal(asked.code, 0, asked.stderr);
    assert.match(asked.stderr, /asking the running server at http:\/\/127\.0\.0\.1:\d+/);
    // a lexical search asks it too: its index is open and warm
    const lexical = await runCliAsync(['--verbose', 'search', '--mode', 'lexical', '--json', 'writer lock'], {
      cwd: dir,
    });
    assert.equal(lexical.code, 0, lexical.stderr);
    assert.match(lexical.stderr, /asking the running server/);
    const here = await runCliAsync(['--verbose', 'search', '--no-server', '--json', 'writer lock'], {
      cwd: dir,
    });
    assert.doesNotMatch(here.stderr, /asking the running server/);
    const paths = (out: string) =>
      (JSON.parse(out).results as Array<{ path: string; startLine: number }>).map(
        (r) => `${r.path}:${r.startLine}`,
      );
    assert.deepEqual(paths(asked.stdout), paths(here.stdout));
    assert.equal(paths(asked.stdout)[0], 'src/lock.ts:1');
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
  assert.equal(existsSync(note), false, 'the server left its note behind');
  const after = await runCliAsync(['--verbose', 'search', 'writer lock'], { cwd: dir });
  assert.equal(after.code, 0, after.stderr);
  assert.doesNotMatch(after.stderr, /asking the running server/);
});

test('a server note that came with the repository is not followed: a checked-out file, or a server not on this machine (issue 63)', async () => {
  const dir = makeTree({
    '.git/HEAD': 'ref: refs/heads/main\n',
    'src/lock.ts': 'export function takeWriterLock(path: string) {\n  return path;\n}\n',
  });
  trees.push(dir);
  assert.equal((await runCliAsync(['index'], { cwd: dir })).code, 0);
  const asked: string[] = [];
  const server = createHttpServer((req, res) => {
    asked.push(`${req.url} ${req.headers.authorization ?? ''}`);
    res.writeHead(500);
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const note = (u: string) =>
    writeFiles(dir, {
      '.quarry/server.json': JSON.stringify({
        pid: process.pid,
        url: u,
        kind: 'serve',
        repo: 'x',
        startedAt: '',
      }),
    });
  try {
    // as a clone leaves it (0644), and the owner's file naming a server elsewhere
    for (const [u, mode] of [
      [url, 0o644],
      ['http://203.0.113.9:7411', 0o600],
    ] as const) {
      note(u);
      chmodSync(join(dir, '.quarry', 'server.json'), mode);
      const r = await runCliAsync(['--verbose', 'search', '--json', 'writer lock'], {
        cwd: dir,
        env: { QUARRY_TOKEN: 'tok' },
      });
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stderr, /asking the running server/);
    }
    assert.deepEqual(asked, []);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('a search whose announced server does not answer runs here, with the same answer', async () => {
  const dir = makeTree({
    '.git/HEAD': 'ref: refs/heads/main\n',
    'src/lock.ts': 'export function takeWriterLock(path: string) {\n  return path;\n}\n',
  });
  trees.push(dir);
  const indexed = await runCliAsync(['index'], { cwd: dir });
  assert.equal(indexed.code, 0, indexed.stderr);
  const first = await runCliAsync(['search', '--json', 'writer lock'], { cwd: dir });
  assert.equal(first.code, 0, first.stderr);
  // a port nobody listens on, announced by a process that runs (this one): the note names the repository, so the
  // search is sent there first and fails to connect
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const p = (probe.address() as { port: number }).port;
      probe.close(() => resolve(p));
    });
  });
  writeFiles(dir, {
    '.quarry/server.json': JSON.stringify({
      pid: process.pid,
      url: `http://127.0.0.1:${port}`,
      kind: 'serve',
      repo: 'gone',
      startedAt: new Date().toISOString(),
    }),
  });
  chmodSync(join(dir, '.quarry', 'server.json'), 0o600); // as a server writes it
  const r = await runCliAsync(['--verbose', 'search', '--json', 'writer lock'], { cwd: dir });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /asking the running server/);
  assert.match(
    r.stderr,
    /cannot reach quarry at http:\/\/127\.0\.0\.1:\d+\/ \(ECONNREFUSED\).*: searching here instead/,
  );
  assert.deepEqual(JSON.parse(r.stdout).results, JSON.parse(first.stdout).results);
});

test('an answer from another quarry is redacted here, unless the answer says it was redacted there', async () => {
  const dir = makeTree({ '.git/HEAD': 'ref: refs/heads/main\n', 'src/settings.py': 'REGION = "eu"\n' });
  trees.push(dir);
  // an older quarry, whose answers may hold a secret as written and do not say whether they were redacted: a real
  // HTTP server on 127.0.0.1 answering quarry's search API, announced for this checkout as a running serve is
  const key = 'AKIAZ7QX4RTPL2MNB8VW';
  const snippet = `AWS_ACCESS_KEY_ID = "${key}"`;
  const answer = {
    query: 'aws key',
    mode: 'lexical',
    results: [
      {
        path: 'src/settings.py',
        startLine: 1,
        endLine: 1,
        symbol: null,
        kind: null,
        score: 1,
        snippet,
        snippetLine: 1,
        line: 1,
        column: 1,
        signals: { lexical: 1, fileLexical: 0, fileHint: 0, symbolHint: 0, dense: 0 },
        chunkId: 1,
      },
    ],
    files: [{ path: 'src/settings.py', score: 1 }],
    tookMs: 1,
  };
  const asked: string[] = [];
  let redactedThere = false;
  const server = createHttpServer((req, res) => {
    asked.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(redactedThere ? { ...answer, redacted: true } : answer));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  writeFiles(dir, {
    '.quarry/server.json': JSON.stringify({
      pid: process.pid,
      url,
      kind: 'serve',
      repo: 'settings',
      startedAt: new Date().toISOString(),
    }),
  });
  chmodSync(join(dir, '.quarry', 'server.json'), 0o600); // as a server writes it
  try {
    const older = await runCliAsync(['search', '--json', 'aws key'], { cwd: dir });
    assert.equal(older.code, 0, older.stderr);
    const shown = JSON.parse(older.stdout).results[0].snippet as string;
    assert.doesNotMatch(shown, new RegExp(key));
    assert.match(shown, /REDACTED/);
    // an answer that says it was redacted there (every `quarry serve` of this version says so when its settings
    // redact) is printed as it comes
    redactedThere = true;
    const trusted = await runCliAsync(['search', '--json', 'aws key'], { cwd: dir });
    assert.equal(trusted.code, 0, trusted.stderr);
    assert.equal(JSON.parse(trusted.stdout).results[0].snippet, snippet);
    assert.equal(asked.length, 2);
    assert.match(asked[0]!, /^\/api\/search\?/);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test('a request body over 4 MiB is refused with 413 as it arrives, and the server keeps answering (regression: no body limit)', async () => {
  const dir = makeTree({ '.git/HEAD': 'ref: refs/heads/main\n', 'a.ts': 'export const alpha = 1;\n' });
  trees.push(dir);
  const s = startServe(['--no-watch'], dir);
  const url = await s.url;
  try {
    const big = JSON.stringify({ question: 'x'.repeat(50 * 1024 * 1024) });
    const r = await fetch(new URL('/api/context', url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: big,
    });
    assert.equal(r.status, 413);
    assert.match(((await r.json()) as { error: string }).error, /request body over 4 MiB/);
    // without a length up front: refused once 4 MiB have come
    const chunk = new TextEncoder().encode('x'.repeat(1024 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 50) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const streamed = await fetch(new URL('/api/context', url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    assert.equal(streamed.status, 413);
    assert.ok(sent < 50, `the server read all ${sent} MiB before refusing`);
    const ok = await fetch(new URL('/api/status', url));
    assert.equal(ok.status, 200);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});
