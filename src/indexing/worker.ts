import { parentPort, workerData } from 'node:worker_threads';
import type { QuarryConfig } from '../config/config.ts';
import { isWasmFailure } from './pool.ts';
import { type FileTask, processFile } from './process-file.ts';

/** A parse worker: receives file tasks, answers with what `processFile` made of them. */
const { root, config } = workerData as { root: string; config: QuarryConfig };

parentPort!.on('message', async (msg: { id: number; task: FileTask }) => {
  try {
    const outcome = await processFile(root, msg.task, config);
    parentPort!.postMessage({ id: msg.id, outcome });
  } catch (err) {
    parentPort!.postMessage({
      id: msg.id,
      error: (err as Error).stack ?? String(err),
      // this worker's tree-sitter memory is suspect from now on: the pool replaces it
      ...(isWasmFailure(err) ? { wasm: true } : {}),
    });
  }
});
