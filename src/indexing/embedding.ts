import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Embedder } from '../embed/types.ts';
import { readHistory } from '../search/history.ts';
import type { EmbeddingCache, PendingFile, Store, StoredChunk, VectorIndex } from '../store/types.ts';
import { chunkGetsVector } from '../workspace/roles.ts';
import { byPriority, centralityOf, type PriorityInputs } from './priority.ts';
import { rateMeter } from './rate.ts';

export interface EmbedProgress {
  phase: 1 | 2;
  /** Files done in this phase (all runs), out of `total`. */
  done: number;
  total: number;
  /** Texts embedded per second in this run (cache hits excluded). */
  textsPerSec: number;
  etaMs?: number;
}

export interface EmbedReport {
  embedder: string;
  /** Vectors of another embedder were dropped. */
  reset: boolean;
  coarseFiles: number;
  refinedFiles: number;
  embedded: number;
  fromCache: number;
  interrupted: boolean;
  durationMs: number;
}

export interface EmbedOptions {
  signal?: AbortSignal;
  onProgress?: (p: EmbedProgress) => void;
  /** Files per commit. Default 16: a kill loses at most that much work. */
  batchFiles?: number;
  /** Where vectors are looked up before embedding. Default: the store's own cache. */
  cache?: EmbeddingCache;
  /**
   * `priority` (default): files most likely wanted first (indexing/priority.ts); `walk`: the stores' path order, as
   * before 2026-11-25 (a benchmark's baseline).
   */
  order?: 'priority' | 'walk';
  /** The repository's folder, for its git history (recently changed files first). */
  root?: string;
  /** Files someone searched for or opened since the run began (a live project's): asked at each listing. */
  preferred?: () => ReadonlySet<string>;
}

/** How often a run records its progress for `status`. */
const PROGRESS_EVERY_MS = 2000;

/** Pending files listed at once: every one, in a repository of any size (a path and a hash each). */
const LIST_ALL = Number.MAX_SAFE_INTEGER;

/** Characters of a file's head that go into its coarse (phase 1) text. */
const COARSE_HEAD_CHARS = 1200;
/** Definition names that go into it, in line order. */
const COARSE_SYMBOLS = 64;

/**
 * Phase 1: what a file is about, from its definitions and its first lines. Paths stay out of embedded texts (the
 * lexical index and the file-name hints use them): a moved or renamed file then re-embeds nothing.
 */
export function coarseText(symbols: string[], chunks: Array<{ text: string }>): string {
  let head = '';
  for (const c of chunks) {
    if (head.length >= COARSE_HEAD_CHARS) break;
    head += `${c.text}\n`;
  }
  return `${symbols.slice(0, COARSE_SYMBOLS).join(' ')}\n${head.slice(0, COARSE_HEAD_CHARS)}`;
}

/** Phase 2: one chunk, introduced by the definition it belongs to. */
export function chunkText(c: { text: string; symbol: string | null; container: string | null }): string {
  const where = [c.container, c.symbol].filter(Boolean).join('.');
  return where ? `${where}\n${c.text}` : c.text;
}

/** The chunks of a file that get a vector in phase 2 (all but a data file's tail), in line order. */
export function chunksToEmbed<T>(path: string, chunks: T[]): T[] {
  return chunks.filter((_, ordinal) => chunkGetsVector(path, ordinal));
}

/** Texts embedded between two writes to the embedding cache. */
const CACHE_SLICE = 64;

/** The embedding cache's key for a text. */
export const textHash = (text: string) => createHash('sha1').update(text).digest('hex');

/**
 * Embeds what the index lacks, coarse file vectors first (every file becomes findable by meaning quickly), then
 * every chunk. Each batch of files commits on its own, so a kill loses one batch and the next run resumes; vectors
 * are looked up by (embedder, text hash) first, so moved, renamed and reverted files cost nothing.
 */
