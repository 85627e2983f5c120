import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import * as sqliteVec from 'sqlite-vec';
import { createLocalEmbedder } from '../src/embed/local.ts';
import { findWeights } from '../src/embed/models.ts';
import { openEmbedder } from '../src/embed/open.ts';
import { embedPending } from '../src/indexing/embedding.ts';
import { indexRepository } from '../src/indexing/indexer.ts';
import { indexProject, openProject, projectStatus, searchProject } from '../src/project/local/index.ts';
import { openSqliteStore } from '../src/store/sqlite/index.ts';
import { DATA_CHUNK_VECTORS } from '../src/workspace/roles.ts';
import { indexPaths } from '../src/workspace/root.ts';
import { copyPolyglot, removeTree, testConfig } from './helpers.ts';

const weights = findWeights();
if (!weights) throw new Error('no embedding weights: run ./scripts/fetch-test-weights.sh first');

const trees: string[] = [];
after(() => trees.forEach(removeTree));

/** Every stored vector by (path, ordinal) or path, rounded so that the comparison is about content. */
function dumpVectors(db: string) {
  const d = new Database(db, { readonly: true });
  sqliteVec.load(d);
  try {
    const round = (b: Buffer) =>
      Array.from(new Float32Array(new Uint8Array(b).buffer), (x) => Math.round(x * 1e5));
    const chunks = (
      d
        .prepare(
          `SELECT f.path, c.ordinal, v.embedding FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id
           JOIN files f ON f.id = c.file_id ORDER BY f.path, c.ordinal`,
        )
        .all() as Array<{ path: string; ordinal: number; embedding: Buffer }>
    ).map((r) => [r.path, r.ordinal, round(r.embedding)]);
    const files = (
      d
        .prepare(
          `SELECT f.path, v.embedding FROM file_vectors v JOIN files f ON f.id = v.file_id ORDER BY f.path`,
        )
        .all() as Array<{ path: string; embedding: Buffer }>
    ).map((r) => [r.path, round(r.embedding)]);
    return { chunks, files };
  } finally {
    d.close();
  }
}

