import type { QuarryConfig } from '../config/config.ts';
import type { ChunkHit } from '../store/types.ts';
import { fileRole } from '../workspace/roles.ts';
import { byPlace, type Candidate, ROLE_PRIOR } from './candidates.ts';
import type { Gathered } from './gather.ts';
import type { SearchMode } from './modes.ts';
import type { AnalyzedQuery } from './query.ts';

// Fusion, the stage after gathering: the gathered lists become candidate chunks, each with its signals and its fused
// score, in one order; and each file gets a lexical, a dense and a fused score. Pure: no store, no I/O.

/** How much a hint can lift a chunk, relative to the best lexical match (1.0). */
const FILE_HINT_WEIGHT = 0.6;
const SYMBOL_HINT_WEIGHT = 0.5;
/** A file ranks by its best chunk plus a little for each further matching chunk (evidence spread over a file). */
const FILE_SPREAD_WEIGHT = 0.15;
const FILE_SPREAD_CHUNKS = 4;

/** Weight of the file's coarse (whole-file) BM25 score in each of its chunks' scores. */
const FILE_LEXICAL_WEIGHT = 1;

/** What fusion and the file ranker read besides the gathered lists. */
export interface FuseOptions {
  mode: SearchMode;
  /** The analysed query (the learned ranker's features read it). */
  analyzed?: AnalyzedQuery;
  /** Told each candidate file's ranker features (training and inspection; `quarry eval --features`). */
  onFeatures?: (features: Map<string, number[]>) => void;
  /** Share of the query the embedding model read (scales the dense list's weight). */
  queryCoverage?: number;
  /** The question, for signals that read it (is it about tests?). */
  query?: string;
}

/** What fusion makes of the gathered lists: the candidates with their scores, and each file's score by list. */
export interface Fused {
  /** Every candidate chunk, by chunk id, its signals and `final` set. */
  candidates: Map<number, Candidate>;
  /** The candidates whose fused score is above 0, best first. */
  ordered: Candidate[];
  /** Each file's whole-file BM25 score, over the best one's. */
  fileLex: Map<string, number>;
  /** Each file's lexical score (its best chunk plus a little for the next ones, or its whole-file score alone). */
  lexFileScore: Map<string, number>;
  /** Each file's dense score (its chunks', or its coarse vector's); empty in lexical mode. */
  denseFileScore: Map<string, number>;
  /** Each file's fused score, the order the file ranker starts from. */
  fileScores: Map<string, number>;
  /** How the lists were combined (the file ranker ranks by it too). */
  fusion: Fusion;
}

/** The candidates and the files' scores, fused from what the retrievers gathered. */
export function fuseLists(g: Gathered, config: QuarryConfig, options: FuseOptions): Fused {
  const { mode } = options;
  const maxFileLex = g.fileLexical.reduce((m, h) => Math.max(m, h.score), 0) || 1;
  const fileLex = new Map(g.fileLexical.map((h) => [h.path, h.score / maxFileLex]));
  const candidate = candidateMaker(g, config, fileLex);
  const cands = lexicalCandidates(g, candidate);
  const lexFileScore = lexicalFileScores(cands, fileLex, g.fileHints);
  // dense: chunk vectors, and coarse file vectors for files whose chunks are not embedded yet
  const denseFileScore =
    mode !== 'lexical' ? addDense(g, cands, candidate, config.search.denseFloor) : new Map<string, number>();

  const fusion = fusionOf(config, options, cands);
  const ordered = orderChunks([...cands.values()], fusion);
  const fileScores = fuseFileScores(lexFileScore, denseFileScore, g.namedFiles, fusion);
  return { candidates: cands, ordered, fileLex, lexFileScore, denseFileScore, fileScores, fusion };
}

/** A candidate's lexical score: its own BM25, its file's, the hints and the verbatim evidence, times its prior. */
export const total = (c: Candidate) =>
  c.prior *
  (c.lexical +
    FILE_LEXICAL_WEIGHT * c.fileLexical +
    FILE_HINT_WEIGHT * c.fileHint +
    SYMBOL_HINT_WEIGHT * c.symbolHint +
    c.exact);

type MakeCandidate = (hit: Omit<ChunkHit, 'score'>, lexical: number, symbolHint?: number) => Candidate;

