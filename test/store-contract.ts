import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { it } from 'node:test';
import { codeTokenText, pathTokenText } from '../src/chunk/tokens.ts';
import { referenceGraph } from '../src/context/repomap.ts';
import { chunksToEmbed } from '../src/indexing/embedding.ts';
import { type ChunkInput, encodeRefs, type FileUpdate, type Store } from '../src/store/types.ts';
import { DATA_CHUNK_VECTORS } from '../src/workspace/roles.ts';

function chunk(path: string, ordinal: number, text: string, symbol: string | null = null): ChunkInput {
  const lines = text.split('\n').length;
  return {
    ordinal,
    startLine: ordinal * 10 + 1,
    endLine: ordinal * 10 + lines,
    symbol,
    kind: symbol ? 'function' : null,
    container: null,
    text,
    tokens: { path: pathTokenText(path), symbols: codeTokenText(symbol ?? ''), body: codeTokenText(text) },
  };
}

function update(path: string, chunks: Array<[string, string | null]>, hash = `h-${path}`): FileUpdate {
  const names = chunks.flatMap(([, sym]) => (sym ? [sym] : []));
  return {
    tokens: {
      path: pathTokenText(path),
      symbols: codeTokenText(names.join(' ')),
      body: chunks.map(([text]) => codeTokenText(text)).join(' '),
    },
    file: { path, size: 100, mtimeMs: 1000, hash, language: 'typescript', method: 'tree-sitter' },
    chunks: chunks.map(([text, sym], i) => chunk(path, i, text, sym)),
    symbols: chunks.flatMap(([, sym], i) =>
      sym
        ? [
            {
              name: sym,
              kind: 'function' as const,
              startLine: i * 10 + 1,
              endLine: i * 10 + 3,
              container: null,
            },
          ]
        : [],
    ),
  };
}

const W = { path: 4, symbol: 3, body: 1 };

/**
 * The behaviour every Store must have. Run it against each implementation:
 * `storeContract(() => open a fresh, empty store)`.
 */
