import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { indexProject } from '../src/project/local/index.ts';
import { readVarints } from '../src/store/pruned.ts';
import { openSqliteStore, SCHEMA_VERSION } from '../src/store/sqlite/index.ts';
import {
  copyPolyglot,
  indexLexically,
  lineFile,
  makeTree,
  openLexical,
  removeTree,
  runCli,
} from './helpers.ts';
import { prunedCorpus } from './pruned-corpus.ts';
import { storeContract } from './store-contract.ts';

const dirs: string[] = [];

/** Marks an index as written at schema `version`: its next opening applies the migrations after it again. */
function schemaAt(db: Database.Database, version: number): void {
  db.prepare(`UPDATE meta SET value = ? WHERE key = 'schema_version'`).run(String(version));
}
after(() => dirs.forEach(removeTree));
function freshPath(): string {
  const d = makeTree({});
  dirs.push(d);
  return join(d, '.quarry', 'index.db');
}

/** Indexes a tree lexically and returns the run's report. */
async function indexProjectAt(root: string) {
  const p = await openLexical(root);
  try {
    return await indexProject(p);
  } finally {
    await p.close();
  }
}

describe('SqliteStore: the store contract', () => {
  storeContract(async () => openSqliteStore(freshPath()));
});

describe('SqliteStore specifics', () => {
  it('its check finds rows behind the index’s back, a wrong BM25 count, and nothing in a sound index', async () => {
    const root = makeTree({
      'a.ts': 'export function alpha() {\n  return 1;\n}\n',
      'b.ts': 'export function beta() {\n  return alpha();\n}\n',
    });
    dirs.push(root);
    await indexLexically(root);
    const path = join(root, '.quarry', 'index.db');
    const store = openSqliteStore(path);
    assert.deepEqual(await store.check(), []);
    await store.close();
    // a BM25 row count that the rows do not have (what an update left before settle() recounted)
    const db = new Database(path);
    db.unsafeMode(true);
    db.prepare(`UPDATE chunks_fts_data SET block = ? WHERE id = 1`).run(Buffer.from([9, 1, 1, 1]));
    db.unsafeMode(false);
    const s1 = openSqliteStore(path);
    let problems = await s1.check();
    await s1.close();
    assert.ok(
      problems.some((p) => /chunks_fts counts 9 documents for BM25 but holds 2/.test(p)),
      problems.join('\n'),
    );
    // a chunk deleted behind the full-text table's back
    db.pragma('foreign_keys = OFF');
    db.prepare(`DELETE FROM chunks WHERE id = (SELECT min(id) FROM chunks)`).run();
    db.close();
    const s2 = openSqliteStore(path);
    problems = await s2.check();
    await s2.close();
    assert.ok(
      problems.some((p) => /chunks_fts has 1 documents of no chunks/.test(p)),
      problems.join('\n'),
    );
    // quarry doctor says so, with the count, and exits 6
    const doctor = runCli(['doctor'], { cwd: root });
    assert.equal(doctor.code, 6, doctor.stdout + doctor.stderr);
    assert.match(doctor.stdout + doctor.stderr, /problems? in the index: .*chunks_fts/);
  });

  it('merges FTS5 segments once many chunk documents were deleted, and ranks the same after', async () => {
    const path = freshPath();
    const s = openSqliteStore(path, { mergeMin: 10 });
    const words = ['alpha beta', 'beta gamma', 'gamma delta', 'delta alpha'];
    // one transaction a file: a segment each
    for (let i = 0; i < 12; i++)
      await s.replaceFiles([lineFile(`f${i}.ts`, [words[i % 4]!, `${words[(i + 1) % 4]} x${i}`])]);
    await s.settle?.();
    const search = (store = s) =>
      store.lexical.searchChunks({
        terms: ['alpha', 'gamma'],
        limit: 50,
        weights: { path: 4, symbol: 3, body: 1 },
      });
    const segments = () => {
      const db = new Database(path, { readonly: true });
      try {
        return {
          segments: Number(db.prepare(`SELECT count(DISTINCT segid) FROM chunks_fts_idx`).pluck().get()),
          deleted: db.prepare(`SELECT value FROM meta WHERE key = 'fts_deleted'`).pluck().get(),
        };
      } finally {
        db.close();
      }
    };
    assert.ok(segments().segments > 1, 'a segment per transaction before any merge');
    // four files replaced: 8 chunk documents deleted, below the minimum of 10
    for (let i = 0; i < 4; i++) await s.replaceFiles([lineFile(`f${i}.ts`, [words[(i + 2) % 4]!, `y${i}`])]);
    await s.settle?.();
    assert.equal(segments().deleted, '8');
    const before = await search();
    // four more: 16 deleted, past the minimum and a quarter of the 24 left, so settle() merges
    for (let i = 4; i < 8; i++) await s.replaceFiles([lineFile(`f${i}.ts`, [words[(i + 2) % 4]!, `y${i}`])]);
    assert.equal(segments().deleted, '16');
    await s.settle?.();
    assert.deepEqual(segments(), { segments: 1, deleted: undefined });
    const merged = await search();
    assert.notDeepEqual(merged, before);
    // ranks and scores as a clean build of the same files has them
    const clean = openSqliteStore(freshPath());
    await clean.replaceFiles(
      Array.from({ length: 12 }, (_, i) =>
        i < 8
          ? lineFile(`f${i}.ts`, [words[(i + 2) % 4]!, `y${i}`])
          : lineFile(`f${i}.ts`, [words[i % 4]!, `${words[(i + 1) % 4]} x${i}`]),
      ),
    );
    const fresh = await search(clean);
    await clean.close();
    const shape = (hits: typeof merged) =>
      hits.map((h) => `${h.score.toFixed(9)} ${h.path}:${h.startLine}`).sort();
    assert.deepEqual(shape(merged), shape(fresh));
    assert.deepEqual(await s.check(), []);
    await s.close();
  });

  it('takes what deleted documents held off BM25’s averages, as a clean build counts them, and recounts an older index', async () => {
    // each table's averages record: [documents, tokens in each column] (no record, or all zeros, when it is empty)
    const records = (path: string) => {
      const db = new Database(path, { readonly: true });
      try {
        return ['chunks_fts', 'files_fts', 'refs_fts'].map((t) => {
          const block = db.prepare(`SELECT block FROM ${t}_data WHERE id = 1`).pluck().get() as Buffer;
          const record = block?.length ? readVarints(block) : [];
          return record.every((n) => n === 0) ? [] : record;
        });
      } finally {
        db.close();
      }
    };
    const body = (i: number, n: number) => Array.from({ length: n }, (_, k) => `w${(i * 7 + k) % 13} x${k}`);
    const path = freshPath();
    const s = openSqliteStore(path);
    await s.replaceFiles(Array.from({ length: 10 }, (_, i) => lineFile(`f${i}.ts`, body(i, 2 + (i % 3)))));
    await s.settle?.();
    // updates of other lengths, in two transactions, and deletes: nothing settled in between
    await s.replaceFiles([lineFile('f1.ts', body(20, 6)), lineFile('f4.ts', body(21, 1))]);
    await s.replaceFiles([lineFile('f7.ts', body(22, 4)), lineFile('f11.ts', body(23, 3))]);
    await s.deleteFiles(['f2.ts', 'f8.ts']);
    const pending = new Database(path, { readonly: true });
    const kept = pending
      .prepare(`SELECT value FROM meta WHERE key = 'fts_unsettled'`)
      .pluck()
      .get() as string;
    pending.close();
    assert.match(kept, /"chunks_fts":\[\d+,/, 'the deleted documents’ sizes are kept until settle()');
    await s.settle?.();
    assert.deepEqual(await s.check(), []);
    const after = records(path);
    const final = (await s.listFiles()).map((f) => f.path);
    await s.close();
    const clean = freshPath();
    const c = openSqliteStore(clean);
    const finalBody: Record<string, string[]> = {
      'f1.ts': body(20, 6),
      'f4.ts': body(21, 1),
      'f7.ts': body(22, 4),
      'f11.ts': body(23, 3),
    };
    await c.replaceFiles(
      final.map((p) =>
        lineFile(p, finalBody[p] ?? body(Number(p.slice(1, -3)), 2 + (Number(p.slice(1, -3)) % 3))),
      ),
    );
    await c.settle?.();
    await c.close();
    assert.deepEqual(after, records(clean), 'each averages record is a clean build’s');
    assert.ok(after[0]!.length === 4 && after[0]![0]! > 0);
    // an index from before the sums were kept says only that a recount is due: every docsize row is counted
    const old = new Database(path);
    old.unsafeMode(true);
    old.prepare(`UPDATE chunks_fts_data SET block = ? WHERE id = 1`).run(Buffer.from([99, 1, 1, 1]));
    old.unsafeMode(false);
    old.prepare(`INSERT INTO meta (key, value) VALUES ('fts_unsettled', '1')`).run();
    old.close();
    const again = openSqliteStore(path);
    await again.settle?.();
    assert.deepEqual(await again.check(), []);
    await again.close();
    assert.deepEqual(records(path), after);
  });

  it('uses WAL and records its schema version', async () => {
    const path = freshPath();
    const s = openSqliteStore(path);
    await s.close();
    const db = new Database(path);
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(
      db.prepare(`SELECT value FROM meta WHERE key = 'schema_version'`).pluck().get(),
      String(SCHEMA_VERSION),
    );
    db.close();
  });

  it('migrates an index of schema 1 and marks its files for re-reading', async () => {
    const path = freshPath();
    const s = openSqliteStore(path);
    await s.replaceFiles([
      {
        file: {
          path: 'a.ts',
          size: 10,
          mtimeMs: 5,
          hash: 'abc',
          language: 'typescript',
          method: 'tree-sitter',
        },
        chunks: [],
        symbols: [],
        tokens: { path: 'ts', symbols: '', body: '' },
      },
    ]);
    await s.close();
    // turn it back into a schema-1 index: no coarse file documents, no vocabularies, no embedding columns, no refs,
    // no trigram index
    const db = new Database(path);
    db.exec(`DROP TABLE files_fts; DROP TABLE chunks_vocab; DROP TABLE files_vocab; DROP TABLE embed_cache; DROP TABLE file_refs; DROP TABLE refs_fts; DROP TABLE trigram_fts;
             DROP INDEX files_vec_phase; ALTER TABLE files DROP COLUMN vec_phase;
             UPDATE meta SET value = '1' WHERE key = 'schema_version'`);
    db.close();
    const migrated = openSqliteStore(path);
    assert.equal(await migrated.getMeta('schema_version'), String(SCHEMA_VERSION));
    // its file is not yet in the new trigram index: grep reads every file rather than trust an empty index
    assert.equal(await migrated.exact.candidates([['abc']]), undefined);
    const f = await migrated.getFile('a.ts');
    assert.equal(f?.size, -1, 'a stat that never matches, so the next index run re-reads the file');
    assert.deepEqual(
      await migrated.lexical.searchFiles({
        terms: ['ts'],
        limit: 5,
        weights: { path: 1, symbol: 1, body: 1 },
      }),
      [],
    );
    await migrated.close();
  });

  it('keeps trigrams without positions: a literal is the AND of its trigrams, and an older table is rebuilt', async () => {
    const path = freshPath();
    const s = openSqliteStore(path);
    const file = (p: string, text: string) => ({
      file: { path: p, size: text.length, mtimeMs: 5, hash: p, language: 'text', method: 'lines' as const },
      chunks: [],
      symbols: [],
      tokens: { path: p, symbols: '', body: '' },
      text,
    });
    await s.replaceFiles([
      file('a.txt', 'say "hello" to 𝒳𝒴𝒵 and Ünïcode'),
      file('b.txt', 'hel lo llo "he'),
      file('c.txt', 'nothing here'),
    ]);
    // b.txt holds every trigram of neither literal: only a.txt is a candidate; case is folded as before
    assert.deepEqual(await s.exact.candidates([['"hello"']]), ['a.txt']);
    assert.deepEqual(await s.exact.candidates([['𝒳𝒴𝒵'], ['ünïcode']]), ['a.txt']);
    assert.deepEqual(await s.exact.candidates([['HELLO'], ['nothing']]), ['a.txt', 'c.txt']);
    // trigrams are cut by UTF-16 units, as PostgreSQL cuts them: two emoji-like letters are four units, two trigrams
    assert.deepEqual(await s.exact.candidates([['𝒳𝒴']]), ['a.txt']);
    // another process's large run writes a first pass's file, with no trigrams yet: this reader (a server) reads
    // every file until the second pass gives them, then trusts the table again
    const other = openSqliteStore(path);
    const quick = { ...file('d.txt', 'hello again'), text: undefined };
    await other.replaceFiles([{ ...quick, file: { ...quick.file, method: 'quick' as const } }]);
    assert.equal(await s.exact.candidates([['hello']]), undefined);
    await other.replaceFiles([file('d.txt', 'hello again')]);
    assert.deepEqual(await s.exact.candidates([['hello']]), ['a.txt', 'd.txt']);
    await other.close();
    await s.close();

    // an index from before: its trigram table kept positions. The migration rebuilds it, and the next index run gives
    // each unchanged file's text again without parsing it
    const root = makeTree({
      'src/a.py': 'def hello():\n    return "hello world"\n',
      'notes.md': '# nothing here\n',
    });
    dirs.push(root);
    await indexLexically(root);
    const index = join(root, '.quarry', 'index.db');
    const db = new Database(index);
    db.exec(`DROP TABLE trigram_fts;
             CREATE VIRTUAL TABLE text_fts USING fts5 (text, content = '', contentless_delete = 1, tokenize = 'trigram');`);
    schemaAt(db, 8);
    const chunkIds = db.prepare('SELECT id FROM chunks ORDER BY id').pluck().all();
    db.close();
    const migrated = openSqliteStore(index);
    assert.equal(
      await migrated.exact.candidates([['hello']]),
      undefined,
      'empty until re-read: every file is read',
    );
    assert.equal((await migrated.getFile('src/a.py'))?.size, -1);
    await migrated.close();
    const report = await indexProjectAt(root);
    assert.equal(report.touched, 2, 'both files given back unchanged');
    assert.equal(report.updated + report.added, 0, 'nothing parsed again');
    const after = openSqliteStore(index);
    assert.deepEqual(await after.exact.candidates([['hello wor']]), ['src/a.py']);
    assert.equal((await after.getFile('src/a.py'))?.size, 38);
    await after.close();
    const raw = new Database(index, { readonly: true });
    assert.match(
      String(raw.prepare(`SELECT sql FROM sqlite_master WHERE name = 'trigram_fts'`).pluck().get()),
      /tokenize = 'ascii', detail = none/,
      'the trigram words, without positions',
    );
    assert.deepEqual(
      raw.prepare('SELECT id FROM chunks ORDER BY id').pluck().all(),
      chunkIds,
      'the chunks were kept',
    );
    raw.close();
  });

  it('parses Swift files and .h headers again after the upgrade that mends how they parse, then indexes chunks for symbols', async () => {
    const root = makeTree({
      'Sources/Crash.swift': 'let regex = #"wait\\(\\) must not be called"#\nfunc quiesce() -> Int { 1 }\n',
      'include/logger.h': 'namespace logging {\nclass Logger {\n public:\n  void flush() {}\n};\n}\n',
      'src/a.py': 'def hello():\n    return 1\n',
    });
    dirs.push(root);
    await indexLexically(root);
    const index = join(root, '.quarry', 'index.db');
    const db = new Database(index);
    // before the Swift and header migration, the chunk index for symbols after it, and the headers' language
    schemaAt(db, 10);
    db.exec('DROP INDEX chunks_start');
    db.close();
    const migrated = openSqliteStore(index);
    for (const p of ['Sources/Crash.swift', 'include/logger.h'])
      assert.equal((await migrated.getFile(p))?.hash, '', p);
    assert.notEqual((await migrated.getFile('src/a.py'))?.hash, '');
    await migrated.close();
    const report = await indexProjectAt(root);
    assert.equal(report.updated, 2, 'the Swift file and the header parsed again');
    assert.equal(report.added, 0);
    assert.equal(
      report.touched,
      1,
      'the Python file only gives its trigrams again (the trigram table was rebuilt)',
    );
    const after = openSqliteStore(index);
    const logger = (await after.findSymbols(['Logger'])).find((d) => d.kind === 'class');
    assert.equal(logger?.path, 'include/logger.h');
    assert.equal((await after.getFile('include/logger.h'))?.language, 'cpp');
    assert.match((await after.getChunks([logger!.chunkId!]))[0]?.text ?? '', /class Logger/);
    await after.close();
    const raw = new Database(index, { readonly: true });
    const plan = raw
      .prepare(`EXPLAIN QUERY PLAN SELECT c.id FROM chunks c WHERE c.file_id = 1 AND c.start_line <= 3
                ORDER BY c.start_line DESC, c.id LIMIT 1`)
      .all() as Array<{ detail: string }>;
    raw.close();
    assert.match(
      plan.map((r) => r.detail).join(' | '),
      /COVERING INDEX chunks_start/,
      'the index is back, and used',
    );
  });

  it('parses Lua files again after the upgrade that mends how they parse, and nothing else', async () => {
    const root = makeTree({
      'init.lua': '--[[ a note ]]\nfunction delay(t)\n  return t\nend\n',
      'scripts/Build.LUA': 'local x = "a"\n',
      'src/a.py': 'def hello():\n    return 1\n',
    });
    dirs.push(root);
    await indexLexically(root);
    const index = join(root, '.quarry', 'index.db');
    const db = new Database(index);
    schemaAt(db, 14); // before the Lua migration
    db.close();
    const migrated = openSqliteStore(index);
    for (const p of ['init.lua', 'scripts/Build.LUA']) assert.equal((await migrated.getFile(p))?.hash, '', p);
    assert.notEqual((await migrated.getFile('src/a.py'))?.hash, '');
    await migrated.close();
    const report = await indexProjectAt(root);
    assert.equal(report.updated, 2, 'the Lua files parsed again');
    assert.equal(report.touched + report.added, 0, 'the Python file as it was');
  });

  it('answers dense queries the same on the reader worker as in this thread', async () => {
    const path = freshPath();
    const s = openSqliteStore(path);
    const texts = Array.from({ length: 30 }, (_, i) => `chunk ${i}`);
    await s.replaceFiles([lineFile('a.ts', texts, 'a ts')]);
    await s.vectors!.useEmbedder('e', 8);
    const chunks = (await s.getFilesChunks(['a.ts'])).get('a.ts')!;
    const vec = (i: number) => {
      const v = Float32Array.from({ length: 8 }, (_, d) => Math.sin(i * 7 + d * 3));
      const n = Math.hypot(...v);
      return v.map((x) => x / n);
    };
    await s.vectors!.putChunkVectors([
      { path: 'a.ts', hash: 'h', vectors: chunks.map((c, i) => ({ chunkId: c.chunkId, vector: vec(i) })) },
    ]);
    const inThread = await s.vectors!.searchChunks(vec(3), 5);
    await s.close();
    const viaReader = openSqliteStore(path, { parallelScanMin: 0 });
    const parallel = await viaReader.vectors!.searchChunks(vec(3), 5);
    await viaReader.close();
    assert.deepEqual(parallel, inThread);
    assert.equal(parallel[0]?.startLine, 4);
  });

  it('past codesMin, dense search scans sign codes: the exact scan’s hits, new vectors at once, deleted ones gone, and an older index gets its codes', async () => {
    const path = freshPath();
    const dim = 48;
    // seeded vectors: mulberry32, so that the nearest neighbours are the same on every run
    let seed = 7;
    const rand = () => {
      seed = (seed + 0x6d2b79f5) >>> 0;
      let t = seed;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
    };
    const unit = (v: Float32Array) => {
      const n = Math.hypot(...v);
      return v.map((x) => x / n);
    };
    const vectors = new Map<string, Float32Array>();
    const file = (name: string, n: number) =>
      lineFile(
        name,
        Array.from({ length: n }, (_, i) => `${name} chunk ${i}`),
      );
    const embed = async (s: ReturnType<typeof openSqliteStore>, name: string) => {
      const chunks = (await s.getFilesChunks([name])).get(name)!;
      await s.vectors!.putFileVectors([
        { path: name, hash: 'h', vector: unit(Float32Array.from({ length: dim }, rand)) },
      ]);
      await s.vectors!.putChunkVectors([
        {
          path: name,
          hash: 'h',
          vectors: chunks.map((c) => {
            const v = unit(Float32Array.from({ length: dim }, rand));
            vectors.set(`${name}:${c.startLine}`, v);
            return { chunkId: c.chunkId, vector: v };
          }),
        },
      ]);
    };
    const near = (key: string) => unit(vectors.get(key)!.map((x) => x + 0.05 * rand()));
    const s = openSqliteStore(path);
    await s.replaceFiles([file('a.ts', 60), file('b.ts', 60), file('c.ts', 60)]);
    await s.vectors!.useEmbedder('e', dim);
    for (const name of ['a.ts', 'b.ts', 'c.ts']) await embed(s, name);
    await s.close();
    const keys = ['a.ts:3', 'b.ts:17', 'c.ts:60', 'a.ts:41'];
    const queries = keys.map(near);
    const top = (hits: Array<{ path: string; startLine: number; score: number }>) =>
      hits.map((h) => `${h.path}:${h.startLine}`);

    const exact = openSqliteStore(path, { codesMin: 1e9 });
    const want = await Promise.all(queries.map((q) => exact.vectors!.searchChunks(q, 5)));
    const onlyC = { pathPrefixes: ['c.ts'] };
    const wantC = await exact.vectors!.searchChunks(queries[0]!, 5, onlyC);
    await exact.close();
    const coded = openSqliteStore(path, { codesMin: 0 });
    // the first search starts reading the codes and is answered by the exact scan; then the codes answer, their
    // scores those of the int8 copies (close to the exact ones, not equal)
    assert.deepEqual(await coded.vectors!.searchChunks(queries[0]!, 5), want[0]);
    const viaCodes = async () =>
      (await coded.vectors!.searchChunks(queries[0]!, 5))[0]!.score !== want[0]![0]!.score;
    for (let i = 0; i < 100 && !(await viaCodes()); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(await viaCodes(), 'the codes answer once read');
    for (const [i, q] of queries.entries()) {
      const got = await coded.vectors!.searchChunks(q, 5);
      assert.equal(top(got)[0], keys[i]);
      assert.deepEqual(top(got), top(want[i]!));
      for (const [j, h] of got.entries())
        assert.ok(Math.abs(h.score - want[i]![j]!.score) < 0.02, 'int8 scores');
    }
    // filtered: the filter applies to the candidates, and fills `limit` from them
    const gotC = await coded.vectors!.searchChunks(queries[0]!, 5, onlyC);
    assert.equal(gotC.length, 5);
    assert.deepEqual(top(gotC), top(wantC));
    // a file embedded while the reader holds the codes: found by the next search
    await coded.replaceFiles([file('d.ts', 10)]);
    await embed(coded, 'd.ts');
    assert.equal(top(await coded.vectors!.searchChunks(near('d.ts:5'), 3))[0], 'd.ts:5');
    // a deleted file: gone at once
    await coded.deleteFiles(['b.ts']);
    assert.ok(!top(await coded.vectors!.searchChunks(near('b.ts:17'), 10)).some((k) => k.startsWith('b.ts')));
    assert.deepEqual(await coded.check(), []);
    await coded.close();

    // an index from before the codes: the migration fills them from the vectors
    const db = new Database(path);
    sqliteVec.load(db);
    // (and its trigram table as it was then, which a later migration replaced)
    db.exec(`DROP TABLE chunk_codes; DROP TABLE trigram_fts;
             CREATE VIRTUAL TABLE text_fts USING fts5 (text, content = '', contentless_delete = 1, tokenize = 'trigram');`);
    // the codes came with migration 8 (then the trigram table's rebuild, the skipped files' index, the Swift and
    // header files parsed again, the chunk index for symbols, the headers' language, the trigram words, and the Lua
    // files parsed again)
    schemaAt(db, 7);
    db.close();
    const migrated = openSqliteStore(path, { codesMin: 0 });
    assert.deepEqual(await migrated.check(), []);
    assert.equal(top(await migrated.vectors!.searchChunks(queries[2]!, 5))[0], 'c.ts:60');
    await migrated.close();
  });

  it('refuses an index from a newer quarry with a clear message', async () => {
    const path = freshPath();
    await openSqliteStore(path).close();
    const db = new Database(path);
    db.prepare(`UPDATE meta SET value = '999' WHERE key = 'schema_version'`).run();
    db.close();
    assert.throws(
      () => openSqliteStore(path),
      /newer quarry \(schema 999\): upgrade quarry or delete \.quarry\//,
    );
  });
});

describe('a lexical search within named files', () => {
  it('finds the same chunks with the same scores, asked file by file or for many files in one pass', async () => {
    const root = copyPolyglot(dirs);
    await indexLexically(root);
    const store = openSqliteStore(join(root, '.quarry', 'index.db'));
    try {
      const paths = (await store.listFiles()).map((f) => f.path);
      assert.ok(paths.length > 8, 'more files than are asked one by one');
      const query = {
        terms: ['return', 'self', 'public', 'const', 'func', 'def', 'string'],
        limit: 500,
        weights: { path: 1, symbol: 2, body: 1 },
      };
      const many = await store.lexical!.searchChunks({ ...query, filter: { paths } });
      const one: Array<{ chunkId: number; score: number }> = [];
      for (const p of paths)
        one.push(...(await store.lexical!.searchChunks({ ...query, filter: { paths: [p] } })));
      one.sort((a, b) => b.score - a.score || a.chunkId - b.chunkId);
      assert.ok(many.length > 5);
      assert.deepEqual(
        many.map((h) => [h.chunkId, h.score]),
        one.map((h) => [h.chunkId, h.score]),
      );
    } finally {
      store.close();
    }
  });
});

describe('the pruned chunk search (exact MaxScore)', () => {
  it('returns exactly the plain query’s list, order and scores, and prunes most queries', async () => {
    const corpus = prunedCorpus(7);
    const path = freshPath();
    const writer = openSqliteStore(path);
    await writer.replaceFiles(corpus.files);
    await writer.close();
    // no budget: every query the bounds allow is pruned (correctness, not cost, is tested here)
    const pruned = openSqliteStore(path, { pruneShare: 1, pruneMin: 0 });
    const plain = openSqliteStore(path, { pruneShare: 0 });
    const reader = openSqliteStore(path, { pruneShare: 1, pruneMin: 0, parallelLexicalMin: 0 });
    // the same without quarry_bm25(): FTS5's bm25() scores each expression's rows (two statements, or row ids)
    const bm25Only = openSqliteStore(path, { pruneShare: 1, pruneMin: 0, nativeRank: false });
    // within named files: each chunk looked up, whatever the query's postings
    const lookup = openSqliteStore(path, { lookupPostings: 0 });
    assert.ok(
      pruned.nativeRank,
      'quarry_bm25 is not built here: npm run build (scripts/native.mjs) builds it',
    );
    assert.ok(!bm25Only.nativeRank);
    const tryPruned = (
      pruned as unknown as { searchLexicalPruned: (...a: unknown[]) => unknown[] | undefined }
    ).searchLexicalPruned;
    let took = 0;
    const queries = 300;
    try {
      for (let i = 0; i < queries; i++) {
        const drawn = corpus.draw();
        // as a search asks: without the terms in more than half the chunks (search/gather.ts informativeTerms)
        const stats = await plain.lexical.termStats(drawn, 'chunks');
        const terms = drawn.filter((t) => (stats.df.get(t) ?? 0) <= stats.total / 2);
        if (!terms.length) continue;
        const { limit, fileLimit, weights } = corpus.shape(i);
        const query = { terms, limit, weights };
        const a = await pruned.lexical.searchChunks(query);
        const b = await plain.lexical.searchChunks(query);
        // quarry_bm25() gives bm25()'s scores to the last bit; a difference of two bm25() sums, to 9 decimals
        const exact = (hits: typeof a) => hits.map((h) => `${h.chunkId} ${h.path} ${h.score}`);
        const shape = (hits: typeof a) => hits.map((h) => `${h.chunkId} ${h.path} ${h.score.toFixed(9)}`);
        assert.deepEqual(exact(a), exact(b), `${terms.join(' ')} (limit ${query.limit})`);
        const c = await bm25Only.lexical.searchChunks(query);
        assert.deepEqual(shape(c), shape(b), `bm25(): ${terms.join(' ')} (limit ${query.limit})`);
        // within named files (a search's hinted files), ranked by quarry_bm25() and by bm25() alike
        if (i % 4 === 0 && b.length) {
          const within = { ...query, filter: { paths: [...new Set(b.slice(0, 30).map((h) => h.path))] } };
          const [x, y, z] = [
            await pruned.lexical.searchChunks(within),
            await bm25Only.lexical.searchChunks(within),
            await lookup.lexical.searchChunks(within),
          ];
          assert.ok(x.length > 0);
          assert.deepEqual(exact(x), exact(y), `within files: ${terms.join(' ')}`);
          assert.deepEqual(exact(z), exact(y), `within files, chunk by chunk: ${terms.join(' ')}`);
        }
        // whole files, over files_fts, with its own counts
        const fileStats = await plain.lexical.termStats(drawn, 'files');
        const fileTerms = drawn.filter((t) => (fileStats.df.get(t) ?? 0) <= fileStats.total / 2);
        if (fileTerms.length) {
          const fileQuery = { ...query, terms: fileTerms, limit: fileLimit };
          const fa = await pruned.lexical.searchFiles(fileQuery);
          const fb = await plain.lexical.searchFiles(fileQuery);
          const fshape = (hits: typeof fa) => hits.map((h) => `${h.path} ${h.score.toFixed(9)}`);
          assert.deepEqual(
            fa.map((h) => `${h.path} ${h.score}`),
            fb.map((h) => `${h.path} ${h.score}`),
            `files: ${fileTerms.join(' ')} (limit ${fileQuery.limit})`,
          );
          const fd = await bm25Only.lexical.searchFiles(fileQuery);
          assert.deepEqual(fshape(fd), fshape(fb), `bm25() files: ${fileTerms.join(' ')}`);
          // the same list from the reader worker, which prunes (or not) with its own connection's counts
          if (i % 5 === 0) {
            const fc = await reader.lexical.searchFiles(fileQuery);
            assert.deepEqual(
              fshape(fc),
              fshape(fb),
              `reader: ${fileTerms.join(' ')} (limit ${fileQuery.limit})`,
            );
          }
        }
        const w = query.weights;
        const rank = `bm25(${w.path}, ${w.symbol}, ${w.body})`;
        if (tryPruned.call(pruned, terms, rank, query.limit)) took++;
      }
    } finally {
      await pruned.close();
      await plain.close();
      await reader.close();
      await bm25Only.close();
      await lookup.close();
    }
    // both ways of proving the cut were taken (each query asked twice of the pruned store)
    assert.ok(took > queries / 10, `pruned ${took} of ${queries}`);
    for (const store of [pruned, bm25Only])
      assert.ok(
        store.pruneCounts.rare >= 20 && store.pruneCounts.sets >= 20,
        JSON.stringify(store.pruneCounts),
      );
    assert.ok(
      pruned.pruneCounts.files >= 10 && reader.pruneCounts.files >= 3,
      `whole-file searches pruned: ${JSON.stringify(pruned.pruneCounts)}`,
    );
  });

  it('counts documents again once the index changed, through this connection or another', async () => {
    const path = freshPath();
    const a = openSqliteStore(path);
    await a.replaceFiles([lineFile('a.ts', ['alpha beta', 'alpha'])]);
    assert.equal((await a.lexical.termStats(['alpha', 'gamma'], 'chunks')).df.get('alpha'), 2);
    await a.replaceFiles([lineFile('b.ts', ['alpha gamma'])]);
    let stats = await a.lexical.termStats(['alpha', 'gamma'], 'chunks');
    assert.deepEqual([stats.df.get('alpha'), stats.df.get('gamma')], [3, 1]);
    const b = openSqliteStore(path);
    await b.deleteFiles(['a.ts']);
    await b.close();
    stats = await a.lexical.termStats(['alpha', 'gamma'], 'chunks');
    assert.deepEqual([stats.df.get('alpha'), stats.df.get('gamma')], [1, 1]);
    await a.close();
  });
});
