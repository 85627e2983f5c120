import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { openEmbedder } from '../src/embed/open.ts';
import { embedPending } from '../src/indexing/embedding.ts';
import { byPriority, centralityOf, embedPriority } from '../src/indexing/priority.ts';
import { indexProject, openProject } from '../src/project/local/index.ts';
import { denseShare } from '../src/search/search.ts';
import { git, makeTree, removeTree, testConfig } from './helpers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));

describe('vectors where they matter first: the embedding order', () => {
  it('ranks source before tests, prose and data; recent changes and central files up; a wanted file first', () => {
    const none = {};
    assert.ok(embedPriority('src/router.ts', none) > embedPriority('test/router.test.ts', none));
    assert.ok(embedPriority('src/router.ts', none) > embedPriority('docs/guide.md', none));
    assert.ok(embedPriority('docs/guide.md', none) > embedPriority('data/rows.csv', none));
    const centrality = new Map([['src/b.ts', 1]]);
    assert.ok(embedPriority('src/b.ts', { centrality }) > embedPriority('src/a.ts', { centrality }));
    const preferred = new Set(['data/rows.csv']);
    assert.equal(
      byPriority([{ path: 'src/a.ts' }, { path: 'data/rows.csv' }, { path: 'test/a.test.ts' }], { preferred })
        .map((f) => f.path)
        .join(' '),
      'data/rows.csv src/a.ts test/a.test.ts',
    );
    // equal priorities keep the walk's order
    assert.deepEqual(
      byPriority([{ path: 'src/z.ts' }, { path: 'src/a.ts' }], none).map((f) => f.path),
      ['src/z.ts', 'src/a.ts'],
    );
  });

  it('weighs a dense list by the square of the share of the index its vectors cover', () => {
    assert.equal(denseShare({ files: 100, coarse: 100, refined: 100 }), 1);
    assert.equal(denseShare({ files: 100, coarse: 100, refined: 0 }), 0.25);
    assert.ok(Math.abs(denseShare({ files: 100, coarse: 20, refined: 10 }) - 0.0225) < 1e-12);
    assert.equal(denseShare({ files: 0, coarse: 0, refined: 0 }), 1);
  });

  it('embeds in that order: an interrupted run has the likeliest files, and finishes the rest when resumed', async () => {
    const root = makeTree({
      'aaa/fixtures/sample.json': '{"name": "sample", "rows": [1, 2, 3]}\n',
      'aaa/guide.md': '# Guide\n\nHow the router matches paths.\n',
      'aaa/router.test.ts': "import { route } from '../src/router';\ntest('route', () => route('/a'));\n",
      'src/old.ts': 'export function oldHelper(x: number) {\n  return x + 1;\n}\n',
      'src/router.ts':
        "import { parsePath } from './path';\nexport function route(p: string) {\n  return parsePath(p);\n}\n",
      'src/path.ts': 'export function parsePath(p: string) {\n  return p.split("/");\n}\n',
      'src/uses.ts': "import { parsePath } from './path';\nexport const parts = parsePath('/x/y');\n",
    });
    trees.push(root);
    git(root, 'init', '-q');
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'one');
    // router.ts changed in the newest commit: recent
    execFileSync('sh', ['-c', `echo '// retries' >> ${root}/src/router.ts`]);
    git(root, 'commit', '-qam', 'two');
    const project = await openProject({
      root,
      create: true,
      userConfig: false,
      overrides: { embed: { provider: 'none' } },
    });
    await indexProject(project, { embed: false });
    const central = await centralityOf(project.store);
    assert.ok((central?.get('src/path.ts') ?? 0) > 0, 'path.ts: two files use parsePath');
    const embedder = (await openEmbedder(
      testConfig({ embed: { ...testConfig().embed, provider: 'static' } }),
    ))!;
    try {
      // stop after the first file of phase 1
      const stop = new AbortController();
      await embedPending(project.store, embedder, {
        batchFiles: 1,
        root,
        signal: stop.signal,
        onProgress: (p) => {
          if (p.phase === 1 && p.done >= 3) stop.abort();
        },
      });
      const missing = new Set((await project.store.vectors!.pendingFiles(1, 100)).map((p) => p.path));
      const done = ['src/router.ts', 'src/path.ts', 'src/old.ts', 'src/uses.ts'].filter(
        (p) => !missing.has(p),
      );
      // the three first: source, and among it the central file and the one changed last, before the others
      assert.equal(done.length, 3, `done: ${done.join(', ')}`);
      assert.ok(done.includes('src/path.ts') && done.includes('src/router.ts'), done.join(', '));
      for (const p of ['aaa/fixtures/sample.json', 'aaa/guide.md', 'aaa/router.test.ts'])
        assert.ok(missing.has(p), p);
      // walk order would have embedded aaa/… first; resumed, every file gets its vectors
      const rest = await embedPending(project.store, embedder, { root });
      assert.equal(rest.interrupted, false);
      assert.equal((await project.store.vectors!.pendingFiles(2, 100)).length, 0);
    } finally {
      await embedder.close();
      await project.close();
    }
  });
});
