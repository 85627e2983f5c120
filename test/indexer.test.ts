import assert from 'node:assert/strict';
import { cpSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { indexRepository } from '../src/indexing/indexer.ts';
import { processFile } from '../src/indexing/process-file.ts';
import { acquireWriterLock } from '../src/store/lock.ts';
import { openSqliteStore } from '../src/store/sqlite/index.ts';
import { indexPaths } from '../src/workspace/root.ts';
import { copyPolyglot, dumpIndex, ftsRowCount, makeTree, removeTree, runCli, testConfig } from './helpers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));

/** Each file's chunking method, in path order. */
function methods(dbPath: string): string[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.prepare('SELECT method FROM files ORDER BY path').pluck().all() as string[];
  } finally {
    db.close();
  }
}

/** What lexical search reads besides the chunks: BM25 ranks over chunks and files, references and the trigram table. */
function lexicalState(dbPath: string) {
  const db = new Database(dbPath, { readonly: true });
  try {
    const ranked = (table: string, join: string) =>
      db
        .prepare(
          `SELECT ${join}, round(bm25(${table}), 6) AS score FROM ${table} ${table === 'chunks_fts' ? 'JOIN chunks c ON c.id = chunks_fts.rowid JOIN files f ON f.id = c.file_id' : 'JOIN files f ON f.id = files_fts.rowid'}
           WHERE ${table} MATCH 'return OR health OR join OR parse' ORDER BY score, 1`,
        )
        .all();
    return {
      chunks: ranked('chunks_fts', "f.path || ':' || c.ordinal"),
      files: ranked('files_fts', 'f.path'),
      refs: db
        .prepare('SELECT f.path, r.refs FROM file_refs r JOIN files f ON f.id = r.file_id ORDER BY 1')
        .all(),
      trigrams: db.prepare('SELECT count(*) FROM trigram_fts_docsize').pluck().get(),
    };
  } finally {
    db.close();
  }
}

async function indexOnce(
  root: string,
  config = testConfig(),
  workers?: number,
  more: Partial<Parameters<typeof indexRepository>[0]> = {},
) {
  const store = openSqliteStore(indexPaths(root).db);
  try {
    return await indexRepository({
      root,
      config,
      store,
      ...(workers !== undefined ? { workers } : {}),
      ...more,
    });
  } finally {
    await store.close();
  }
}

/** Index a copy of `root` (same bytes, same mtimes) from nothing, and dump it. */
async function cleanBuildDump(root: string) {
  const copy = makeTree({});
  trees.push(copy);
  cpSync(root, copy, {
    recursive: true,
    preserveTimestamps: true,
    filter: (src) => !src.includes('.quarry'),
  });
  await indexOnce(copy);
  return dumpIndex(indexPaths(copy).db);
}

