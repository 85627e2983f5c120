// Concurrency soak: for a while, one process keeps re-indexing a changing tree, a `quarry watch` follows the same
// files, a second `quarry index` tries to write now and then, 8 processes search in loops, a `quarry serve` answers
// HTTP searches while the panel's re-index is pressed every few seconds, and a `quarry mcp` client searches and
// calls its `reindex` tool in a loop.
//   node --import tsx bench/concurrency.ts [--seconds N] [--readers N] [--files N]
// Counted: searches answered (CLI, HTTP, MCP), errors a user would see (any exit but 0 and 1, SQLITE_BUSY or
// "locked" in a reader's output, an HTTP 5xx, an MCP error result, an error the server logs), the second writer's
// answers (exit 4 naming the holder, or 0 when it got the lock), the slowest answer of each kind, lost updates
// (files whose indexed content is not the one on disk once the writers stop and the watchers settle), and an
// integrity check at the end.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Database from 'better-sqlite3';
import { CLI } from '../test/helpers.ts';
import { freePort } from '../test/store-servers.ts';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const SECONDS = arg('seconds', 60);
const READERS = arg('readers', 8);
const FILES = arg('files', 400);
const TSX = import.meta.resolve('tsx');
const ENV = { ...process.env, QUARRY_EMBED: 'none', QUARRY_SHARED_CACHE: 'off', NO_COLOR: '1' };

const root = mkdtempSync(join(tmpdir(), 'quarry-soak-'));
mkdirSync(join(root, '.git'));
writeFileSync(join(root, '.git', 'HEAD'), 'ref: refs/heads/main\n');
const write = (i: number, round: number) => {
  const dir = join(root, 'src', `pkg${i % 10}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `mod${i}.ts`),
    `export function worker${i}(round: number): number {\n  // revision ${round}: cache retry token socket\n  return round * ${i};\n}\n`,
  );
};
for (let i = 0; i < FILES; i++) write(i, 0);

function run(args: string[]): Promise<{ code: number | null; out: string; ms: number }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', TSX, CLI, ...args], { cwd: root, env: ENV });
    let out = '';
    const append = (d: Buffer) => {
      out += d;
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    child.on('close', (code) => resolve({ code, out, ms: performance.now() - started }));
  });
}

const first = await run(['index', '--quiet']);
if (first.code !== 0) throw new Error(`the first index failed: ${first.out}`);
const watcher = spawn(process.execPath, ['--import', TSX, CLI, 'watch'], {
  cwd: root,
  env: ENV,
  stdio: 'ignore',
});

// the panel's server, on a free port, with its own watcher
const port = await freePort();
const serve = spawn(process.execPath, ['--import', TSX, CLI, 'serve', '--port', String(port)], {
  cwd: root,
  env: ENV,
  stdio: ['ignore', 'ignore', 'pipe'],
});
let serveLog = '';
serve.stderr.on('data', (d) => {
  serveLog += d;
});
const base = `http://127.0.0.1:${port}`;
for (let i = 0; i < 600; i++) {
  const ok = await fetch(`${base}/api/status`)
    .then((r) => r.ok)
    .catch(() => false);
  if (ok) break;
  await new Promise((r) => setTimeout(r, 100));
}
// an agent's MCP server, with its own watcher
const mcp = new McpClient({ name: 'soak', version: '1' });
const mcpTransport = new StdioClientTransport({
  command: process.execPath,
  args: ['--import', TSX, CLI, '--root', root, 'mcp'],
  env: ENV as Record<string, string>,
  stderr: 'pipe',
});
let mcpLog = '';
mcpTransport.stderr?.on('data', (d) => {
  mcpLog += d;
});
await mcp.connect(mcpTransport);

const end = Date.now() + SECONDS * 1000;
const errors: string[] = [];
let searches = 0;
let slowest = 0;
let writes = 0;
const second = { refused: 0, wrote: 0, other: 0 };

