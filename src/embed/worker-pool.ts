import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { QuarryError } from '../errors.ts';
import { startWorker } from '../workers.ts';
import { quietOnnxRuntime } from './local.ts';
import type { Embedder, EmbedKind } from './types.ts';

export interface WorkerEmbedderOptions {
  /** The embedder as this thread knows it (for its id, dimension and token counts). */
  local: Embedder;
  weights: string;
  /** Workers; default min(4, cores / 2), at least 1. */
  workers?: number;
  /** onnxruntime threads per worker; default the cores left to each worker. */
  threads?: number;
  /** Niceness of the workers' threads. Default 10. */
  nice?: number;
}

/**
 * The local embedder on background worker threads at lowered priority: `embed` splits its texts across the workers.
 * Same id and vectors as the in-thread embedder.
 */
export function createWorkerEmbedder(options: WorkerEmbedderOptions): Embedder {
  const cores = availableParallelism();
  const count = Math.max(1, options.workers || Math.min(4, Math.floor(cores / 2)));
  const threads = Math.max(1, options.threads || Math.floor(cores / count));
  type Pending = { resolve: (v: Float32Array[]) => void; reject: (e: Error) => void };
  const pending = new Map<number, Pending>();
  quietOnnxRuntime(); // in this thread's environment, which the workers' runtime reads
  const workers = Array.from({ length: count }, () => {
    const w = startWorker('embed/worker', {
      weights: options.weights,
      threads,
      nice: options.nice ?? 10,
    });
    w.on('message', (m: { id: number; vectors?: Float32Array[]; error?: string }) => {
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error) p.reject(new QuarryError('IO', `embedding failed: ${m.error}`));
      else p.resolve(m.vectors!);
    });
    w.on('error', (err) => {
      for (const p of pending.values()) p.reject(err);
      pending.clear();
    });
    return w;
  });
  let next = 0;
  const run = (w: Worker, texts: string[], kind: EmbedKind) =>
    new Promise<Float32Array[]>((resolve, reject) => {
      const id = next++;
      pending.set(id, { resolve, reject });
      w.postMessage({ id, texts, kind });
    });
  const { local } = options;
  return {
    id: local.id,
    dimension: local.dimension,
    maxTokens: local.maxTokens,
    countTokens: (t) => local.countTokens(t),
    async embed(texts, kind) {
      if (!texts.length) return [];
      const per = Math.ceil(texts.length / workers.length);
      const parts = workers.map((w, i) => run(w, texts.slice(i * per, (i + 1) * per), kind));
      return (await Promise.all(parts)).flat();
    },
    async close() {
      await Promise.all(workers.map((w) => w.terminate()));
      await local.close();
    },
  };
}