describe('embedding phases and hybrid search (real all-MiniLM-L6-v2)', () => {
  it('embeds coarse file vectors, then chunks, on background workers; search becomes hybrid', async () => {
    const root = copyPolyglot(trees);
    const project = await openProject({ root, create: true, userConfig: false });
    const phases = new Set<string>();
    const report = await indexProject(project, { onProgress: (p) => phases.add(p.phase) });
    assert.ok(phases.has('coarse') && phases.has('refine'));
    assert.equal(report.embedding?.coarseFiles, 17);
    assert.equal(report.embedding?.refinedFiles, 17);
    const status = await projectStatus(project);
    assert.equal(status.embedding.refined, status.embedding.files);
    assert.match(status.embedding.embedder?.id ?? '', /^local:all-MiniLM-L6-v2\/int8@/);

    // no word of this question appears in the config loader: only meaning finds it
    const dense = await searchProject(project, 'load the application settings from disk', { mode: 'dense' });
    assert.equal(dense.files[0]?.path, 'config_loader.py');
    const hybrid = await searchProject(project, 'load the application settings from disk');
    assert.equal(hybrid.mode, 'hybrid');
    assert.ok(hybrid.files.slice(0, 3).some((f) => f.path === 'config_loader.py'));
    assert.ok(hybrid.results.some((r) => r.signals.dense > 0));

    // a file the question names outright leads the hybrid file ranking, whatever the model made of the words
    const named = await searchProject(project, 'load the application settings from disk, see util.js');
    assert.equal(named.files[0]?.path, 'util.js');
    const unnamed = await searchProject(project, 'load the application settings from disk, see util');
    assert.notEqual(unnamed.files[0]?.path, 'util.js', 'a bare word is not a file name');
    await project.close();
  });

  it('embeds a data file’s head only, while its every row stays found by words', async () => {
    const root = copyPolyglot(trees);
    const rows = Array.from({ length: 3000 }, (_, i) => `${i},station_${i},${(i * 0.37).toFixed(2)},ok`);
    writeFileSync(join(root, 'readings.csv'), `id,station,irradiance,status\n${rows.join('\n')}\n`);
    const project = await openProject({ root, create: true, userConfig: false });
    await indexProject(project);
    const csv = (await project.store.getFilesChunks(['readings.csv'])).get('readings.csv')!;
    assert.ok(csv.length > DATA_CHUNK_VECTORS, `${csv.length} chunks`);
    const vectors = dumpVectors(indexPaths(root).db).chunks.filter(([path]) => path === 'readings.csv');
    assert.deepEqual(
      vectors.map(([, ordinal]) => ordinal),
      Array.from({ length: DATA_CHUNK_VECTORS }, (_, i) => i),
    );
    const status = await projectStatus(project);
    assert.equal(status.embedding.refined, status.embedding.files, 'the file counts as embedded');
    assert.deepEqual(await project.store.check(), []);
    const tail = await searchProject(project, 'station_2999');
    assert.equal(tail.files[0]?.path, 'readings.csv');
    await project.close();
  });

  it('resumes an interrupted embedding run and ends identical to an uninterrupted one', async () => {
    const embedder = await createLocalEmbedder({ weights, threads: 1 });
    const build = async (interrupt: boolean) => {
      const root = copyPolyglot(trees);
      const store = openSqliteStore(indexPaths(root).db);
      await indexRepository({ root, config: testConfig(), store });
      if (interrupt) {
        const stop = new AbortController();
        const first = await embedPending(store, embedder, {
          signal: stop.signal,
          batchFiles: 4,
          onProgress: (p) => {
            if (p.phase === 2 && p.done >= 4) stop.abort();
          },
        });
        assert.ok(first.interrupted);
        const mid = await store.vectors!.status();
        assert.ok(mid.refined > 0 && mid.refined < mid.files, `refined ${mid.refined}/${mid.files}`);
      }
      const rest = await embedPending(store, embedder, { batchFiles: 4 });
      assert.ok(!rest.interrupted);
      await store.close();
      return dumpVectors(indexPaths(root).db);
    };
    const resumed = await build(true);
    const straight = await build(false);
    assert.equal(resumed.chunks.length, 17);
    assert.deepEqual(resumed, straight);
    await embedder.close();
  });

  it('re-embeds nothing for a renamed file, and drops another model’s vectors instead of mixing them', async () => {
    const root = copyPolyglot(trees);
    const store = openSqliteStore(indexPaths(root).db);
    const embedder = await createLocalEmbedder({ weights, threads: 1 });
    const config = testConfig();
    await indexRepository({ root, config, store, embedder });
    renameSync(join(root, 'server.go'), join(root, 'api_server.go'));
    const r = await indexRepository({ root, config, store, embedder });
    assert.equal(r.embedding?.embedded, 0);
    assert.equal(r.embedding?.fromCache, 2, 'its coarse text and its one chunk');

    const other = { ...embedder, id: 'another-model', embed: embedder.embed, close: async () => {} };
    const swapped = await indexRepository({ root, config, store, embedder: other });
    assert.equal(swapped.embedding?.reset, true);
    assert.equal((await store.vectors!.status()).embedder?.id, 'another-model');
    await store.close();
    await embedder.close();
  });

  it('works lexically, and says once how to add weights, when none are installed', async () => {
    const notices: string[] = [];
    const empty = mkdtempSync(join(tmpdir(), 'quarry-nocache-'));
    trees.push(empty);
    const config = testConfig({ embed: { provider: 'local', download: false, workers: 0, threads: 0 } });
    const e = await openEmbedder(config, {
      env: { XDG_CACHE_HOME: empty },
      onNotice: (m) => notices.push(m),
    });
    assert.equal(e, undefined);
    assert.equal(notices.length, 1);
    assert.match(notices[0]!, /semantic search is off: .*quarry model install/);
  });
});