export async function embedPending(
  store: Store,
  embedder: Embedder,
  options: EmbedOptions = {},
): Promise<EmbedReport> {
  const started = performance.now();
  const vectors: VectorIndex | undefined = store.vectors;
  if (!vectors) throw new Error(`the ${store.kind} store keeps no vectors`);
  const { reset } = await vectors.useEmbedder(embedder.id, embedder.dimension);
  // a cheap embedder (the static table) recomputes faster than a cache answers, and its batches cost little to redo
  const batchFiles = options.batchFiles ?? (embedder.cheap ? 256 : 16);
  const cache = embedder.cheap ? undefined : (options.cache ?? store.cache);
  const report: EmbedReport = {
    embedder: embedder.id,
    reset,
    coarseFiles: 0,
    refinedFiles: 0,
    embedded: 0,
    fromCache: 0,
    interrupted: false,
    durationMs: 0,
  };
  const vectorsFor = async (texts: string[]): Promise<Float32Array[]> => {
    const hashes = texts.map(textHash);
    const cached = cache
      ? await cache.get(embedder.id, [...new Set(hashes)])
      : new Map<string, Float32Array>();
    const missing = [...new Set(hashes.filter((h) => !cached.has(h)))];
    const byHash = new Map(hashes.map((h, i) => [h, texts[i]!]));
    // into the cache a slice at a time: a batch of files can hold hundreds of texts (minutes of a transformer on
    // a CPU), and a crash mid-batch then loses one slice; the next run finds the rest in the cache
    for (let i = 0; i < missing.length; i += CACHE_SLICE) {
      const slice = missing.slice(i, i + CACHE_SLICE);
      const fresh = await embedder.embed(
        slice.map((h) => byHash.get(h)!),
        'document',
      );
      const entries = slice.map((hash, j) => ({ hash, vector: fresh[j]! }));
      await cache?.put(embedder.id, entries);
      for (const e of entries) cached.set(e.hash, e.vector);
      report.embedded += slice.length;
    }
    report.fromCache += hashes.length - missing.length;
    return hashes.map((h) => cached.get(h)!);
  };

  // where the run is, for `status` in any process (every few seconds: a meta write is a small transaction)
  let recorded = 0;
  const recordProgress = (p: EmbedProgress) => {
    // a run with nothing left to do (a watcher's, after most saves) writes nothing
    if (p.done >= p.total || performance.now() - recorded < PROGRESS_EVERY_MS) return;
    recorded = performance.now();
    void store
      .setMeta('embed_progress', JSON.stringify({ ...p, at: new Date().toISOString() }))
      .catch(() => undefined);
  };
  // what decides the order: read once per run, and only when there is an order to decide (more files than one
  // batch: a watcher's run after a save embeds a file or two, and the reference graph of a large repository is not
  // read for them)
  let inputs: Promise<PriorityInputs> | undefined;
  const order = async (all: PendingFile[]): Promise<PendingFile[]> => {
    if (options.order === 'walk' || all.length <= batchFiles) return all;
    inputs ??= (async () => ({
      history: options.root ? await readHistory(options.root) : undefined,
      centrality: await centralityOf(store).catch(() => undefined),
    }))();
    return byPriority(all, { ...(await inputs), preferred: options.preferred?.() ?? new Set() });
  };
  for (const phase of [1, 2] as const) {
    const status = await vectors.status();
    const total = status.files;
    let done = phase === 1 ? status.coarse : status.refined;
    const phaseStart = performance.now();
    let embeddedAtStart = report.embedded;
    // the rates from the first batch on: its time holds the model's load and the order's reading (issue 65)
    const filesPace = rateMeter(done);
    const textsPace = rateMeter(report.embedded);
    const progress = () => {
      const secs = (performance.now() - phaseStart) / 1000;
      const rate = textsPace(report.embedded) ?? (secs > 0 ? (report.embedded - embeddedAtStart) / secs : 0);
      const filesRate = filesPace(done);
      const p: EmbedProgress = {
        phase,
        done,
        total,
        textsPerSec: rate,
        ...(filesRate ? { etaMs: ((total - done) / filesRate) * 1000 } : {}),
      };
      options.onProgress?.(p);
      recordProgress(p);
    };
    embeddedAtStart = report.embedded;
    progress();
    let queue: PendingFile[] = [];
    let listed: string | undefined;
    for (;;) {
      if (options.signal?.aborted) {
        report.interrupted = true;
        break;
      }
      if (!queue.length) {
        // every pending file, in priority order; listed again once they are done (files changed meanwhile)
        const all = await vectors.pendingFiles(phase, LIST_ALL);
        const key = all.map((p) => `${p.path}\0${p.hash}`).join('\n');
        if (!all.length || key === listed) break; // nothing was stored for them last time: don't spin
        listed = key;
        queue = await order(all);
      }
      const pending = queue.splice(0, batchFiles);
      const paths = pending.map((p) => p.path);
      // one round trip for every file's chunks (and, in phase 1, its definitions)
      const [chunksOf, symbolsOf] = await Promise.all([
        store.getFilesChunks(paths),
        phase === 1 ? store.listSymbols(paths) : undefined,
      ]);
      const chunks = (path: string): StoredChunk[] => chunksOf.get(path) ?? [];
      const embedded = (path: string): StoredChunk[] => chunksToEmbed(path, chunks(path));
      if (phase === 1) {
        const texts = pending.map((p) =>
          coarseText(
            (symbolsOf?.get(p.path) ?? []).map((s) => s.name),
            chunks(p.path),
          ),
        );
        const vecs = await vectorsFor(texts);
        await vectors.putFileVectors(
          pending.map((p, i) => ({ path: p.path, hash: p.hash, vector: vecs[i]! })),
        );
        report.coarseFiles += pending.length;
      } else {
        const texts = pending.flatMap((p) => embedded(p.path).map((c) => chunkText(c)));
        const vecs = await vectorsFor(texts);
        let k = 0;
        await vectors.putChunkVectors(
          pending.map((p) => ({
            path: p.path,
            hash: p.hash,
            vectors: embedded(p.path).map((c) => ({ chunkId: c.chunkId, vector: vecs[k++]! })),
          })),
        );
        report.refinedFiles += pending.length;
      }
      done += pending.length;
      progress();
    }
    if (report.interrupted) break;
  }
  report.durationMs = performance.now() - started;
  return report;
}
