// The index's content decides its ranking, not the way it got there (regression: after an incremental update,
// lexical scores differed from a clean build of byte-identical content, enough to swap ranks).
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import Database from 'better-sqlite3';
import { indexProject, openProject } from '../src/project/local/index.ts';
import { analyzeQuery } from '../src/search/query.ts';
import { gather } from '../src/search/search.ts';
import { makeTree, openLexical, removeTree } from './helpers.ts';

const trees: string[] = [];
after(() => {
  for (const t of trees) removeTree(t);
});

/** A small code base whose words overlap, so that document frequencies and lengths decide the order. */
function source(i: number, variant = 0): string {
  const words = ['cache', 'retry', 'token', 'parser', 'socket', 'buffer', 'stream', 'config'];
  const pick = (k: number) => words[(i * 3 + k + variant) % words.length]!;
  return `export function ${pick(0)}${pick(1)}Handler${i}(input: string): string {\n  // ${pick(2)} ${pick(3)} ${pick(0)}\n  const ${pick(4)} = input.split('${pick(5)}');\n  return ${pick(4)}.join('${pick(6)}') + '${'x'.repeat(i % 7)}';\n}\n`;
}

const QUERIES = [
  'cache retry handler',
  'token parser',
  'socket buffer stream',
  'config split join',
  'retry token',
];

async function rankings(root: string) {
  const project = await openLexical(root);
  try {
    const out: Array<Array<[string, number]>> = [];
    for (const q of QUERIES) {
      const r = await project.search(q, { topK: 20, mode: 'lexical' });
      out.push(r.results.map((x) => [`${x.path}:${x.startLine}`, x.score] as [string, number]));
    }
    return out;
  } finally {
    await project.close();
  }
}

test('after adding, changing and deleting files, search ranks and scores as a clean build of the same files', async () => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 120; i++) files[`src/m${i % 6}/f${i}.ts`] = source(i);
  const root = makeTree(files);
  trees.push(root);
  const project = await openLexical(root);
  await indexProject(project);
  // 30 changed, 8 deleted, 8 added: the incremental run
  for (let i = 0; i < 30; i++) writeFileSync(join(root, `src/m${i % 6}/f${i}.ts`), source(i, 1));
  for (let i = 30; i < 38; i++) unlinkSync(join(root, `src/m${i % 6}/f${i}.ts`));
  mkdirSync(join(root, 'src/new'));
  for (let i = 200; i < 208; i++) writeFileSync(join(root, `src/new/f${i}.ts`), source(i, 2));
  await indexProject(project);
  await project.close();

  // a clean build of byte-identical content
  const clean = makeTree({});
  trees.push(clean);
  cpSync(root, clean, { recursive: true, filter: (p) => !p.includes('.quarry') });
  rmSync(join(clean, '.quarry'), { recursive: true, force: true });
  const cleanProject = await openLexical(clean);
  await indexProject(cleanProject);
  await cleanProject.close();

  // FTS5's own consistency check accepts the corrected statistics
  const db = new Database(join(root, '.quarry', 'index.db'));
  for (const t of ['chunks_fts', 'files_fts', 'refs_fts'])
    db.prepare(`INSERT INTO ${t}(${t}, rank) VALUES('integrity-check', 1)`).run();
  db.close();

  const a = await rankings(root);
  const b = await rankings(clean);
  for (const [i, q] of QUERIES.entries()) {
    assert.deepEqual(
      a[i]!.map(([k]) => k),
      b[i]!.map(([k]) => k),
      `"${q}": the incremental index ranks differently from a clean build`,
    );
    for (const [j, [k, s]] of a[i]!.entries())
      assert.ok(
        Math.abs(s - b[i]![j]![1]) < 1e-9,
        `"${q}" ${k}: score ${s} after the update, ${b[i]![j]![1]} clean`,
      );
  }
});

