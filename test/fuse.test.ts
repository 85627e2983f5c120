import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_CONFIG } from '../src/config/config.ts';
import { definitionsFirst, fuse, type Gathered, leadWithDefinitions } from '../src/search/search.ts';
import type { ChunkHit } from '../src/store/types.ts';

/** Fusion is pure: these lists stand for what the retrievers gathered, no store involved. */
const hit = (chunkId: number, path: string, score: number): ChunkHit => ({
  chunkId,
  path,
  startLine: chunkId * 10,
  endLine: chunkId * 10 + 5,
  symbol: null,
  kind: null,
  score,
});

function gathered(over: Partial<Gathered> = {}): Gathered {
  return {
    lexical: [hit(1, 'src/a.ts', 10), hit(2, 'src/b.ts', 8), hit(3, 'src/c.ts', 2)],
    extraLexical: [],
    fileLexical: [
      { path: 'src/a.ts', score: 5 },
      { path: 'src/b.ts', score: 4 },
    ],
    fileHints: new Map(),
    namedFiles: new Map(),
    symbolHints: new Map(),
    exactHits: new Map(),
    definitions: new Map(),
    definitionChunks: new Set(),
    hinted: [],
    denseChunks: [],
    denseFiles: [],
    ...over,
  };
}

describe('fusion without a store', () => {
  it('orders lexically by BM25 with the whole-file score, and ignores dense lists in lexical mode', () => {
    const g = gathered({ denseChunks: [hit(3, 'src/c.ts', 0.9)] });
    const { ordered, files } = fuse(g, DEFAULT_CONFIG, { mode: 'lexical' });
    assert.deepEqual(
      ordered.map((c) => c.hit.chunkId),
      [1, 2, 3],
    );
    assert.equal(ordered[2]!.dense, 0, 'dense evidence is not read in lexical mode');
    assert.deepEqual(
      files.map((f) => f.path),
      ['src/a.ts', 'src/b.ts', 'src/c.ts'],
    );
  });

  it('lets the dense list lift a chunk in hybrid mode, and weighs it by the share of the query the model read', () => {
    const dense = [hit(3, 'src/c.ts', 0.9), hit(4, 'src/d.ts', 0.8), hit(2, 'src/b.ts', 0.7)];
    const full = fuse(gathered({ denseChunks: dense }), DEFAULT_CONFIG, { mode: 'hybrid' });
    const rankOf = (r: typeof full, id: number) => r.ordered.findIndex((c) => c.hit.chunkId === id);
    assert.ok(rankOf(full, 4) >= 0, 'a chunk only the dense list found is a candidate');
    // c (lexically third) and b are found by both lists: reciprocal rank fusion puts them above a, found by one
    assert.ok(rankOf(full, 3) < rankOf(full, 1) && rankOf(full, 2) < rankOf(full, 1));
    const lexical = fuse(gathered({ denseChunks: dense }), DEFAULT_CONFIG, { mode: 'lexical' });
    assert.equal(lexical.ordered[0]!.hit.chunkId, 1);
    const partial = fuse(gathered({ denseChunks: dense }), DEFAULT_CONFIG, {
      mode: 'hybrid',
      queryCoverage: 0.1,
    });
    const d = (r: typeof full) => r.ordered.find((c) => c.hit.chunkId === 4)!.final;
    assert.ok(d(partial) < d(full) / 5, 'a dense list that read a tenth of the query speaks a tenth as loud');
  });

  it('puts a file the query names outright into file fusion as a list of its own', () => {
    const plain = fuse(gathered(), DEFAULT_CONFIG, { mode: 'hybrid' });
    const named = fuse(
      gathered({ namedFiles: new Map([['src/c.ts', 1]]), fileHints: new Map([['src/c.ts', 1]]) }),
      DEFAULT_CONFIG,
      { mode: 'hybrid' },
    );
    const at = (r: typeof plain, p: string) => r.files.findIndex((f) => f.path === p);
    assert.ok(at(named, 'src/c.ts') < at(plain, 'src/c.ts'));
    assert.equal(named.files[0]!.path, 'src/c.ts');
  });

  it('scores chunks that only hints reached, and files known only as whole documents', () => {
    const g = gathered({
      hinted: [hit(9, 'src/named.ts', 0)],
      symbolHints: new Map([[9, 1]]),
      fileLexical: [...gathered().fileLexical, { path: 'docs/guide.md', score: 3 }],
    });
    const { ordered, files } = fuse(g, DEFAULT_CONFIG, { mode: 'lexical' });
    const hinted = ordered.find((c) => c.hit.chunkId === 9)!;
    assert.equal(hinted.symbolHint, 1);
    assert.ok(hinted.final > 0);
    assert.ok(files.some((f) => f.path === 'docs/guide.md'));
  });
});

describe('a symbol query: the definition first, whatever the dense list says', () => {
  it("leads the definition's file with the definition's chunk, its neighbours in their order", () => {
    // hybrid, httpx: the module's import header and a member were nearer "AsyncHTTPTransport" than the class
    const ordered = [
      hit(1, 'default.py', 0),
      hit(5, 'default.py', 0),
      hit(2, 'default.py', 0),
      hit(9, 'other.py', 0),
    ].map((h) => ({ hit: h })) as unknown as Parameters<typeof leadWithDefinitions>[0];
    const relevance = new Map(ordered.map((c, i) => [c, 1 - i / 10]));
    leadWithDefinitions(ordered, relevance, new Set([5]));
    const inFile = ordered
      .filter((c) => c.hit.path === 'default.py')
      .sort((a, b) => (relevance.get(b) ?? 0) - (relevance.get(a) ?? 0));
    assert.deepEqual(
      inFile.map((c) => c.hit.chunkId),
      [5, 1, 2],
    );
    assert.equal(relevance.get(ordered[3]!), 0.7, 'another file keeps its relevance');
  });

  it('moves the few files defining the name to the front, a type before a function, scores still falling', () => {
    const files = [
      { path: 'client.py', score: 0.9 },
      { path: 'funcs.py', score: 0.5 },
      { path: 'transport.py', score: 0.4 },
    ];
    const defs = new Map([
      ['transport.py', { type: true }],
      ['funcs.py', { type: false }],
    ]);
    const moved = definitionsFirst(files, defs);
    assert.deepEqual(
      moved.map((f) => f.path),
      ['transport.py', 'funcs.py', 'client.py'],
    );
    assert.ok(moved.every((f, i) => i === 0 || f.score <= moved[i - 1]!.score));
    const many = new Map(Array.from({ length: 6 }, (_, i) => [`d${i}.py`, { type: false }] as const));
    assert.equal(definitionsFirst(files, many), files, 'a name defined in many files: the ranking decides');
  });
});