describe('indexing', () => {
  it('gives up a grammar that keeps failing, warns once, and still indexes its files by lines', async () => {
    // tree-sitter-wasms' bash: its scanner calls `isalpha`, which web-tree-sitter 0.25 does not export, so a
    // script with `[[ … ]]` throws in the parse (before this, each such file cost a parse worker)
    const broken = makeTree({});
    trees.push(broken);
    cpSync(
      join(
        dirname(createRequire(import.meta.url).resolve('tree-sitter-wasms/package.json')),
        'out',
        'tree-sitter-bash.wasm',
      ),
      join(broken, 'tree-sitter-bash.wasm'),
    );
    const script = (i: number) =>
      `#!/bin/bash\nif [[ "\${CI}" != "" ]]; then\n  echo run ${i}\nfi\nstep_${i}() {\n  ls\n}\n`;
    const files: Record<string, string> = {};
    for (let i = 0; i < 6; i++) files[`scripts/s${i}.sh`] = script(i);
    for (const workers of [0, 1]) {
      const root = makeTree(files);
      trees.push(root);
      process.env.QUARRY_GRAMMAR_DIR = broken;
      let r: Awaited<ReturnType<typeof indexOnce>>;
      try {
        r = await indexOnce(root, testConfig(), workers);
      } finally {
        delete process.env.QUARRY_GRAMMAR_DIR;
      }
      assert.equal(r.added, 6, `workers ${workers}`);
      assert.deepEqual(
        r.warnings.filter((w) => w.includes('grammar')),
        [
          'the bash grammar failed on 3 files: the rest of its files were chunked by lines (a newer build of it can go in QUARRY_GRAMMAR_DIR)',
        ],
      );
      const store = openSqliteStore(indexPaths(root).db);
      try {
        const methods = (await store.listFiles()).map((f) => f.method);
        assert.deepEqual(methods, Array(6).fill('lines'), `workers ${workers}`);
      } finally {
        await store.close();
      }
    }
  });

  it('parses shell scripts with the bash grammar that runs on this runtime', async () => {
    const root = makeTree({
      'run.sh': '#!/bin/bash\nif [[ "$CI" != "" ]]; then\n  echo ci\nfi\n\nbuild() {\n  make all\n}\n',
    });
    trees.push(root);
    const r = await indexOnce(root, testConfig(), 0);
    assert.deepEqual(r.warnings, []);
    const store = openSqliteStore(indexPaths(root).db);
    try {
      assert.deepEqual(
        (await store.listFiles()).map((f) => f.method),
        ['tree-sitter'],
      );
      assert.deepEqual(
        [...(await store.listSymbols(['run.sh'])).values()].flat().map((s) => s.name),
        ['build'],
      );
    } finally {
      await store.close();
    }
  });

  it('indexes a polyglot repository with workers and without, to the same result', async () => {
    const a = copyPolyglot(trees);
    const b = copyPolyglot(trees);
    const ra = await indexOnce(a, testConfig(), 2);
    await indexOnce(b, testConfig(), 0);
    assert.equal(ra.files, 17);
    assert.equal(ra.added, 17);
    assert.ok(ra.chunksWritten >= 17, `${ra.chunksWritten} chunks`);
    assert.deepEqual(dumpIndex(indexPaths(a).db), dumpIndex(indexPaths(b).db));
  });

  it('makes a large run searchable by line windows first, then parses it to the index one pass makes', async () => {
    const a = copyPolyglot(trees);
    const b = copyPolyglot(trees);
    const phases: string[] = [];
    let searchableQuick: unknown[] = [];
    const ra = await indexOnce(a, testConfig(), 2, {
      quickPass: true,
      onProgress: (p) => {
        if (phases.at(-1) !== p.phase) phases.push(p.phase);
        // between the passes: every file searchable, those with a grammar by line windows
        if (p.phase === 'chunk' && p.done === 0) searchableQuick = methods(indexPaths(a).db);
      },
    });
    const rb = await indexOnce(b, testConfig(), 2);
    assert.deepEqual(phases, ['walk', 'lexical', 'chunk', 'done']);
    assert.ok(searchableQuick.some((m) => m === 'quick') && searchableQuick.some((m) => m === 'lines'));
    assert.equal(ra.quickPass?.files, searchableQuick.filter((m) => m === 'quick').length);
    assert.deepEqual([ra.added, ra.updated, ra.chunksWritten], [rb.added, rb.updated, rb.chunksWritten]);
    assert.deepEqual(dumpIndex(indexPaths(a).db), dumpIndex(indexPaths(b).db));
    assert.deepEqual(lexicalState(indexPaths(a).db), lexicalState(indexPaths(b).db));
  });

  it('writes a long run on a thread of its own to the index this thread writes, in one pass or two', async () => {
    const plain = copyPolyglot(trees);
    await indexOnce(plain, testConfig(), 2);
    for (const quickPass of [false, true]) {
      const root = copyPolyglot(trees);
      const r = await indexOnce(root, testConfig(), 2, { quickPass, writeBehind: true });
      assert.equal(r.added, 17);
      assert.equal(r.quickPass !== undefined, quickPass);
      assert.deepEqual(dumpIndex(indexPaths(root).db), dumpIndex(indexPaths(plain).db));
      assert.deepEqual(lexicalState(indexPaths(root).db), lexicalState(indexPaths(plain).db));
    }
  });

  it('deletes a file found gone mid-run on this thread while a writer thread writes the rest', async () => {
    const root = copyPolyglot(trees);
    await indexOnce(root, testConfig(), 2);
    // every file changed: all are read again, and one is gone by the time a worker reads it
    const indexed = new Database(indexPaths(root).db, { readonly: true });
    const paths = (indexed.prepare('SELECT path FROM files').pluck().all() as string[]).filter(
      (p) => p !== 'util.js',
    );
    indexed.close();
    for (const p of paths) writeFileSync(join(root, p), `${readFileSync(join(root, p), 'utf8')}\n`);
    utimesSync(join(root, 'util.js'), new Date(), new Date(Date.now() + 5000));
    const r = await indexOnce(root, testConfig(), 2, {
      writeBehind: true,
      onProgress: (p) => {
        if (p.phase === 'lexical' && p.done === 0) rmSync(join(root, 'util.js'), { force: true });
      },
    });
    assert.deepEqual([r.updated, r.deleted], [paths.length, 1]);
    assert.deepEqual(dumpIndex(indexPaths(root).db), await cleanBuildDump(root));
  });

  it('parses on the next run what a killed run left as line windows, and status counts them meanwhile', async () => {
    const root = copyPolyglot(trees);
    const controller = new AbortController();
    const store = openSqliteStore(indexPaths(root).db);
    const first = await indexRepository({
      root,
      config: testConfig(),
      store,
      workers: 2,
      quickPass: true,
      signal: controller.signal,
      onProgress: (p) => {
        if (p.phase === 'chunk') controller.abort();
      },
    });
    await store.close();
    assert.equal(first.interrupted, true);
    const left = methods(indexPaths(root).db).filter((m) => m === 'quick').length;
    assert.ok(left > 0, 'the second pass never ran');
    const status = JSON.parse(runCli(['status', '--json'], { cwd: root }).stdout) as {
      unparsedFiles: number;
    };
    assert.equal(status.unparsedFiles, left);

    // one of them touched since (same content, a new mtime): parsed all the same
    const touched = new Database(indexPaths(root).db, { readonly: true });
    const quickPath = touched
      .prepare(`SELECT path FROM files WHERE method = 'quick' LIMIT 1`)
      .pluck()
      .get() as string;
    touched.close();
    utimesSync(join(root, quickPath), new Date(), new Date(Date.now() + 5000));
    const second = await indexOnce(root, testConfig(), 2);
    assert.deepEqual([second.added, second.updated], [0, left]);
    assert.equal(second.quickPass, undefined);
    assert.deepEqual(dumpIndex(indexPaths(root).db), await cleanBuildDump(root));
    assert.equal(methods(indexPaths(root).db).filter((m) => m === 'quick').length, 0);
  });

  it('re-reads nothing when nothing changed, and follows edits, touches, renames and deletes', async () => {
    const root = copyPolyglot(trees);
    await indexOnce(root);
    const noop = await indexOnce(root);
    assert.deepEqual([noop.added, noop.updated, noop.touched, noop.deleted], [0, 0, 0, 0]);

    writeFileSync(join(root, 'server.go'), 'package server\n\nfunc Renamed() {}\n');
    utimesSync(join(root, 'lib.rs'), new Date(), new Date(Date.now() + 5000));
    renameSync(join(root, 'util.js'), join(root, 'helpers.js'));
    rmSync(join(root, 'deploy.sh'));
    const r = await indexOnce(root);
    assert.equal(r.updated, 1);
    assert.equal(r.touched, 1);
    assert.equal(r.added, 1);
    assert.equal(r.deleted, 2);

    const store = openSqliteStore(indexPaths(root).db);
    assert.deepEqual(
      (await store.findSymbols(['Renamed'])).map((s) => s.path),
      ['server.go'],
    );
    assert.deepEqual(await store.findSymbols(['HandleHealth']), []);
    assert.deepEqual(
      (await store.findSymbols(['joinAll'])).map((s) => s.path),
      ['helpers.js'],
    );
    assert.equal(await store.getFile('deploy.sh'), undefined);
    await store.close();

    assert.deepEqual(dumpIndex(indexPaths(root).db), await cleanBuildDump(root));
    const counts = ftsRowCount(indexPaths(root).db);
    assert.equal(counts.fts, counts.chunks, 'one lexical row per chunk, none orphaned');
  });

  it('copes with binary files, invalid UTF-8, minified bundles, empty files and deep nesting', async () => {
    const root = makeTree({
      'image.dat.ts': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d, 0x0a]),
      'latin1.py': Buffer.concat([
        Buffer.from('def caf'),
        Buffer.from([0xe9]),
        Buffer.from('():\n    return 1\n'),
      ]),
      'huge.js': `var a=${'1+'.repeat(2_500_000)}1;`,
      'bundle.js': `!function(){${'var x=1;'.repeat(20_000)}}();`,
      'empty.ts': '',
      'nested.py': `def outer():\n${Array.from({ length: 60 }, (_, i) => `${'    '.repeat(i + 1)}def f${i}():`).join('\n')}\n${'    '.repeat(61)}return 1\n`,
    });
    trees.push(root);
    const r = await indexOnce(root);
    assert.equal(r.skipped.find((s) => s.path === 'huge.js')?.reason, 'too-large');
    const byPath = Object.fromEntries(r.skippedByContent.map((s) => [s.path, s.reason]));
    assert.equal(byPath['image.dat.ts'], 'binary');
    assert.equal(byPath['bundle.js'], 'minified');
    const store = openSqliteStore(indexPaths(root).db);
    const latin = (await store.getFilesChunks(['latin1.py'])).get('latin1.py')!;
    assert.match(latin[0]!.text, /def caf\uFFFD\(\)/);
    assert.equal((await store.getFilesChunks(['empty.ts'])).get('empty.ts'), undefined);
    assert.equal((await store.getFile('empty.ts'))?.method, 'tree-sitter');
    assert.ok((await store.findSymbols(['f59'])).length === 1);
    await store.close();

    // with the limit raised, the 5 MB one-line file is read, and recognised as minified
    const big = await indexOnce(root, testConfig({ maxFileBytes: 10 * 1024 * 1024 }));
    assert.deepEqual(
      big.skippedByContent.map((s) => s.path),
      ['huge.js'],
    );
  });

  it('reads UTF-16 files with a byte-order mark as text (regression: skipped as binary)', async () => {
    const source = 'def utf_sixteen_greeting():\n    return "héllo"\n';
    const root = makeTree({
      'le.py': Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(source, 'utf16le')]),
      'be.py': Buffer.concat([
        Buffer.from([0xfe, 0xff]),
        Buffer.from(source.replace('utf_sixteen', 'big_endian'), 'utf16le').swap16(),
      ]),
    });
    trees.push(root);
    const r = await indexOnce(root);
    assert.deepEqual(r.skippedByContent, []);
    const store = openSqliteStore(indexPaths(root).db);
    assert.equal((await store.findSymbols(['utf_sixteen_greeting'])).length, 1);
    assert.equal((await store.findSymbols(['big_endian_greeting'])).length, 1);
    const le = (await store.getFilesChunks(['le.py'])).get('le.py')!;
    assert.match(le[0]!.text, /return "héllo"/);
    await store.close();
  });

  it('indexes files named after Object.prototype members (found by fuzzing: "constructor" failed a NOT NULL)', async () => {
    const root = makeTree({
      constructor: 'plain text\n',
      'x.__proto__': 'more\n',
      'toString.ts': 'export const a = 1;\n',
    });
    trees.push(root);
    const r = await indexOnce(root);
    assert.equal(r.files, 3);
    const store = openSqliteStore(indexPaths(root).db);
    assert.deepEqual((await store.listFiles()).map((f) => [f.path, f.language]).sort(), [
      ['constructor', 'text'],
      ['toString.ts', 'typescript'],
      ['x.__proto__', 'text'],
    ]);
    await store.close();
  });

  it('skips a private key by content whatever its name', async () => {
    const root = makeTree({
      'notes.txt': '-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n',
    });
    trees.push(root);
    const r = await indexOnce(root);
    assert.deepEqual(r.skippedByContent, [{ path: 'notes.txt', reason: 'secret' }]);
  });

  it('treats a file deleted between the walk and its read as gone', async () => {
    const root = makeTree({ 'a.ts': 'x' });
    trees.push(root);
    const outcome = await processFile(root, { path: 'vanished.ts', size: 1, mtimeMs: 1 }, testConfig());
    assert.deepEqual(outcome, { status: 'gone', path: 'vanished.ts' });
  });

  it('lets one writer at a time in, and reclaims a dead writer’s lock', async () => {
    const root = copyPolyglot(trees);
    const { lock } = indexPaths(root);
    const held = await acquireWriterLock(lock);
    await assert.rejects(indexOnce(root), /another quarry \(pid \d+\) is indexing this project/);
    held.release();
    writeFileSync(
      lock,
      JSON.stringify({ pid: 2 ** 22 + 12345, host: (await import('node:os')).hostname(), startedAt: 1 }),
    );
    const r = await indexOnce(root);
    assert.equal(r.added, 17);
  });
});

