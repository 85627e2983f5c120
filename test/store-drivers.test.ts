import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { resolveConfig } from '../src/config/config.ts';
import { openStore } from '../src/store/open.ts';
import { openPostgresStore } from '../src/store/postgres/index.ts';
import type { Store } from '../src/store/types.ts';
import { lineFile, makeTree, removeTree } from './helpers.ts';
import { prunedCorpus } from './pruned-corpus.ts';
import { storeContract } from './store-contract.ts';
import { storeGuarantees } from './store-guarantees.ts';
import { startServer, type TestServer } from './store-servers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));

let n = 0;
/** A fresh, empty store of this driver: a new project folder and a new repository key in the shared server. */
async function fresh(url: string | undefined): Promise<Store> {
  const root = makeTree({});
  trees.push(root);
  const config = resolveConfig({
    root,
    userConfig: false,
    env: {},
    overrides: { store: { ...(url ? { url } : {}), repo: `repo-${++n}` } },
  });
  return openStore(config, root, { create: true });
}

describe('SQLite (the default): the guarantees through the seam', () => {
  storeGuarantees({ name: 'sqlite', url: () => undefined }, trees);
});

for (const kind of ['postgres', 'chroma'] as const) {
  describe(`${kind === 'postgres' ? 'PostgreSQL + pgvector' : 'Chroma (vectors) + SQLite'}`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(kind);
    });
    after(async () => server?.dispose());
    describe('the store contract', () => storeContract(() => fresh(server.url)));
    describe('the guarantees through the seam', () =>
      storeGuarantees({ name: kind, url: () => server.url }, trees));
    if (kind === 'postgres')
      it('counts documents again once the repository changed, through this connection or another', async () => {
        const repo = `counts-${++n}`;
        const a = await openPostgresStore({ url: server.url, repo, create: true });
        const b = await openPostgresStore({ url: server.url, repo, create: false });
        try {
          await a.replaceFiles([lineFile('a.ts', ['alpha beta']), lineFile('b.ts', ['alpha'])]);
          const df = async (s: typeof a) => (await s.lexical.termStats(['alpha', 'gamma'], 'chunks')).df;
          assert.equal((await df(a)).get('alpha'), 2);
          await a.replaceFiles([lineFile('c.ts', ['alpha gamma'])]);
          assert.deepEqual(
            [...(await df(a))],
            [
              ['alpha', 3],
              ['gamma', 1],
            ],
          );
          // another connection's write, and a delete
          assert.equal((await df(b)).get('alpha'), 3);
          await b.deleteFiles(['a.ts', 'c.ts']);
          assert.deepEqual([...(await df(a))], [['alpha', 1]]);
          assert.equal((await a.lexical.termStats(['alpha'], 'chunks')).total, 1);
        } finally {
          await a.close();
          await b.close();
        }
      });
    if (kind === 'postgres')
      it('the pruned lexical search returns the plain query’s list, order and scores', async () => {
        const corpus = prunedCorpus(11);
        const repo = `pruned-${++n}`;
        const writer = await openPostgresStore({ url: server.url, repo, create: true });
        await writer.replaceFiles(corpus.files);
        await writer.close();
        // no budget: every query the bounds allow is pruned (correctness, not cost, is tested here)
        const pruned = await openPostgresStore({
          url: server.url,
          repo,
          create: false,
          pruneShare: 1,
          pruneMin: 0,
        });
        const plain = await openPostgresStore({ url: server.url, repo, create: false, pruneShare: 0 });
        try {
          for (let i = 0; i < 300; i++) {
            const drawn = corpus.draw();
            const { limit, fileLimit, weights } = corpus.shape(i);
            for (const scope of ['chunks', 'files'] as const) {
              // as a search asks: without the terms in more than half the documents (search/gather.ts)
              const stats = await plain.lexical.termStats(drawn, scope);
              const terms = drawn.filter((t) => (stats.df.get(t) ?? 0) <= stats.total / 2);
              if (!terms.length) continue;
              const query = { terms, limit: scope === 'chunks' ? limit : fileLimit, weights };
              const search = (s: typeof plain) =>
                scope === 'chunks'
                  ? s.lexical
                      .searchChunks(query)
                      .then((h) => h.map((x) => `${x.chunkId} ${x.score.toFixed(9)}`))
                  : s.lexical.searchFiles(query).then((h) => h.map((x) => `${x.path} ${x.score.toFixed(9)}`));
              assert.deepEqual(await search(pruned), await search(plain), `${scope}: ${terms.join(' ')}`);
              // within named files (a search's hinted files): that part of the whole ranking, scores and all
              if (scope === 'chunks' && i % 3 === 0) {
                const whole = await plain.lexical.searchChunks({ ...query, limit: 100_000 });
                const paths = [...new Set(whole.slice(0, 40).map((h) => h.path))].slice(0, 8);
                const within = await plain.lexical.searchChunks({ ...query, filter: { paths } });
                const shown = (hits: typeof whole) => hits.map((h) => `${h.chunkId} ${h.score}`);
                assert.deepEqual(
                  shown(within),
                  shown(whole.filter((h) => paths.includes(h.path)).slice(0, query.limit)),
                  `within files: ${terms.join(' ')}`,
                );
              }
            }
          }
        } finally {
          await pruned.close();
          await plain.close();
        }
        assert.ok(
          pruned.pruneCounts.rare >= 10 && pruned.pruneCounts.sets >= 10 && pruned.pruneCounts.files >= 10,
          JSON.stringify(pruned.pruneCounts),
        );
      });
  });
}