export function storeContract(open: () => Promise<Store>): void {
  it('keeps meta values', async () => {
    const s = await open();
    assert.equal(await s.getMeta('missing'), undefined);
    await s.setMeta('k', 'v1');
    await s.setMeta('k', 'v2');
    assert.equal(await s.getMeta('k'), 'v2');
    await s.close();
  });

  it('replaces a file’s rows as a whole', async () => {
    const s = await open();
    await s.replaceFiles([
      update('src/a.ts', [
        ['function alpha() {}', 'alpha'],
        ['const beta = 1', null],
      ]),
    ]);
    assert.equal(((await s.getFilesChunks(['src/a.ts'])).get('src/a.ts') ?? []).length, 2);
    await s.replaceFiles([update('src/a.ts', [['function gamma() {}', 'gamma']], 'h2')]);
    const chunks = (await s.getFilesChunks(['src/a.ts'])).get('src/a.ts') ?? [];
    assert.deepEqual(
      chunks.map((c) => c.symbol),
      ['gamma'],
    );
    assert.equal((await s.getFile('src/a.ts'))?.hash, 'h2');
    assert.deepEqual(await s.lexical!.searchChunks({ terms: ['alpha'], limit: 10, weights: W }), []);
    assert.deepEqual((await s.findSymbols(['alpha'])).length, 0);
    assert.equal((await s.findSymbols(['GAMMA']))[0]?.path, 'src/a.ts');
    const stats = await s.stats();
    assert.equal(stats.files, 1);
    assert.equal(stats.chunks, 1);
    assert.equal(stats.symbols, 1);
    assert.deepEqual(await s.check(), [], 'the driver’s check finds a replaced file sound');
    await s.close();
  });

  it('deletes files with all their rows', async () => {
    const s = await open();
    await s.replaceFiles([update('a.ts', [['alpha beta', 'alpha']]), update('b.ts', [['beta', null]])]);
    await s.deleteFiles(['a.ts', 'never-indexed.ts']);
    assert.deepEqual(
      (await s.listFiles()).map((f) => f.path),
      ['b.ts'],
    );
    const hits = await s.lexical!.searchChunks({ terms: ['beta'], limit: 10, weights: W });
    assert.deepEqual(
      hits.map((h) => h.path),
      ['b.ts'],
    );
    assert.deepEqual(await s.findSymbols(['alpha']), []);
    await s.settle?.();
    assert.deepEqual(await s.check(), [], 'the driver’s check finds nothing left of a deleted file');
    await s.close();
  });

  it('records a new stat without touching content', async () => {
    const s = await open();
    await s.replaceFiles([update('a.ts', [['alpha', null]])]);
    await s.touchFiles([{ path: 'a.ts', size: 5, mtimeMs: 42 }]);
    const f = await s.getFile('a.ts');
    assert.equal(f?.size, 5);
    assert.equal(f?.mtimeMs, 42);
    assert.equal(f?.hash, 'h-a.ts');
    await s.close();
  });

  it('ranks lexical matches by BM25 with field weights and filters', async () => {
    const s = await open();
    await s.replaceFiles([
      update('src/parser.ts', [['function parseConfig(text) { return JSON.parse(text) }', 'parseConfig']]),
      update('src/http.ts', [['function handle(req) { log("config parse") }', 'handle']]),
      update('lib/other.py', [['def unrelated(): pass', 'unrelated']]),
    ]);
    const hits = await s.lexical!.searchChunks({
      terms: ['parseconfig', 'parse', 'config'],
      limit: 10,
      weights: W,
    });
    assert.equal(hits[0]?.path, 'src/parser.ts');
    assert.ok(hits[0]!.score > hits[1]!.score);
    assert.equal(hits[0]?.symbol, 'parseConfig');
    const filtered = await s.lexical!.searchChunks({
      terms: ['parse'],
      limit: 10,
      weights: W,
      filter: { excludePaths: ['src/parser.ts'] },
    });
    assert.deepEqual(
      filtered.map((h) => h.path),
      ['src/http.ts'],
    );
    const byPrefix = await s.lexical!.searchChunks({
      terms: ['unrelated', 'parse'],
      limit: 10,
      weights: W,
      filter: { pathPrefixes: ['lib/'] },
    });
    assert.deepEqual(
      byPrefix.map((h) => h.path),
      ['lib/other.py'],
    );
    // whole path segments: a folder without its slash, or a file, but never a sibling whose name only starts alike
    // (regression: `--path lib` matched `lib-old/…` and `library/…`)
    for (const [prefixes, want] of [
      [['lib'], ['lib/other.py']],
      [['lib/other.py'], ['lib/other.py']],
      [['li'], []],
      [['lib/other'], []],
      [['src', 'lib'], ['lib/other.py']],
    ] as Array<[string[], string[]]>) {
      const hits = await s.lexical!.searchChunks({
        terms: ['unrelated'],
        limit: 10,
        weights: W,
        filter: { pathPrefixes: prefixes },
      });
      assert.deepEqual([...new Set(hits.map((h) => h.path))], want, prefixes.join(', '));
      // the file list under the same paths (a grep of one folder lists only its files)
      const listed = (await s.listFiles({ pathPrefixes: prefixes })).map((f) => f.path);
      const every = (await s.listFiles()).map((f) => f.path);
      assert.deepEqual(
        listed,
        every.filter((p) => prefixes.some((u) => p === u || p.startsWith(`${u}/`))),
        `listFiles ${prefixes.join(', ')}`,
      );
    }
    const byLang = await s.lexical!.searchChunks({
      terms: ['parse'],
      limit: 10,
      weights: W,
      filter: { languages: ['python'] },
    });
    assert.deepEqual(byLang, []);
    await s.close();
  });

  it('indexes a token of thousands of characters and finds its file by it', async () => {
    const s = await open();
    // a minified bundle's identifier or an encoded blob: one token of 6,400 characters that do not compress, and
    // another that differs from it at the end alone
    const hex = Array.from({ length: 100 }, (_, i) => createHash('sha256').update(`${i}`).digest('hex'));
    const long = `x${hex.join('')}`;
    await s.replaceFiles([
      update('dist/bundle.js', [[`const blob = "${long}"`, null]]),
      update('dist/other.js', [[`const blob = "${long.slice(0, -1)}b"`, null]]),
    ]);
    const hits = await s.lexical!.searchChunks({ terms: [long], limit: 10, weights: W });
    assert.deepEqual(
      hits.map((h) => h.path),
      ['dist/bundle.js'],
    );
    await s.close();
  });

  it('ranks whole files by BM25 over all their chunks', async () => {
    const s = await open();
    await s.replaceFiles([
      update('src/spread.ts', [
        ['function connect() { retry() }', 'connect'],
        ['function backoff() { delay() }', 'backoff'],
      ]),
      update('src/one.ts', [['function connect() { open() }', 'connect']]),
    ]);
    const hits = await s.lexical!.searchFiles({ terms: ['connect', 'backoff'], limit: 10, weights: W });
    assert.deepEqual(
      hits.map((h) => h.path),
      ['src/spread.ts', 'src/one.ts'],
    );
    await s.replaceFiles([update('src/spread.ts', [['nothing here', null]], 'h3')]);
    const after = await s.lexical!.searchFiles({ terms: ['backoff'], limit: 10, weights: W });
    assert.deepEqual(after, []);
    await s.deleteFiles(['src/one.ts']);
    assert.deepEqual(await s.lexical!.searchFiles({ terms: ['connect'], limit: 10, weights: W }), []);
    await s.close();
  });

  it('holds a first pass’s line windows, searchable, then ranks the parse that replaces them as a clean build does', async () => {
    const files: Array<[string, Array<[string, string | null]>]> = [
      ['src/a.ts', [['function connect() { retry(backoff) }', 'connect']]],
      ['src/b.ts', [['function backoff() { delay() }', 'backoff']]],
      ['src/c.ts', [['export const connect = open()', null]]],
    ];
    // the first pass: line windows, no symbols, no whole-file document
    const quick = (path: string, text: string): FileUpdate => ({
      file: { path, size: 100, mtimeMs: 1000, hash: `h-${path}`, language: 'typescript', method: 'quick' },
      chunks: [chunk(path, 0, text)],
      symbols: [],
      tokens: { path: '', symbols: '', body: '' },
    });
    const s = await open();
    await s.replaceFiles(files.map(([path, chunks]) => quick(path, chunks.map(([t]) => t).join('\n'))));
    await s.settle?.();
    assert.deepEqual(
      (await s.listFiles()).map((f) => f.method),
      ['quick', 'quick', 'quick'],
    );
    const early = await s.lexical!.searchChunks({ terms: ['backoff'], limit: 10, weights: W });
    assert.deepEqual(early.map((h) => h.path).sort(), ['src/a.ts', 'src/b.ts']);
    assert.deepEqual(await s.check(), [], 'a first pass’s files are sound');
    // the second pass, its files in another order than the first's (as workers finish them), and a new file
    await s.replaceFiles([
      update('src/c.ts', files[2]![1]),
      update('src/new.ts', [['function connect() {}', 'connect']]),
      update('src/a.ts', files[0]![1]),
      update('src/b.ts', files[1]![1]),
    ]);
    await s.settle?.();
    const clean = await open();
    await clean.replaceFiles([
      ...files.map(([path, chunks]) => update(path, chunks)),
      update('src/new.ts', [['function connect() {}', 'connect']]),
    ]);
    await clean.settle?.();
    for (const terms of [['connect'], ['backoff', 'delay'], ['connect', 'retry', 'open']]) {
      const q = { terms, limit: 10, weights: W };
      const round = (hits: Array<{ path: string; score: number }>) =>
        hits.map((h) => `${h.path} ${h.score.toFixed(6)}`).sort();
      assert.deepEqual(round(await s.lexical!.searchChunks(q)), round(await clean.lexical!.searchChunks(q)));
      assert.deepEqual(round(await s.lexical!.searchFiles(q)), round(await clean.lexical!.searchFiles(q)));
    }
    assert.deepEqual((await s.findSymbols(['connect'])).map((x) => x.path).sort(), [
      'src/a.ts',
      'src/new.ts',
    ]);
    assert.deepEqual(await s.check(), []);
    await s.close();
    await clean.close();
  });

  it('finds files by basename, stem and path fragment', async () => {
    const s = await open();
    await s.replaceFiles([
      update('pkg/registry.py', [['x', null]]),
      update('src/router/trie-router.ts', [['x', null]]),
      update('src/server.ts', [['x', null]]),
      update('src/serverless/a.ts', [['x', null]]),
    ]);
    const hits = await s.findFilesByName({
      basenames: ['registry.py'],
      stems: ['trie-router'],
      fragments: ['src/server'],
    });
    const got = hits.map((h) => `${h.match}:${h.path}`).sort();
    assert.deepEqual(got, [
      'basename:pkg/registry.py',
      'fragment:src/server.ts',
      'stem:src/router/trie-router.ts',
    ]);
    await s.close();
  });

  it('returns chunk text and symbol-to-chunk links', async () => {
    const s = await open();
    await s.replaceFiles([
      update('a.ts', [
        ['first', null],
        ['function second() {}', 'second'],
      ]),
    ]);
    const [sym] = await s.findSymbols(['second']);
    assert.ok(sym?.chunkId);
    const [c] = await s.getChunks([sym.chunkId]);
    assert.equal(c?.text, 'function second() {}');
    assert.equal((await s.countSymbolFiles(['second', 'nope'])).get('second'), 1);
    assert.deepEqual(
      ((await s.listSymbols(['a.ts'])).get('a.ts') ?? []).map((x) => x.name),
      ['second'],
    );
    await s.close();
  });

  it('links a symbol to the last chunk starting at or above it, the first of pieces that start on one line', async () => {
    const s = await open();
    const u = update('a.ts', [
      ['head', null],
      ['piece one', null],
      ['piece two', null],
      ['tail', null],
    ]);
    // a long line cut in pieces: chunks 1 and 2 both start on line 11
    u.chunks[2] = { ...u.chunks[2]!, startLine: 11, endLine: 11 };
    u.symbols = [
      { name: 'inHead', kind: 'function', startLine: 5, endLine: 6, container: null },
      { name: 'onLine', kind: 'function', startLine: 11, endLine: 11, container: null },
      { name: 'inTail', kind: 'function', startLine: 33, endLine: 33, container: null },
    ];
    await s.replaceFiles([u]);
    const texts = new Map<string, string | undefined>();
    for (const sym of await s.findSymbols(['inHead', 'onLine', 'inTail'])) {
      const [c] = await s.getChunks([sym.chunkId!]);
      texts.set(sym.name, c?.text);
    }
    assert.deepEqual(Object.fromEntries(texts), { inHead: 'head', onLine: 'piece one', inTail: 'tail' });
    await s.close();
  });

  it('gives each chunk the definitions that start within its lines, in line order', async () => {
    const s = await open();
    const lines = (word: string) => [word, 'b', 'c', 'd', 'e'].join('\n');
    const u = update('a.ts', [
      [lines('head'), null],
      [lines('middle'), null],
      [lines('tail'), null],
    ]);
    // chunk 0 holds lines 1-5, chunk 1 lines 11-15, chunk 2 lines 21-25
    u.symbols = [
      { name: 'second', kind: 'method', startLine: 13, endLine: 14, container: 'Box' },
      { name: 'first', kind: 'class', startLine: 11, endLine: 15, container: null },
      { name: 'between', kind: 'function', startLine: 7, endLine: 8, container: null },
      { name: 'last', kind: 'function', startLine: 25, endLine: 30, container: null },
    ];
    await s.replaceFiles([u, update('b.ts', [['other', 'other']])]);
    const ids = (await s.getFilesChunks(['a.ts'])).get('a.ts')!.map((c) => c.chunkId);
    const got = await s.chunkSymbols([...ids, 999_999]);
    assert.deepEqual(
      [...got].sort((a, b) => a[0] - b[0]),
      [
        [
          ids[1],
          [
            { name: 'first', kind: 'class', startLine: 11, endLine: 15, container: null },
            { name: 'second', kind: 'method', startLine: 13, endLine: 14, container: 'Box' },
          ],
        ],
        [ids[2], [{ name: 'last', kind: 'function', startLine: 25, endLine: 30, container: null }]],
      ],
      'the head holds none, `between` starts between chunks, an unknown chunk is absent',
    );
    assert.equal((await s.chunkSymbols([])).size, 0);
    await s.close();
  });

  it('keeps where files use names, finds them by exact name, and builds the reference graph', async () => {
    const s = await open();
    await s.replaceFiles([
      update('src/util.ts', [['function helper() {}', 'helper']]),
      {
        ...update('src/a.ts', [['function alpha() { helper(); Helper; }', 'alpha']]),
        refs: encodeRefs([
          { name: 'helper', lines: [1, 4] },
          { name: 'Helper', lines: [2] },
          { name: 'console', lines: [3] },
        ])!,
      },
      { ...update('src/b.ts', [['helper()', null]]), refs: encodeRefs([{ name: 'helper', lines: [7] }])! },
    ]);
    assert.deepEqual(await s.references!.find('helper'), [
      { name: 'helper', path: 'src/a.ts', lines: [1, 4] },
      { name: 'helper', path: 'src/b.ts', lines: [7] },
    ]);
    assert.deepEqual(
      (await s.references!.find('Helper')).map((r) => r.path),
      ['src/a.ts'],
      'exact case',
    );
    assert.deepEqual(await s.references!.find('nothing'), []);
    const graph = await referenceGraph(s);
    assert.deepEqual(
      graph.defs.map((d) => [d.name, d.path]),
      [
        ['alpha', 'src/a.ts'],
        ['helper', 'src/util.ts'],
      ],
    );
    // only names something defines: `console` and `Helper` link nothing
    assert.deepEqual(graph.refs.map((r) => [r.name, r.path, r.count]).sort(), [
      ['helper', 'src/a.ts', 2],
      ['helper', 'src/b.ts', 1],
    ]);
    await s.replaceFiles([update('src/b.ts', [['nothing here', null]], 'h3')]);
    await s.deleteFiles(['src/a.ts']);
    assert.deepEqual(await s.references!.find('helper'), []);
    assert.deepEqual((await referenceGraph(s)).refs, []);
    await s.close();
  });

  it('keeps coarse and chunk vectors, ranks by cosine, and drops a file’s vectors when it changes', async () => {
    const s = await open();
    const v = s.vectors;
    if (!v) return void (await s.close());
    await s.replaceFiles([
      update('a.ts', [
        ['alpha', 'alpha'],
        ['beta', null],
      ]),
      update('b.ts', [['gamma', null]]),
    ]);
    assert.equal(await v.embedder(), undefined);
    assert.deepEqual(await v.useEmbedder('test-embedder', 3), { reset: false });
    const p1 = await v.pendingFiles(1, 10);
    assert.deepEqual(p1.map((p) => p.path).sort(), ['a.ts', 'b.ts']);
    await v.putFileVectors(
      p1.map((p) => ({ path: p.path, hash: p.hash, vector: vec(p.path === 'a.ts' ? [1, 0, 0] : [0, 1, 0]) })),
    );
    assert.equal((await v.pendingFiles(1, 10)).length, 0);
    const p2 = await v.pendingFiles(2, 10);
    const a = p2.find((p) => p.path === 'a.ts')!;
    const aChunks = (await s.getFilesChunks(['a.ts'])).get('a.ts')!;
    assert.equal(aChunks.length, 2);
    await v.putChunkVectors([
      {
        path: 'a.ts',
        hash: a.hash,
        vectors: [
          { chunkId: aChunks[0]!.chunkId, vector: vec([1, 0, 0]) },
          { chunkId: aChunks[1]!.chunkId, vector: vec([0, 0, 1]) },
        ],
      },
      { path: 'b.ts', hash: 'stale-hash', vectors: [] },
    ]);
    let status = await v.status();
    assert.deepEqual([status.files, status.coarse, status.refined, status.chunkVectors], [2, 2, 1, 2]);
    assert.deepEqual(status.embedder, { id: 'test-embedder', dimension: 3 });
    assert.deepEqual(await v.embedder(), { id: 'test-embedder', dimension: 3 });
    assert.deepEqual(await s.check(), [], 'vectors agree with the files marked embedded');

    const near = await v.searchChunks(vec([0.9, 0, 0.1]), 2);
    assert.equal(near[0]?.chunkId, aChunks[0]!.chunkId);
    assert.equal(near[0]?.path, 'a.ts');
    assert.ok(near[0]!.score > near[1]!.score);
    assert.ok(Math.abs(near[0]!.score - 0.9 / Math.sqrt(0.82)) < 1e-3, 'score is the cosine similarity');
    assert.deepEqual(await v.searchChunks(vec([1, 0, 0]), 5, { excludePaths: ['a.ts'] }), []);
    const files = await v.searchFiles(vec([0, 1, 0]), 2);
    assert.deepEqual({ ...files[0], score: 0 }, { path: 'b.ts', score: 0, refined: false });
    const inA = await v.searchFiles(vec([0, 1, 0]), 2, { paths: ['a.ts'] });
    assert.deepEqual(
      inA.map((f) => [f.path, f.refined]),
      [['a.ts', true]],
    );

    await s.replaceFiles([update('a.ts', [['alpha changed', 'alpha']], 'h-new')]);
    status = await v.status();
    assert.deepEqual([status.coarse, status.refined, status.chunkVectors], [1, 0, 0]);
    assert.deepEqual(await v.searchChunks(vec([1, 0, 0]), 5), [], 'a changed file’s chunk vectors are gone');

    await s.deleteFiles(['b.ts']);
    assert.deepEqual(await v.searchFiles(vec([0, 1, 0]), 5), [], 'a deleted file’s vector is gone');
    await s.settle?.();
    assert.deepEqual(await s.check(), [], 'no vector outlives its file');

    assert.deepEqual(await v.useEmbedder('other-embedder', 3), { reset: true });
    status = await v.status();
    assert.deepEqual([status.coarse, status.refined], [0, 0]);
    assert.deepEqual(
      await v.useEmbedder('other-embedder', 4),
      { reset: true },
      'another dimension resets too',
    );
    assert.deepEqual(await v.embedder(), { id: 'other-embedder', dimension: 4 });
    await s.close();
  });

  it('holds a data file with vectors for its head only, and still notices a vector missing from that head', async () => {
    const s = await open();
    const v = s.vectors;
    if (!v) return void (await s.close());
    const rows = Array.from(
      { length: DATA_CHUNK_VECTORS + 4 },
      (_, i) => [`row ${i},${i * 7}`, null] as [string, null],
    );
    await s.replaceFiles([update('data/table.csv', rows)]);
    await v.useEmbedder('test-embedder', 3);
    const [pending] = await v.pendingFiles(1, 10);
    await v.putFileVectors([{ path: 'data/table.csv', hash: pending!.hash, vector: vec([1, 0, 0]) }]);
    const stored = (await s.getFilesChunks(['data/table.csv'])).get('data/table.csv')!;
    const head = chunksToEmbed('data/table.csv', stored);
    assert.equal(
      head.length,
      DATA_CHUNK_VECTORS,
      'the first chunks of a data file get vectors, not its tail',
    );
    assert.deepEqual(
      head.map((c) => c.chunkId),
      stored.slice(0, DATA_CHUNK_VECTORS).map((c) => c.chunkId),
    );
    const put = (chunks: typeof head) =>
      v.putChunkVectors([
        {
          path: 'data/table.csv',
          hash: pending!.hash,
          vectors: chunks.map((c, i) => ({ chunkId: c.chunkId, vector: vec([1, i, 0]) })),
        },
      ]);
    await put(head.slice(1));
    await s.settle?.();
    assert.equal((await s.check()).length, 1, 'a chunk of the head without its vector is a fault');
    await put(head);
    await s.settle?.();
    assert.equal((await v.status()).refined, 1);
    assert.deepEqual(await s.check(), [], 'the tail without vectors is no fault');
    await s.close();
  });

  it('keeps the vector ledger: the embedder record, and phases marked only while a file’s content is the one embedded', async () => {
    const s = await open();
    const ledger = s.ledger;
    if (!ledger) return void (await s.close());
    const skipped = update('bin/blob.dat', []);
    await s.replaceFiles([
      update('a.ts', [
        ['alpha', 'alpha'],
        ['beta', null],
      ]),
      update('b.ts', [['gamma', null]]),
      { ...skipped, file: { ...skipped.file, method: 'skipped' } },
    ]);
    assert.equal(await ledger.recordedEmbedder(), undefined);
    await ledger.recordEmbedder('test-embedder', 3);
    assert.deepEqual(await ledger.recordedEmbedder(), { id: 'test-embedder', dimension: 3 });

    const pending = await ledger.pendingFiles(1, 10);
    assert.deepEqual(
      pending.map((p) => p.path).sort(),
      ['a.ts', 'b.ts'],
      'a skipped file (or one without chunks) waits for no vector',
    );
    assert.deepEqual(await ledger.pendingFiles(1, 1), [pending[0]], 'in a stable order');
    const hashOf = new Map(pending.map((p) => [p.path, p.hash]));
    assert.deepEqual(await ledger.phaseCounts(), { files: 2, coarse: 0, refined: 0 });

    const marked = await ledger.markVectors(
      [
        { path: 'a.ts', hash: hashOf.get('a.ts')! },
        { path: 'b.ts', hash: 'stale-hash' },
        { path: 'gone.ts', hash: 'h' },
      ],
      1,
    );
    assert.deepEqual([...marked], ['a.ts'], 'only a file whose content is still the one embedded is marked');
    assert.deepEqual(
      (await ledger.pendingFiles(1, 10)).map((p) => p.path),
      ['b.ts'],
    );
    assert.deepEqual((await ledger.pendingFiles(2, 10)).map((p) => p.path).sort(), ['a.ts', 'b.ts']);
    await ledger.markVectors([{ path: 'a.ts', hash: hashOf.get('a.ts')! }], 2);
    await ledger.markVectors([{ path: 'a.ts', hash: hashOf.get('a.ts')! }], 1);
    assert.deepEqual(
      await ledger.phaseCounts(),
      { files: 2, coarse: 1, refined: 1 },
      'a phase is never lowered',
    );

    const files = await ledger.filesByPath(['a.ts', 'b.ts', 'none.ts']);
    assert.deepEqual([...files].sort(), [
      ['a.ts', { hash: hashOf.get('a.ts'), language: 'typescript', phase: 2 }],
      ['b.ts', { hash: hashOf.get('b.ts'), language: 'typescript', phase: 0 }],
    ]);
    const rows = await ledger.phaseRows();
    assert.deepEqual([...rows.files].sort(), [
      ['a.ts', 2],
      ['b.ts', 0],
      ['bin/blob.dat', 0],
    ]);
    const chunks = await s.getFilesChunks(['a.ts', 'b.ts']);
    const expected = [...chunks.values()]
      .flat()
      .map((c) => [
        String(c.chunkId),
        { path: c.path, ordinal: c.ordinal, phase: c.path === 'a.ts' ? 2 : 0 },
      ]);
    assert.deepEqual([...rows.chunks].sort(), expected.sort());

    // a file whose content changes loses its marks; a reset forgets every file's
    await s.replaceFiles([update('a.ts', [['alpha changed', 'alpha']], 'h-new')]);
    assert.deepEqual(await ledger.phaseCounts(), { files: 2, coarse: 0, refined: 0 });
    await ledger.markVectors([{ path: 'a.ts', hash: 'h-new' }], 2);
    assert.equal((await ledger.filesByPath(['a.ts'])).get('a.ts')?.phase, 2);
    await ledger.resetVectorPhases();
    assert.deepEqual(await ledger.phaseCounts(), { files: 2, coarse: 0, refined: 0 });
    assert.deepEqual((await ledger.pendingFiles(2, 10)).map((p) => p.path).sort(), ['a.ts', 'b.ts']);
    assert.deepEqual(
      await ledger.recordedEmbedder(),
      { id: 'test-embedder', dimension: 3 },
      'the record stays',
    );
    await s.close();
  });

  it('caches vectors by embedder and text hash', async () => {
    const s = await open();
    const cache = s.cache;
    if (!cache) return void (await s.close());
    await cache.put('e1', [{ hash: 'h1', vector: vec([0.5, 0.25, 1]) }]);
    await cache.put('e1', [{ hash: 'h1', vector: vec([0.5, 0.25, 1]) }]);
    const got = await cache.get('e1', ['h1', 'h2']);
    assert.deepEqual([...got.keys()], ['h1']);
    assert.deepEqual(Array.from(got.get('h1')!), [0.5, 0.25, 1]);
    assert.equal((await cache.get('e2', ['h1'])).size, 0);
    await s.close();
  });

  it('finds the files that hold literals by trigram, without regard to case, replaced and deleted with them', async () => {
    const s = await open();
    if (!s.exact) return void (await s.close());
    await s.replaceFiles([
      { ...update('r.ts', [['route', null]]), text: "const id = c.req.param('id');\n" },
      { ...update('p.py', [['param', null]]), text: '# C.REQ.PARAM( upper\ndef paramless(): pass\n' },
      { ...update('q.md', [['other', null]]), text: 'nothing of the kind\n' },
      // an emoji is two UTF-16 units: a trigram window that halves it once failed PostgreSQL's whole batch
      { ...update('e.rs', [['emoji', null]]), text: 'println!("done 🚀 ok");\n' },
      // a final sigma, a micro sign and a long s: letters lower case leaves apart from those a grep without case
      // equates them with
      { ...update('g.txt', [['greek', null]]), text: 'ΟΔΥΣΣΕΥΣ waited 10µs, ſtatic\n' },
    ]);
    const find = (plan: string[][]) => s.exact!.candidates(plan);
    assert.deepEqual(await find([['🚀 ok']]), ['e.rs']);
    assert.deepEqual(await find([['ΔΥΣ']]), ['g.txt']);
    assert.deepEqual(await find([['10μs'], ['STATIC']]), ['g.txt']);
    assert.deepEqual(await find([['c.req.param(']]), ['p.py', 'r.ts']);
    assert.deepEqual(await find([['param', 'less']]), ['p.py']);
    assert.deepEqual(await find([['nothing'], ["'id'"]]), ['q.md', 'r.ts']);
    assert.deepEqual(await find([['zzz']]), []);
    await s.replaceFiles([{ ...update('r.ts', [['route', null]], 'h2'), text: 'const id = 1;\n' }]);
    await s.deleteFiles(['p.py']);
    assert.deepEqual(await find([['c.req.param(']]), []);
    assert.deepEqual(await find([['const id']]), ['r.ts']);
    await s.close();
  });

  it('keeps file text as indexed, when it keeps text at all, and lists its repositories', async () => {
    const s = await open();
    if (s.content) {
      await s.replaceFiles([
        { ...update('a.ts', [['alpha', null]]), text: 'const alpha = 1;\n' },
        { ...update('b.ts', [['beta', null]]), text: 'beta\n' },
      ]);
      assert.deepEqual([...(await s.content.read(['a.ts', 'b.ts', 'none.ts'])).entries()].sort(), [
        ['a.ts', 'const alpha = 1;\n'],
        ['b.ts', 'beta\n'],
      ]);
      // replaced without text (skipped, say): the old text goes; deleted: it goes with the file
      await s.replaceFiles([update('a.ts', [['alpha two', null]], 'h2')]);
      await s.deleteFiles(['b.ts']);
      assert.equal((await s.content.read(['a.ts', 'b.ts'])).size, 0);
    }
    if (s.repositories) {
      const mine = (await s.repositories.list()).filter((r) => r.files > 0);
      assert.ok(mine.length >= 1);
      assert.ok(mine.every((r) => typeof r.name === 'string' && r.chunks >= 0 && r.bytes >= 0));
    }
    await s.close();
  });
}

function vec(xs: number[]): Float32Array {
  return new Float32Array(xs);
}