describe('embedding into the cache as it goes (regression: a crash mid-batch re-embedded 494 texts, 60 from the cache)', () => {
  it('a crash in the middle of a batch loses one slice of it: the next run finds the rest in the cache', async () => {
    const { embedPending } = await import('../src/indexing/embedding.ts');
    // 8 files of 40 functions each, every function a chunk of its own: one batch of files, hundreds of texts
    const fn = (f: number, i: number) =>
      `def handler_${f}_${i}(request):\n${Array.from({ length: 12 }, (_, k) => `    step_${k} = request.get("${f}-${i}-${k}")`).join('\n')}\n    return step_0\n`;
    const files = Object.fromEntries(
      Array.from({ length: 8 }, (_, f) => [
        `app${f}.py`,
        Array.from({ length: 40 }, (_, i) => fn(f, i)).join('\n\n'),
      ]),
    );
    const root = makeTree(files);
    try {
      const store = openSqliteStore(join(root, 'index.db'));
      await indexRepository({ root, config: testConfig(), store, workers: 0 });
      let calls = 0;
      let texts = 0;
      // a deterministic embedder: the vector of a text is its hash spread over 8 numbers; it dies on its third call
      const embedder = {
        id: 'test:hash-8',
        dimension: 8,
        maxTokens: 256,
        countTokens: (t: string) => Math.min(256, t.length),
        async close() {},
        async embed(batch: string[]) {
          if (++calls === 3) throw new Error('killed');
          texts += batch.length;
          return batch.map((t) => {
            const v = new Float32Array(8);
            for (let i = 0; i < t.length; i++) v[i % 8]! += t.charCodeAt(i) / 1000;
            const n = Math.hypot(...v) || 1;
            return v.map((x) => x / n);
          });
        },
      };
      await assert.rejects(embedPending(store, embedder, { batchFiles: 16 }), /killed/);
      // the coarse vectors (one call) and one slice of 64 chunk texts were done before the crash
      assert.ok(texts >= 64 + 8, `${texts} texts embedded before the crash`);
      calls = 10; // alive again
      const resumed = await embedPending(store, embedder, { batchFiles: 16 });
      assert.ok(resumed.fromCache >= 64, `${resumed.fromCache} from the cache, ${resumed.embedded} embedded`);
      assert.equal(resumed.fromCache + resumed.embedded, 160, 'every chunk of the batch has its vector');
      await store.close();
    } finally {
      removeTree(root);
    }
  });
});