const writer = (async () => {
  for (let round = 1; Date.now() < end; round++) {
    for (let k = 0; k < 20; k++) write(Math.floor(Math.random() * FILES), round);
    const r = await run(['index', '--quiet', '--wait']);
    if (r.code === 0) writes++;
    else errors.push(`writer exit ${r.code}: ${r.out.trim().split('\n')[0]}`);
  }
})();
const intruder = (async () => {
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, 3000));
    const r = await run(['index', '--quiet']);
    if (r.code === 0) second.wrote++;
    else if (r.code === 4 && /pid \d+/.test(r.out)) second.refused++;
    else {
      second.other++;
      errors.push(`second writer exit ${r.code}: ${r.out.trim().split('\n')[0]}`);
    }
  }
})();
const readers = Array.from({ length: READERS }, async (_, n) => {
  const words = ['cache retry', 'worker round', 'token socket', `worker${n}`];
  for (let i = 0; Date.now() < end; i++) {
    const r = await run(['search', '--json', words[i % words.length]!]);
    slowest = Math.max(slowest, r.ms);
    if (r.code === 0 || r.code === 1) searches++;
    if ((r.code !== 0 && r.code !== 1) || /SQLITE_BUSY|database is locked/i.test(r.out))
      errors.push(`reader ${n} exit ${r.code}: ${r.out.trim().split('\n')[0]}`);
  }
});
const http = { searches: 0, reindexes: 0, slowestMs: 0 };
const panel = (async () => {
  for (let i = 0; Date.now() < end; i++) {
    const started = performance.now();
    if (i % 10 === 5) {
      // the panel's Re-index button (202: started, or the run in progress reported)
      const r = await fetch(`${base}/api/reindex`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      }).catch((e: Error) => e);
      if (r instanceof Error || r.status !== 202)
        errors.push(
          `panel re-index: ${r instanceof Error ? r.message : `HTTP ${r.status} ${await r.text()}`}`,
        );
      else http.reindexes++;
    } else {
      const r = await fetch(
        `${base}/api/search?q=${encodeURIComponent(['cache retry', 'worker round'][i % 2]!)}`,
      ).catch((e: Error) => e);
      if (r instanceof Error || r.status >= 500)
        errors.push(`HTTP search: ${r instanceof Error ? r.message : `HTTP ${r.status} ${await r.text()}`}`);
      else {
        const text = await r.text();
        if (/SQLITE_BUSY|database is locked/i.test(text)) errors.push(`HTTP search: ${text.slice(0, 200)}`);
        http.searches++;
      }
    }
    http.slowestMs = Math.max(http.slowestMs, performance.now() - started);
    await new Promise((r) => setTimeout(r, 200));
  }
})();
const agent = { searches: 0, reindexes: 0, slowestMs: 0 };
const agentLoop = (async () => {
  for (let i = 0; Date.now() < end; i++) {
    const started = performance.now();
    const reindex = i % 8 === 3;
    try {
      const r = (await mcp.callTool(
        reindex
          ? { name: 'reindex', arguments: {} }
          : { name: 'search_code', arguments: { query: ['token socket', 'worker round'][i % 2] } },
      )) as { isError?: boolean; content: Array<{ text?: string }> };
      const text = r.content.map((c) => c.text ?? '').join('');
      if (r.isError || /SQLITE_BUSY|database is locked/i.test(text))
        errors.push(`MCP ${reindex ? 'reindex' : 'search_code'}: ${text.slice(0, 200)}`);
      else if (reindex) agent.reindexes++;
      else agent.searches++;
    } catch (err) {
      errors.push(`MCP: ${(err as Error).message}`);
    }
    agent.slowestMs = Math.max(agent.slowestMs, performance.now() - started);
    await new Promise((r) => setTimeout(r, 300));
  }
})();
await Promise.all([writer, intruder, panel, agentLoop, ...readers]);

// no lost update: once the writers stop, the watchers (watch, serve, mcp) bring every file to what is on disk
const onDisk = new Map<string, string>();
for (let i = 0; i < FILES; i++) {
  const path = `src/pkg${i % 10}/mod${i}.ts`;
  onDisk.set(
    path,
    createHash('sha256')
      .update(readFileSync(join(root, path)))
      .digest('hex'),
  );
}
const stale = () => {
  const d = new Database(join(root, '.quarry', 'index.db'), { readonly: true });
  try {
    const indexed = new Map(
      (d.prepare('SELECT path, hash FROM files').all() as Array<{ path: string; hash: string }>).map((r) => [
        r.path,
        r.hash,
      ]),
    );
    return [...onDisk].filter(([p, h]) => indexed.get(p) !== h).length;
  } finally {
    d.close();
  }
};
const settleStarted = performance.now();
let lost = stale();
while (lost > 0 && performance.now() - settleStarted < 30_000) {
  await new Promise((r) => setTimeout(r, 500));
  lost = stale();
}
const settledMs = performance.now() - settleStarted;

await mcp.close();
for (const p of [watcher, serve]) {
  p.kill('SIGTERM');
  await new Promise((r) => p.on('close', r));
}
for (const [who, log] of [
  ['serve', serveLog],
  ['mcp', mcpLog],
] as const)
  for (const line of log.split('\n'))
    if (/error|SQLITE_BUSY|locked/i.test(line)) errors.push(`${who} logged: ${line.slice(0, 200)}`);

const db = new Database(join(root, '.quarry', 'index.db'), { readonly: true });
const integrity = db.pragma('integrity_check', { simple: true });
db.close();
rmSync(root, { recursive: true, force: true });
const report = {
  seconds: SECONDS,
  readers: READERS,
  files: FILES,
  searches,
  writes,
  secondWriter: second,
  slowestSearchMs: Math.round(slowest),
  http: { ...http, slowestMs: Math.round(http.slowestMs) },
  mcp: { ...agent, slowestMs: Math.round(agent.slowestMs) },
  lostUpdates: lost,
  caughtUpMs: Math.round(settledMs),
  errors: errors.length,
  integrity,
};
console.log(JSON.stringify(report));
for (const e of errors.slice(0, 10)) console.log(`  ${e}`);
process.exitCode = errors.length || lost || integrity !== 'ok' ? 1 : 0;
