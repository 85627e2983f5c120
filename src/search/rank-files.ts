import type { QuarryConfig } from '../config/config.ts';
import { ABOUT_TESTS, fileRole, testedBasename } from '../workspace/roles.ts';
import { type FileResult, round } from './candidates.ts';
import { type FileEvidence, fileFeatures, queryShape } from './features.ts';
import { type Fused, type FuseOptions, total } from './fusion.ts';
import type { Gathered } from './gather.ts';
import { type RankerModel, rankerFor, scoreRanker } from './ranker.ts';

// Ranking files, the stage after fusion: the evidence each candidate file brings, the learned ranker's order over
// the fused one, the tests → source lift; and, later in a search, the rule that a symbol query's definitions come
// first.

/**
 * Each file's score, from fusion's: ordered by the learned ranker (`search.ranker`), then with the tests → source
 * lift (`search.test_lift`).
 */
export function rankFiles(
  g: Gathered,
  fused: Fused,
  config: QuarryConfig,
  options: FuseOptions,
): Map<string, number> {
  const { mode } = options;
  let fileScores = fused.fileScores;
  // the learned ranker: one model over every list's evidence orders the fused list's first files
  if (options.analyzed && mode !== 'dense' && (options.onFeatures || config.search.ranker === 'learned')) {
    const evidence = fileEvidence(g, fused);
    const features = fileFeatures(
      evidence,
      options.analyzed,
      queryShape(options.analyzed, mode !== 'lexical'),
    );
    options.onFeatures?.(features);
    if (config.search.ranker === 'learned')
      fileScores = learnedFileScores(fileScores, features, rankerFor(config.search.rankerModel));
  }
  // tests → source: a strong hit on a test file lends most of its score to the file it tests (when that file is a
  // candidate too), unless the question is about tests: questions about behaviour name what tests exercise
  const lift = config.search.testLift;
  if (lift > 0 && !ABOUT_TESTS.test(options.query ?? '')) fileScores = liftTestedSources(fileScores, lift);
  return fileScores;
}

/** The files with a score above 0, best first (equal scores by path), their scores rounded. */
export function fileResults(fileScores: Map<string, number>): FileResult[] {
  return [...fileScores.entries()]
    .filter(([, score]) => score > 0)
    .map(([path, score]) => ({ path, score: round(score) }))
    .sort((a, b) => b.score - a.score || (a.path < b.path ? -1 : 1));
}

/** How far down the fused chunk list a file's chunks count as its share of the top (the top_chunks feature). */
const TOP_CHUNKS = 20;

/** What each candidate file brings to the ranker: its lexical scores, hints and chunks. */
function fileEvidence(g: Gathered, fused: Fused): Map<string, FileEvidence> {
  const { candidates: cands, fileLex, lexFileScore, denseFileScore, fileScores, ordered, fusion } = fused;
  // tied scores share a rank (gather ordered them by place)
  const coarseRank = new Map<string, number>();
  g.fileLexical.forEach((h, i) => {
    const prev = g.fileLexical[i - 1];
    coarseRank.set(h.path, prev && prev.score === h.score ? coarseRank.get(prev.path)! : i);
  });
  const denseRank = fusion.rankOf(denseFileScore);
  const fusedRank = fusion.rankOf(fileScores);
  const chunkLexical = new Set([...g.lexical, ...g.extraLexical].map((h) => h.path));
  const evidence = new Map<string, FileEvidence>();
  const best = new Map<string, number>();
  for (const path of new Set([...lexFileScore.keys(), ...fileScores.keys()])) {
    const def = g.definitions.get(path);
    evidence.set(path, {
      lexFile: lexFileScore.get(path) ?? 0,
      coarse: fileLex.get(path) ?? 0,
      coarseRank: coarseRank.get(path),
      chunkLexical: [],
      fileHint: g.fileHints.get(path) ?? 0,
      named: g.namedFiles.get(path) ?? 0,
      symbolHint: 0,
      exact: 0,
      defChunk: false,
      dense: denseFileScore.get(path) ?? 0,
      denseRank: denseRank.get(path),
      fusedRank: fusedRank.get(path),
      lists:
        (chunkLexical.has(path) ? 1 : 0) +
        (fileLex.has(path) ? 1 : 0) +
        ((denseFileScore.get(path) ?? 0) > 0 ? 1 : 0) +
        (g.fileHints.has(path) ? 1 : 0),
      defWhole: def !== undefined,
      defType: def?.type ?? false,
      denseChunks: 0,
      topChunks: 0,
      bestLine: 0,
      spanLines: 0,
    });
  }
  for (const c of ordered.slice(0, TOP_CHUNKS)) {
    const e = evidence.get(c.hit.path);
    if (e) e.topChunks++;
  }
  const symbolic = new Set<string>();
  const verbatim = new Set<string>();
  for (const c of cands.values()) {
    const e = evidence.get(c.hit.path);
    if (!e) continue;
    e.chunkLexical.push(c.lexical);
    e.symbolHint = Math.max(e.symbolHint, c.symbolHint);
    e.exact = Math.max(e.exact, c.exact);
    if (c.symbolHint > 0 || e.defWhole) symbolic.add(c.hit.path);
    if (c.exact > 0) verbatim.add(c.hit.path);
    if (c.dense > 0) e.denseChunks++;
    e.spanLines = Math.max(e.spanLines, c.hit.endLine);
    if (total(c) > (best.get(c.hit.path) ?? -1)) {
      best.set(c.hit.path, total(c));
      e.defChunk = c.hit.symbol !== null;
      e.bestLine = c.hit.startLine;
    }
  }
  for (const path of symbolic) evidence.get(path)!.lists++;
  for (const path of verbatim) evidence.get(path)!.lists++;
  return evidence;
}

