import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Embedder } from '../embed/types.ts';
import type { PendingEmbedding, Store } from '../store/types.ts';

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
}

/**
 * Phase 1: what a file is about, from its definitions and its first lines. Paths stay out of embedded texts (the
 * lexical index and the file-name hints use them): a moved or renamed file then re-embeds nothing.
 */
export function coarseText(p: PendingEmbedding): string {
  return `${p.symbols.join(' ')}\n${p.head}`;
}

/** Phase 2: one chunk, introduced by the definition it belongs to. */
export function chunkText(c: { text: string; symbol: string | null; container: string | null }): string {
  const where = [c.container, c.symbol].filter(Boolean).join('.');
  return where ? `${where}\n${c.text}` : c.text;
}

const textHash = (text: string) => createHash('sha1').update(text).digest('hex');

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
  const { reset } = await store.useEmbedder(embedder.id, embedder.dimension);
  const batchFiles = options.batchFiles ?? 16;
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
    const cached = await store.getCachedVectors(embedder.id, [...new Set(hashes)]);
    const missing = [...new Set(hashes.filter((h) => !cached.has(h)))];
    if (missing.length) {
      const byHash = new Map(hashes.map((h, i) => [h, texts[i]!]));
      const fresh = await embedder.embed(
        missing.map((h) => byHash.get(h)!),
        'document',
      );
      const entries = missing.map((hash, i) => ({ hash, vector: fresh[i]! }));
      await store.putCachedVectors(embedder.id, entries);
      for (const e of entries) cached.set(e.hash, e.vector);
      report.embedded += missing.length;
    }
    report.fromCache += hashes.length - missing.length;
    return hashes.map((h) => cached.get(h)!);
  };

  for (const phase of [1, 2] as const) {
    const status = await store.embeddingStatus();
    const total = status.files;
    let done = phase === 1 ? status.coarse : status.refined;
    const phaseStart = performance.now();
    let embeddedAtStart = report.embedded;
    const progress = () => {
      const secs = (performance.now() - phaseStart) / 1000;
      const rate = secs > 0 ? (report.embedded - embeddedAtStart) / secs : 0;
      const filesRate = secs > 0 ? (done - (phase === 1 ? status.coarse : status.refined)) / secs : 0;
      options.onProgress?.({
        phase,
        done,
        total,
        textsPerSec: rate,
        ...(filesRate > 0 ? { etaMs: ((total - done) / filesRate) * 1000 } : {}),
      });
    };
    embeddedAtStart = report.embedded;
    progress();
    let stuckOn: string | undefined;
    for (;;) {
      if (options.signal?.aborted) {
        report.interrupted = true;
        break;
      }
      const pending = await store.pendingEmbedding(phase, batchFiles);
      if (!pending.length) break;
      if (pending[0]!.path === stuckOn) break; // nothing was stored for it last time: don't spin
      stuckOn = pending[0]!.path;
      if (phase === 1) {
        const vectors = await vectorsFor(pending.map(coarseText));
        await store.putFileVectors(
          pending.map((p, i) => ({ path: p.path, hash: p.hash, vector: vectors[i]! })),
        );
        report.coarseFiles += pending.length;
      } else {
        const texts = pending.flatMap((p) => p.chunks.map((c) => chunkText(c)));
        const vectors = await vectorsFor(texts);
        let k = 0;
        await store.putChunkVectors(
          pending.map((p) => ({
            path: p.path,
            hash: p.hash,
            vectors: p.chunks.map((c) => ({ chunkId: c.chunkId, vector: vectors[k++]! })),
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