/** Makes a chunk's candidate: its lexical score, with its file's signals, the exact hits and its role's prior. */
function candidateMaker(g: Gathered, config: QuarryConfig, fileLex: Map<string, number>): MakeCandidate {
  const { fileHints: fHints, exactHits } = g;
  const exactWeight = config.search.exactWeight;
  return (hit, lexical, symbolHint = 0) => ({
    hit: {
      chunkId: hit.chunkId,
      path: hit.path,
      startLine: hit.startLine,
      endLine: hit.endLine,
      symbol: hit.symbol,
      kind: hit.kind,
    },
    lexical,
    fileLexical: fileLex.get(hit.path) ?? 0,
    fileHint: fHints.get(hit.path) ?? 0,
    symbolHint,
    exact: exactWeight * (exactHits.get(hit.chunkId) ?? 0),
    prior: ROLE_PRIOR[fileRole(hit.path)],
    dense: 0,
    final: 0,
  });
}

/** The chunks the lexical lists and the hints reached, by chunk id, with their symbol hints. */
function lexicalCandidates(g: Gathered, candidate: MakeCandidate): Map<number, Candidate> {
  const maxLex = g.lexical.reduce((m, h) => Math.max(m, h.score), 0) || 1;
  const cands = new Map<number, Candidate>();
  for (const h of g.lexical) cands.set(h.chunkId, candidate(h, h.score / maxLex));
  for (const h of g.extraLexical)
    if (!cands.has(h.chunkId)) cands.set(h.chunkId, candidate(h, h.score / maxLex));
  for (const h of g.hinted) if (!cands.has(h.chunkId)) cands.set(h.chunkId, candidate(h, 0));
  for (const [chunkId, strength] of g.symbolHints) {
    const c = cands.get(chunkId);
    if (c) c.symbolHint = Math.max(c.symbolHint, strength);
  }
  return cands;
}

function lexicalFileScores(
  cands: Map<number, Candidate>,
  fileLex: Map<string, number>,
  fHints: Map<string, number>,
): Map<string, number> {
  // lexical score of each file: its best chunk plus a little for the next ones, or its coarse document alone
  const lexFiles = new Map<string, number[]>();
  for (const c of [...cands.values()].sort((a, b) => total(b) - total(a))) {
    const list = lexFiles.get(c.hit.path);
    if (list) list.push(total(c));
    else lexFiles.set(c.hit.path, [total(c)]);
  }
  for (const [path, lex] of fileLex)
    if (!lexFiles.has(path))
      lexFiles.set(path, [
        ROLE_PRIOR[fileRole(path)] * (FILE_LEXICAL_WEIGHT * lex + FILE_HINT_WEIGHT * (fHints.get(path) ?? 0)),
      ]);
  return new Map([...lexFiles].map(([path, scores]) => [path, spread(scores)]));
}

/** Adds the dense chunk hits to the candidates; returns each file's dense score (its chunks', or its coarse vector's). */
function addDense(
  g: Gathered,
  cands: Map<number, Candidate>,
  candidate: MakeCandidate,
  floor: number,
): Map<string, number> {
  const denseFileScore = new Map<string, number>();
  for (const d of g.denseChunks) {
    if (d.score < floor) continue; // too far from the question to count as evidence
    const c = cands.get(d.chunkId);
    if (c) c.dense = d.score;
    else cands.set(d.chunkId, { ...candidate(d, 0), dense: d.score });
  }
  for (const c of cands.values())
    if (c.dense > 0)
      denseFileScore.set(c.hit.path, Math.max(denseFileScore.get(c.hit.path) ?? 0, c.prior * c.dense));
  for (const f of g.denseFiles)
    if (!f.refined)
      denseFileScore.set(
        f.path,
        Math.max(denseFileScore.get(f.path) ?? 0, ROLE_PRIOR[fileRole(f.path)] * f.score),
      );
  return denseFileScore;
}

/** How the lexical and dense lists combine: the mode, the fusion and its weights, and reciprocal-rank helpers. */
export interface Fusion {
  mode: SearchMode;
  fusion: QuarryConfig['search']['fusion'];
  lexicalWeight: number;
  denseWeight: number;
  rrf: (rank: number | undefined, w: number) => number;
  rankOf: (scores: Map<string | number, number>) => Map<string | number, number>;
}