/** Files the learned ranker reorders: the fused list's first ones (the rest keep their order, below them). */
const LEARNED_TOP = 100;

/**
 * The file scores as the learned ranker orders them: the fused list's first LEARNED_TOP files by the model's score
 * (mapped into (0, 1) so that scores stay positive), the rest below them in their fused order.
 */
function learnedFileScores(
  fileScores: Map<string, number>,
  features: Map<string, number[]>,
  model: RankerModel,
): Map<string, number> {
  const byScore = [...fileScores.entries()]
    .filter(([, score]) => score > 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const out = new Map<string, number>();
  let floor = 1;
  for (const [path] of byScore.slice(0, LEARNED_TOP)) {
    const s = 1 / (1 + Math.exp(-scoreRanker(model, features.get(path) ?? [])));
    out.set(path, s);
    floor = Math.min(floor, s);
  }
  const rest = byScore.slice(LEARNED_TOP);
  const maxRest = rest[0]?.[1] || 1;
  for (const [path, score] of rest) out.set(path, (floor / 2) * (score / maxRest));
  return out;
}

/**
 * The file scores with each tested source file lifted to `lift` × the score of the best of its test files that rank
 * above it.
 */
function liftTestedSources(fileScores: Map<string, number>, lift: number): Map<string, number> {
  const byBase = new Map<string, string[]>();
  for (const path of fileScores.keys()) {
    if (fileRole(path) !== 'code') continue;
    const base = path.slice(path.lastIndexOf('/') + 1);
    byBase.set(base, [...(byBase.get(base) ?? []), path]);
  }
  const raised = new Map<string, number>();
  for (const [path, score] of fileScores) {
    if (fileRole(path) !== 'test') continue;
    const tested = testedBasename(path);
    const sources = tested ? byBase.get(tested) : undefined;
    if (!sources) continue;
    // the source nearest the test: the longest shared folder prefix
    const shared = (a: string, b: string) => {
      let i = 0;
      while (i < a.length && a[i] === b[i]) i++;
      return i;
    };
    const source = sources.reduce((best, p) => (shared(p, path) > shared(best, path) ? p : best));
    raised.set(source, Math.max(raised.get(source) ?? 0, lift * score));
  }
  const lifted = new Map(fileScores);
  for (const [path, score] of raised) if (score > (lifted.get(path) ?? 0)) lifted.set(path, score);
  return lifted;
}

/** A name defined in more files than this points nowhere in particular: the ranking decides among them. */
const DEFINING_FILES_FIRST = 5;

/**
 * The files that define the name a symbol query spells come first, in their order (a type's before a function's of
 * the same name), in every mode: the dense list puts a small file that only uses the name nearest to it, and the
 * learned order almost always agrees already (its training gold for a name is the defining file). The moved files
 * take the first score, so that scores still fall down the list.
 */
export function definitionsFirst(files: FileResult[], defs: Map<string, { type: boolean }>): FileResult[] {
  if (!defs.size || defs.size > DEFINING_FILES_FIRST || !files.length) return files;
  const defining = files.filter((f) => defs.has(f.path));
  if (!defining.length || defining.every((f, i) => files[i] === f)) return files;
  const types = defining.filter((f) => defs.get(f.path)?.type);
  const first = [...types, ...defining.filter((f) => !defs.get(f.path)?.type)];
  const top = files[0]!.score;
  return [
    ...first.map((f) => ({ ...f, score: Math.max(f.score, top) })),
    ...files.filter((f) => !defs.has(f.path)),
  ];
}
