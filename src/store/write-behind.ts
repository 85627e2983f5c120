import { QuarryError, type QuarryErrorCode } from '../errors.ts';
import { startWorker } from '../workers.ts';
import { packedBuffers } from './packed.ts';
import type { AnyUpdate, FileTouch, WriteBehind } from './types.ts';

type Request = { close?: false; updates: AnyUpdate[]; touches: FileTouch[] } | { close: true };
export type WriteRequest = Request & { id: number };

type Answer = { id: number; error?: { message: string; name: string; code?: string } };

/**
 * Starts the write-behind thread for a SQLite index (StoreCore.writeBehind): batches are posted to it and written in
 * order, while this thread goes on. A write's error rejects its promise with the same message (a QuarryError keeps
 * its code); a thread that stops unasked rejects every batch not yet written.
 */
export function startWriteBehind(path: string): WriteBehind {
  const worker = startWorker('store/write-worker', { path });
  const pending = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  let next = 0;
  let stopped: Error | undefined;
  const failAll = (err: Error) => {
    stopped ??= err;
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  worker.on('message', (m: Answer) => {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (!m.error) return p.resolve();
    const { message, name, code } = m.error;
    const err =
      name === 'QuarryError' && code
        ? new QuarryError(code as QuarryErrorCode, message)
        : Object.assign(new Error(message), { name, ...(code ? { code } : {}) });
    p.reject(err);
  });
  worker.on('error', failAll);
  // a batch the thread could not take would never be answered
  worker.on('messageerror', failAll);
  worker.on('exit', (code) => failAll(new Error(`the index's writer thread stopped (exit code ${code})`)));
  const send = (request: Request): Promise<void> => {
    if (stopped) return Promise.reject(stopped);
    const id = next++;
    return new Promise<void>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      // packed updates move to the thread: this one never reads them again
      worker.postMessage({ ...request, id }, request.close ? [] : packedBuffers(request.updates));
    });
  };
  return {
    write: (updates, touches) => send({ updates, touches }),
    async close() {
      if (!stopped) {
        // the thread answers in order: once the close is answered, every batch before it is
        await send({ close: true }).catch(() => {});
        stopped = new Error('the write-behind thread was closed');
      }
      await worker.terminate();
    },
  };
}
