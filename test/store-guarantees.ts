import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync } from 'node:fs';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { codeTokenText, pathTokenText } from '../src/chunk/tokens.ts';
import { referenceGraph } from '../src/context/repomap.ts';
import { isQuarryError } from '../src/errors.ts';
import { openProject, type LocalProject as Project, searchProject } from '../src/project/local/index.ts';
import type { FileUpdate, Store } from '../src/store/types.ts';
import { bigTree, copyPolyglot, makeTree, runCli, runCliAsync, spawnCli } from './helpers.ts';

/** How to reach one driver's store: the `--store` URL (undefined for the SQLite default). */
export interface DriverTarget {
  name: string;
  url: () => string | undefined;
}

let repoSeq = 0;
/** A repository key no other test uses. */
export const freshRepo = () => `g${process.pid}-${++repoSeq}`;

export function storeEnv(target: DriverTarget, repo: string): Record<string, string> {
  const url = target.url();
  return { QUARRY_REPO: repo, ...(url ? { QUARRY_STORE_URL: url } : {}) };
}

export async function openFor(
  target: DriverTarget,
  root: string,
  repo: string,
  create = true,
): Promise<Project> {
  return openProject({
    root,
    create,
    userConfig: false,
    env: { QUARRY_EMBED: 'none', ...storeEnv(target, repo) },
  });
}

/** Everything a store holds that must not depend on how it was built, read through the seam alone. */
export async function snapshot(store: Store): Promise<unknown> {
  const files = await store.listFiles();
  const paths = files.map((f) => f.path);
  const chunks = await store.getFilesChunks(paths);
  const symbols = await store.listSymbols(paths);
  const graph = await referenceGraph(store);
  // discriminating terms (a term every chunk has ties, and ties fall in insertion order)
  const lexical = store.lexical
    ? await store.lexical.searchChunks({
        terms: ['handler12x3', 'field7', 'response3'],
        limit: 40,
        weights: W,
      })
    : [];
  return {
    files: files.map((f) => [f.path, f.size, f.hash, f.language, f.method]),
    chunks: paths.map((p) =>
      (chunks.get(p) ?? []).map((c) => [
        c.path,
        c.ordinal,
        c.startLine,
        c.endLine,
        c.symbol,
        c.kind,
        c.container,
        c.text,
      ]),
    ),
    symbols: paths.map((p) =>
      (symbols.get(p) ?? []).map((s) => [s.path, s.name, s.kind, s.startLine, s.endLine]),
    ),
    refs: graph.refs.map((r) => [r.name, r.path, r.count]).sort(),
    lexical: lexical
      .map((h) => [h.path, h.startLine, Math.round(h.score * 1e6) / 1e6] as const)
      .sort((a, b) => b[2] - a[2] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1])),
    stats: await store
      .stats()
      .then(({ files, chunks, symbols, languages }) => ({ files, chunks, symbols, languages })),
  };
}

const W = { path: 4, symbol: 3, body: 1 };

function update(path: string, text: string, hash: string): FileUpdate {
  return {
    file: { path, size: text.length, mtimeMs: 1, hash, language: 'typescript', method: 'tree-sitter' },
    chunks: [
      {
        ordinal: 0,
        startLine: 1,
        endLine: 1,
        symbol: null,
        kind: null,
        container: null,
        text,
        tokens: { path: pathTokenText(path), symbols: '', body: codeTokenText(text) },
      },
    ],
    symbols: [],
    tokens: { path: pathTokenText(path), symbols: '', body: codeTokenText(text) },
  };
}

/**
 * The guarantees every driver keeps, checked through the seam (never its own SQL): writer exclusion across
 * processes, repositories isolated, a kill mid-index leaving no partial file and resuming to exactly a clean build,
 * and the same search results as the SQLite default on a fixture.
 */
