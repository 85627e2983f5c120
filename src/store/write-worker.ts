import { parentPort, workerData } from 'node:worker_threads';
import { unpackUpdate } from './packed.ts';
import { SqliteStore } from './sqlite/index.ts';
import type { WriteRequest } from './write-behind.ts';

/**
 * The write-behind thread (store/write-behind.ts): a second connection to the index that writes a long run's batches,
 * one transaction each, while the thread that started it hands out files. It writes only under the writer lock its
 * starter holds, so no other writer meets it.
 */
const { path } = workerData as { path: string };
let store: SqliteStore | undefined;
let opening: Error | undefined;
try {
  store = new SqliteStore(path);
} catch (err) {
  opening = err as Error;
}

// one message at a time, each after the one before has ended, whatever a write awaits
let queue = Promise.resolve();
parentPort!.on('message', (m: WriteRequest) => {
  // (handle answers every message; a close whose database fails to close has answered already)
  queue = queue.then(() => handle(m)).catch(() => {});
});

async function handle(m: WriteRequest): Promise<void> {
  if (m.close) {
    try {
      await store?.close();
    } finally {
      parentPort!.postMessage({ id: m.id });
    }
    return;
  }
  try {
    if (!store) throw opening;
    await store.replaceFiles(m.updates.map(unpackUpdate));
    await store.touchFiles(m.touches);
    parentPort!.postMessage({ id: m.id });
  } catch (err) {
    const e = err as Error & { code?: string };
    parentPort!.postMessage({ id: m.id, error: { message: e.message, name: e.name, code: e.code } });
  }
}
