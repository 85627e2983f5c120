import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { createLocalEmbedder } from './local.ts';
import type { EmbedKind } from './types.ts';

/**
 * An embedding worker: one onnxruntime session, run at lowered priority so the user's own work comes first. The
 * priority is set before the session starts its threads, which inherit it (on Linux it is per thread).
 */
const { weights, threads, nice } = workerData as { weights: string; threads: number; nice: number };
try {
  setPriority(nice);
} catch {
  // not permitted here: run at normal priority
}
const ready = createLocalEmbedder({ weights, threads });

parentPort!.on('message', async (msg: { id: number; texts: string[]; kind: EmbedKind } | { close: true }) => {
  const embedder = await ready;
  if ('close' in msg) {
    await embedder.close();
    parentPort!.close();
    return;
  }
  try {
    const vectors = await embedder.embed(msg.texts, msg.kind);
    parentPort!.postMessage(
      { id: msg.id, vectors },
      vectors.map((v) => v.buffer as ArrayBuffer),
    );
  } catch (err) {
    parentPort!.postMessage({ id: msg.id, error: (err as Error).message });
  }
});