export function storeGuarantees(target: DriverTarget, trees: string[]): void {
  it('lets one writer in at a time, across processes, and frees the lock when the holder dies', async () => {
    const root = makeTree({ 'a.ts': 'export const a = 1\n' });
    trees.push(root);
    const repo = freshRepo();
    const project = await openFor(target, root, repo);
    const holder = spawn(
      process.execPath,
      ['--import', 'tsx', new URL('./hold-writer.ts', import.meta.url).pathname, root],
      {
        env: { ...process.env, QUARRY_EMBED: 'none', ...storeEnv(target, repo) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    holder.stdout.on('data', (d) => {
      out += d;
    });
    holder.stderr.on('data', (d) => {
      out += d;
    });
    const exited = new Promise((resolve) => holder.on('exit', resolve));
    for (let i = 0; i < 400 && !out.includes('locked'); i++) await sleep(25);
    assert.match(out, /locked/, out);
    await assert.rejects(project.store.acquireWriter({ waitMs: 0 }), (err: unknown) => {
      assert.ok(isQuarryError(err) && err.code === 'LOCKED', String(err));
      assert.match((err as Error).message, /another quarry .*--wait/);
      return true;
    });
    const writer = await project.store.activeWriter();
    assert.equal(writer?.pid, holder.pid, 'the holder is named');
    // the CLI says the same in one line, exit code 4
    const r = await runCliAsync(['index', root, '--quiet'], { env: storeEnv(target, repo) });
    assert.equal(r.code, 4, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    holder.kill('SIGKILL');
    await exited;
    const lock = await project.store.acquireWriter({ waitMs: 10_000 });
    assert.equal((await project.store.activeWriter())?.pid, process.pid);
    await lock.release();
    assert.equal(await project.store.activeWriter(), undefined);
    await project.close();
  });

  it('keeps two repositories apart', async () => {
    const root = makeTree({});
    trees.push(root);
    const [ra, rb] = [freshRepo(), freshRepo()];
    const a = await openFor(target, root, ra);
    // two repositories are two folders; a server store keeps both in one database, apart by their keys
    const rootB = makeTree({});
    trees.push(rootB);
    const b = await openFor(target, rootB, rb);
    await a.store.replaceFiles([update('same.ts', 'alpha apples', 'ha')]);
    await b.store.replaceFiles([update('same.ts', 'beta bananas', 'hb'), update('only-b.ts', 'beta', 'hb2')]);
    const search = (s: Store, term: string) =>
      s.lexical!.searchChunks({ terms: [term], limit: 10, weights: W }).then((h) => h.map((x) => x.path));
    assert.deepEqual(await search(a.store, 'beta'), []);
    assert.deepEqual(await search(b.store, 'alpha'), []);
    assert.deepEqual((await search(b.store, 'beta')).sort(), ['only-b.ts', 'same.ts']);
    assert.deepEqual(
      (await a.store.listFiles()).map((f) => f.path),
      ['same.ts'],
    );
    assert.equal((await b.store.getFile('same.ts'))?.hash, 'hb');
    if (a.store.vectors && b.store.vectors) {
      await a.store.vectors.useEmbedder('e', 2);
      await b.store.vectors.useEmbedder('e', 2);
      const ca = (await a.store.getFilesChunks(['same.ts'])).get('same.ts')!;
      await a.store.vectors.putChunkVectors([
        {
          path: 'same.ts',
          hash: 'ha',
          vectors: [{ chunkId: ca[0]!.chunkId, vector: new Float32Array([1, 0]) }],
        },
      ]);
      assert.deepEqual(await b.store.vectors.searchChunks(new Float32Array([1, 0]), 5), []);
      assert.equal((await a.store.vectors.searchChunks(new Float32Array([1, 0]), 5)).length, 1);
    }
    await a.store.deleteFiles(['same.ts']);
    assert.equal((await b.store.getFile('same.ts'))?.hash, 'hb', 'a delete in A leaves B alone');
    assert.equal((await a.store.stats()).files, 0);
    assert.equal((await b.store.stats()).files, 2);
    await a.close();
    await b.close();
  });

  it('survives kill -9 mid-index: no partial file, and the resumed run equals a clean build', async () => {
    const big = bigTree(900, trees);
    const repo = freshRepo();
    const env = { ...storeEnv(target, repo), QUARRY_EMBED: 'none' };
    const child = spawnCli(['index', big, '--quiet'], { env });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const watcher = await openFor(target, big, repo);
    // kill it once some files are committed, well before the end
    for (let i = 0; i < 1200 && (await watcher.store.stats()).files < 60; i++) await sleep(25);
    child.kill('SIGKILL');
    await exited;
    const files = await watcher.store.listFiles();
    assert.ok(files.length > 0 && files.length < 900, `killed after ${files.length} files`);
    // every file the index claims is whole: its 13 chunks (an import line and 12 functions) and 12 symbols
    const chunks = await watcher.store.getFilesChunks(files.map((f) => f.path));
    const symbols = await watcher.store.listSymbols(files.map((f) => f.path));
    for (const f of files) {
      assert.ok((chunks.get(f.path) ?? []).length > 0, `${f.path} has its chunks`);
      assert.equal((symbols.get(f.path) ?? []).length, 12, `${f.path} has all its symbols`);
    }
    await watcher.close();
    const resumed = runCli(['index', big, '--json'], { env });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(
      JSON.parse(resumed.stdout).added,
      900 - files.length,
      'the resumed run reads only what was missing',
    );

    const clean = makeTree({});
    trees.push(clean);
    cpSync(big, clean, { recursive: true, filter: (src) => !src.endsWith('.quarry') });
    const cleanRepo = freshRepo();
    assert.equal(
      runCli(['index', clean, '--quiet'], { env: { ...env, ...storeEnv(target, cleanRepo) } }).code,
      0,
    );
    const a = await openFor(target, big, repo, false);
    const b = await openFor(target, clean, cleanRepo, false);
    assert.deepEqual(await snapshot(a.store), await snapshot(b.store));
    await a.close();
    await b.close();
  });

  it('finds what the SQLite default finds on a fixture', async () => {
    const root = copyPolyglot(trees);
    const repo = freshRepo();
    const env = { ...storeEnv(target, repo), QUARRY_EMBED: 'none' };
    assert.equal(runCli(['index', root, '--quiet'], { env }).code, 0);
    const reference = copyPolyglot(trees);
    assert.equal(runCli(['index', reference, '--quiet'], { env: { QUARRY_EMBED: 'none' } }).code, 0);
    const here = await openFor(target, root, repo, false);
    const base = await openProject({ root: reference, userConfig: false, env: { QUARRY_EMBED: 'none' } });
    const queries = [
      'parse config file',
      'ConfigStore',
      'http server handler',
      'where is the user model defined',
      'retry with backoff',
      'main entry point',
      'config_loader.py',
    ];
    for (const q of queries) {
      const [x, y] = await Promise.all([
        searchProject(here, q, { mode: 'lexical' }),
        searchProject(base, q, { mode: 'lexical' }),
      ]);
      assert.deepEqual(
        x.files.map((f) => f.path),
        y.files.map((f) => f.path),
        `files for "${q}"`,
      );
      assert.deepEqual(
        x.results.map((r) => [r.path, r.startLine]),
        y.results.map((r) => [r.path, r.startLine]),
        `chunks for "${q}"`,
      );
      // the same BM25 (FTS5's formula): scores agree to rounding
      for (const [i, r] of x.results.entries()) assert.ok(Math.abs(r.score - y.results[i]!.score) < 1e-3, q);
    }
    await here.close();
    await base.close();
  });
}