function fusionOf(config: QuarryConfig, options: FuseOptions, cands: Map<number, Candidate>): Fusion {
  const { fusion, rrfK, lexicalWeight } = config.search;
  const denseWeight = config.search.denseWeight * Math.min(1, Math.max(0, options.queryCoverage ?? 1));
  const rrf = (rank: number | undefined, w: number) => (rank === undefined ? 0 : w / (rrfK + rank + 1));
  // ranks by score; equal scores by place (a chunk id is looked up, a path is its own place)
  const placeOf = (key: string | number) =>
    typeof key === 'number'
      ? (cands.get(key)?.hit ?? { path: '', startLine: key })
      : { path: key, startLine: 0 };
  const rankOf = (scores: Map<string | number, number>) =>
    new Map(
      [...scores.entries()]
        .filter(([, v]) => v > 0)
        .sort((a, b) => b[1] - a[1] || byPlace(placeOf(a[0]), placeOf(b[0])))
        .map(([key], i) => [key, i] as const),
    );
  return { mode: options.mode, fusion, lexicalWeight, denseWeight, rrf, rankOf };
}

/** Sets each candidate's final score; returns those above 0, best first. */
function orderChunks(all: Candidate[], f: Fusion): Candidate[] {
  const { mode, fusion, lexicalWeight, denseWeight, rrf, rankOf } = f;
  if (mode === 'lexical') for (const c of all) c.final = total(c);
  else if (mode === 'dense') for (const c of all) c.final = c.prior * c.dense;
  else if (fusion === 'linear') {
    const maxDense = all.reduce((m, c) => Math.max(m, c.dense), 0) || 1;
    for (const c of all) c.final = lexicalWeight * total(c) + denseWeight * c.prior * (c.dense / maxDense);
  } else {
    const lexRank = rankOf(new Map(all.map((c) => [c.hit.chunkId, total(c)])));
    const denseRank = rankOf(new Map(all.map((c) => [c.hit.chunkId, c.prior * c.dense])));
    for (const c of all)
      c.final =
        rrf(lexRank.get(c.hit.chunkId), lexicalWeight) + rrf(denseRank.get(c.hit.chunkId), denseWeight);
  }
  return all.filter((c) => c.final > 0).sort((a, b) => b.final - a.final || byPlace(a.hit, b.hit));
}

/** Each file's fused score from its lexical and dense scores (and, with RRF, the files the query names). */
function fuseFileScores(
  lexFileScore: Map<string, number>,
  denseFileScore: Map<string, number>,
  namedFiles: Map<string, number>,
  f: Fusion,
): Map<string, number> {
  const { mode, fusion, lexicalWeight, denseWeight, rrf, rankOf } = f;
  if (mode === 'lexical') return lexFileScore;
  if (mode === 'dense') return denseFileScore;
  const fileScores = new Map<string, number>();
  if (fusion === 'linear') {
    const maxLexFile = Math.max(0, ...lexFileScore.values()) || 1;
    const maxDenseFile = Math.max(0, ...denseFileScore.values()) || 1;
    for (const path of new Set([...lexFileScore.keys(), ...denseFileScore.keys()]))
      fileScores.set(
        path,
        (lexicalWeight * (lexFileScore.get(path) ?? 0)) / maxLexFile +
          (denseWeight * (denseFileScore.get(path) ?? 0)) / maxDenseFile,
      );
    return fileScores;
  }
  const lexRank = rankOf(lexFileScore);
  const denseRank = rankOf(denseFileScore);
  // files the query names are a third list: a named file is what the user means, whatever the model read
  const namedRank = rankOf(namedFiles);
  for (const path of new Set([...lexRank.keys(), ...denseRank.keys()]))
    fileScores.set(
      path as string,
      rrf(lexRank.get(path), lexicalWeight) +
        rrf(denseRank.get(path), denseWeight) +
        rrf(namedRank.get(path), lexicalWeight),
    );
  return fileScores;
}

/** A file's score from its chunks' scores (best first): the best, plus a little for each of the next few. */
function spread(scores: number[]): number {
  let score = scores[0] ?? 0;
  for (let i = 1; i < Math.min(scores.length, FILE_SPREAD_CHUNKS + 1); i++)
    score += (FILE_SPREAD_WEIGHT * scores[i]!) / i;
  return score;
}