describe('a progress ETA (issue 65: the first ones were about twice the real time)', () => {
  it('comes from the work’s own pace, not from a slow first batch (a model loading)', async () => {
    const { embedPending } = await import('../src/indexing/embedding.ts');
    const files = Object.fromEntries(
      Array.from({ length: 20 }, (_, f) => [`m${f}.py`, `def f${f}(x):\n    return x + ${f}\n`]),
    );
    const root = makeTree(files);
    try {
      const store = openSqliteStore(join(root, 'index.db'));
      await indexRepository({ root, config: testConfig(), store, workers: 0 });
      let calls = 0;
      const embedder = {
        id: 'test:slow-start',
        dimension: 4,
        maxTokens: 256,
        countTokens: (t: string) => Math.min(256, t.length),
        async close() {},
        async embed(batch: string[]) {
          // the first call loads the model (a second), every other takes 40 ms
          await new Promise((r) => setTimeout(r, ++calls === 1 ? 1000 : 40));
          return batch.map(() => Float32Array.from([1, 0, 0, 0]));
        },
      };
      const etas: Array<{ at: number; eta: number }> = [];
      let coarseEnd = 0;
      await embedPending(store, embedder, {
        batchFiles: 2,
        onProgress: (p) => {
          if (p.phase !== 1) return;
          if (p.etaMs !== undefined && p.done < p.total) etas.push({ at: performance.now(), eta: p.etaMs });
          if (p.done === p.total) coarseEnd ||= performance.now();
        },
      });
      await store.close();
      assert.ok(etas.length >= 5, `${etas.length} ETAs`);
      for (const { at, eta } of etas) {
        const real = coarseEnd - at;
        assert.ok(eta < real * 2 + 250, `ETA ${Math.round(eta)} ms where ${Math.round(real)} ms were left`);
      }
    } finally {
      removeTree(root);
    }
  });
});

