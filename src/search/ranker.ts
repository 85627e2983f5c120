import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { QuarryError } from '../errors.ts';
import { FEATURE_NAMES } from './features.ts';

/**
 * The learned file ranker: gradient-boosted trees (LightGBM's LambdaRank, trained by train/train_ranker.py on
 * (change description → changed files) pairs mined from public histories) over the features of features.ts. Each
 * tree is stored flat: node i splits on `feature[i]` at `threshold[i]` (≤ goes left); a child below 0 is leaf ~child.
 * Evaluating 200 trees over 100 files costs well under a millisecond.
 */
interface Tree {
  feature: number[];
  threshold: number[];
  left: number[];
  right: number[];
  leaf: number[];
}

export interface RankerModel {
  name: string;
  features: string[];
  trees: Tree[];
}

/** The shipped model, and its sha256 (a different file is refused: the figures in docs/retrieval.md are for this one). */
export const SHIPPED_RANKER = 'ranker-v3.json';
export const SHIPPED_RANKER_SHA256 = 'fb3f51baf121f9d109f8bcf1c934014e48e8b61e485a112f097e5a4a2cc81bac';

function treeScore(t: Tree, x: number[]): number {
  if (!t.feature.length) return t.leaf[0] ?? 0;
  let node = 0;
  for (;;) {
    const next = (x[t.feature[node]!] ?? 0) <= t.threshold[node]! ? t.left[node]! : t.right[node]!;
    if (next < 0) return t.leaf[~next]!;
    node = next;
  }
}

export function scoreRanker(model: RankerModel, x: number[]): number {
  let s = 0;
  for (const t of model.trees) s += treeScore(t, x);
  return s;
}

export function rankerDir(): string {
  return join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'models', 'ranker');
}

/** Reads a model and checks that it speaks today's features (and, for the shipped one, that it is the pinned file). */
export function loadRanker(path: string, sha256?: string): RankerModel {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch {
    throw new QuarryError(
      'BAD_CONFIG',
      `no ranker model at ${path}: reinstall quarry, or set search.ranker = "rrf"`,
    );
  }
  if (sha256 && createHash('sha256').update(bytes).digest('hex') !== sha256)
    throw new QuarryError(
      'BAD_CONFIG',
      `the ranker model ${path} is not the one quarry shipped: reinstall quarry`,
    );
  const model = JSON.parse(bytes.toString('utf8')) as RankerModel;
  // a model reads the features it was trained on, by name: features added since leave an older model's order as it was
  const at = model.features.map((name) => (FEATURE_NAMES as readonly string[]).indexOf(name));
  if (at.some((i) => i < 0))
    throw new QuarryError(
      'BAD_CONFIG',
      `the ranker model ${path} was trained on other features: retrain it (train/train_ranker.py) or set search.ranker = "rrf"`,
    );
  return {
    ...model,
    features: [...FEATURE_NAMES],
    trees: model.trees.map((t) => ({ ...t, feature: t.feature.map((f) => at[f]!) })),
  };
}

let shipped: RankerModel | undefined;
const ownModels = new Map<string, RankerModel>();

/** The shipped model, loaded once. */
export function shippedRanker(): RankerModel {
  shipped ??= loadRanker(join(rankerDir(), SHIPPED_RANKER), SHIPPED_RANKER_SHA256 || undefined);
  return shipped;
}

/** The model search orders files with: the user's own (`search.ranker_model`), or the shipped one; each loaded once. */
export function rankerFor(path: string | undefined): RankerModel {
  if (!path) return shippedRanker();
  let model = ownModels.get(path);
  if (!model) {
    model = loadRanker(path);
    ownModels.set(path, model);
  }
  return model;
}
