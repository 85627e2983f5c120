// The learned file ranker: the shipped trees evaluated in TypeScript exactly as LightGBM scores them, refused when
// they are not what was shipped or speak other features, and used by search when search.ranker = "learned"
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { indexProject, type LocalProject, openProject, searchProject } from '../src/project/local/index.ts';
import { FEATURE_NAMES } from '../src/search/features.ts';
import {
  loadRanker,
  rankerDir,
  SHIPPED_RANKER,
  SHIPPED_RANKER_SHA256,
  scoreRanker,
  shippedRanker,
} from '../src/search/ranker.ts';
import { copyPolyglot, makeTree, removeTree } from './helpers.ts';

const CHECK = JSON.parse(
  readFileSync(join(import.meta.dirname, 'fixtures', 'ranker-check.json'), 'utf8'),
) as {
  vectors: number[][];
  scores: number[];
};

describe('learned ranker', () => {
  it('scores feature vectors exactly as LightGBM did when it exported the model (train/train_ranker.py --check)', () => {
    const model = shippedRanker();
    assert.equal(model.features.join(','), FEATURE_NAMES.join(','));
    assert.ok(model.trees.length > 50);
    // the model's own vectors are in its training order, which FEATURE_NAMES begins with
    assert.equal(CHECK.vectors.length, CHECK.scores.length);
    for (const [i, x] of CHECK.vectors.entries())
      assert.ok(Math.abs(scoreRanker(model, x) - CHECK.scores[i]!) < 1e-9, `vector ${i}`);
  });

  it('refuses a model file that is not the shipped one, or that was trained on other features', () => {
    const dir = makeTree({});
    try {
      const shipped = join(rankerDir(), SHIPPED_RANKER);
      const copy = join(dir, 'model.json');
      copyFileSync(shipped, copy);
      assert.ok(loadRanker(copy, SHIPPED_RANKER_SHA256));
      writeFileSync(copy, `${readFileSync(shipped, 'utf8')} `);
      assert.throws(() => loadRanker(copy, SHIPPED_RANKER_SHA256), /not the one quarry shipped: reinstall/);
      // a model reads its features by name: one trained on a name quarry does not compute is refused
      const other = JSON.parse(readFileSync(shipped, 'utf8'));
      other.features = [...other.features.slice(0, -1), 'no_such_feature'];
      writeFileSync(copy, JSON.stringify(other));
      assert.throws(() => loadRanker(copy), /trained on other features/);
      // … and one whose names come in another order scores as the shipped one does
      const permuted = JSON.parse(readFileSync(shipped, 'utf8'));
      const order = permuted.features.map((_: string, i: number) => i).reverse();
      permuted.features = order.map((i: number) => permuted.features[i]);
      for (const t of permuted.trees) t.feature = t.feature.map((f: number) => order.indexOf(f));
      writeFileSync(copy, JSON.stringify(permuted));
      const reread = loadRanker(copy);
      for (const [i, x] of CHECK.vectors.entries())
        assert.ok(Math.abs(scoreRanker(reread, x) - CHECK.scores[i]!) < 1e-9, `permuted, vector ${i}`);
      assert.throws(() => loadRanker(join(dir, 'none.json')), /no ranker model/);
    } finally {
      removeTree(dir);
    }
  });

  describe('in search', () => {
    let root: string;
    let project: LocalProject;
    before(async () => {
      root = copyPolyglot([]);
      project = await openProject({
        root,
        create: true,
        userConfig: false,
        overrides: { embed: { provider: 'none' }, search: { ranker: 'learned' } },
      });
      await indexProject(project);
    });
    after(async () => {
      await project.close();
      removeTree(root);
    });

    it('orders the files by the model over their features', async () => {
      const model = shippedRanker();
      for (const query of ['http server routes and handlers', 'queue push pop']) {
        let features = new Map<string, number[]>();
        const res = await searchProject(project, query, {
          mode: 'lexical',
          topFiles: 20,
          onFeatures: (f) => {
            features = f;
          },
        });
        assert.ok(res.files.length > 1, query);
        const scores = res.files.map((f) => scoreRanker(model, features.get(f.path)!));
        for (let i = 1; i < scores.length; i++)
          assert.ok(
            scores[i - 1]! >= scores[i]!,
            `${query}: ${res.files[i - 1]!.path} before ${res.files[i]!.path}`,
          );
        assert.ok(res.files.every((f) => f.score > 0 && f.score < 1));
      }
    });
  });
});