describe('the time an index was last brought up to date', () => {
  it('is recorded once the files are, though its vectors were interrupted (issue 65: status said "updated never")', async () => {
    const root = makeTree({ 'a.py': 'def a(x):\n    return x\n', 'b.py': 'def b(y):\n    return y\n' });
    try {
      const store = openSqliteStore(join(root, 'index.db'));
      const stop = new AbortController();
      const embedder = {
        id: 'test:stopped',
        dimension: 4,
        maxTokens: 256,
        countTokens: (t: string) => Math.min(256, t.length),
        async close() {},
        async embed(batch: string[]) {
          return batch.map(() => Float32Array.from([1, 0, 0, 0]));
        },
      };
      // the vectors are stopped as they begin (Ctrl-C in a long embedding run)
      const report = await indexRepository({
        root,
        config: testConfig(),
        store,
        workers: 0,
        embedder,
        signal: stop.signal,
        onProgress: (p) => {
          if (p.phase === 'coarse') stop.abort();
        },
      });
      assert.ok(report.interrupted);
      const at = Number(await store.getMeta('last_indexed_at'));
      assert.ok(at > Date.now() - 60_000, `last_indexed_at ${at}`);
      await store.close();
    } finally {
      removeTree(root);
    }
  });
});

describe('a parse that passes its deadline', () => {
  it('costs that file its definitions and its worker, never the run (regression: a 100,581-file index died)', () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 60; i++)
      files[`src/m${i}.ts`] = Array.from(
        { length: 200 },
        (_, j) => `export function f${i}x${j}(a: number): number {\n  return a + ${j};\n}\n`,
      ).join('');
    const root = makeTree(files);
    try {
      // a deadline no parse of these files meets: every one is cancelled, each worker replaced after it
      const r = runCli(['index', '--quiet', '--json', '--no-embed'], {
        cwd: root,
        env: { QUARRY_PARSE_TIMEOUT_MS: '1', QUARRY_WORKERS: '2' },
      });
      assert.equal(r.code, 0, r.stderr);
      const report = JSON.parse(r.stdout) as { files: number; added: number };
      assert.equal(report.added, 60);
      const methods = (dumpIndex(join(root, '.quarry', 'index.db')).files as Array<{ method: string }>).map(
        (f) => f.method,
      );
      assert.ok(methods.includes('lines'), 'the cancelled parses are chunked by lines');
      const again = runCli(['search', '--json', 'f7x150'], { cwd: root });
      assert.equal(JSON.parse(again.stdout).results[0]?.path, 'src/m7.ts');
    } finally {
      removeTree(root);
    }
  });
});