test('a run that ended after its updates but before the recount (a kill) leaves the recount to the next run', async () => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 60; i++) files[`src/f${i}.ts`] = source(i);
  const root = makeTree(files);
  trees.push(root);
  let project = await openLexical(root);
  await indexProject(project);
  for (let i = 0; i < 20; i++) writeFileSync(join(root, `src/f${i}.ts`), source(i, 1));
  for (let i = 20; i < 26; i++) unlinkSync(join(root, `src/f${i}.ts`));
  // the process dies between the last write and the recount: the recount never runs
  const store = project.store as { settle?: () => Promise<void> };
  store.settle = async () => {};
  await indexProject(project);
  await project.close();
  // the next run finds every file up to date, and still recounts
  project = await openLexical(root);
  const report = await indexProject(project);
  assert.equal(report.updated + report.added + report.deleted, 0);
  assert.deepEqual(await project.store.check(), []);
  await project.close();

  const clean = makeTree({});
  trees.push(clean);
  cpSync(root, clean, { recursive: true, filter: (p) => !p.includes('.quarry') });
  const cleanProject = await openLexical(clean);
  await indexProject(cleanProject);
  await cleanProject.close();
  const [a, b] = [await rankings(root), await rankings(clean)];
  for (const [i, q] of QUERIES.entries())
    for (const [j, [k, s]] of a[i]!.entries())
      assert.ok(
        Math.abs(s - b[i]![j]![1]) < 1e-9,
        `"${q}" ${k}: score ${s} after the resume, ${b[i]![j]![1]} clean`,
      );
});

test("chunks and files tied at a list's cut are taken by place, not by the order their files were written in", async () => {
  // 260 files of one body: every chunk and file scores the same, lexically and by vector, and a search gathers 200
  // chunks and 100 files by their words, 100 chunks and 50 files by their vectors
  const body = "export function probe(): string {\n  return 'needle in a haystack';\n}\n";
  const files: Record<string, string> = {};
  for (let i = 0; i < 260; i++) files[`src/f${String(i).padStart(3, '0')}.ts`] = body;
  const paths = Object.keys(files);
  const root = makeTree(files);
  const clean = makeTree(files);
  trees.push(root, clean);
  const open = (at: string) =>
    openProject({
      root: at,
      create: true,
      userConfig: false,
      overrides: { embed: { provider: 'static', staticTable: 'code-v1' } },
    });
  // one index rewrites its first 130 files (changed, then changed back): their rows now come after the others'
  const project = await open(root);
  await indexProject(project);
  for (const edit of [`${body}// changed\n`, body]) {
    for (let i = 0; i < 130; i++) writeFileSync(join(root, paths[i]!), edit);
    const r = await indexProject(project);
    assert.equal(r.updated, 130);
  }
  await project.close();
  const cleanProject = await open(clean);
  await indexProject(cleanProject);
  await cleanProject.close();

  const lists = async (at: string) => {
    const p = await open(at);
    try {
      const query = 'needle haystack';
      const [vector] = await (await p.queryEmbedder())!.embed([query], 'query');
      const g = await gather(p.store, p.config, analyzeQuery(query), {
        topK: 10,
        topFiles: 10,
        vector: vector!,
      });
      const where = (hs: Array<{ path: string }>) => hs.map((h) => h.path);
      return {
        chunks: where(g.lexical),
        files: where(g.fileLexical),
        denseChunks: where(g.denseChunks),
        denseFiles: where(g.denseFiles),
      };
    } finally {
      await p.close();
    }
  };
  const [a, b] = [await lists(root), await lists(clean)];
  assert.deepEqual(
    a,
    b,
    'the rewritten index gathers other chunks or files than a clean build of the same files',
  );
  // each list the first files by path
  assert.deepEqual(a.chunks, paths.slice(0, 200));
  assert.deepEqual(a.files, paths.slice(0, 100));
  assert.deepEqual(a.denseChunks, paths.slice(0, 100));
  assert.deepEqual(a.denseFiles, paths.slice(0, 50));
});
