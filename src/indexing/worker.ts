import { getHeapStatistics } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { loadedGrammarNames, treeSitterMemory } from '../chunk/chunker.ts';
import type { QuarryConfig } from '../config/config.ts';
import { packedBuffers, packUpdate } from '../store/packed.ts';
import { isWasmFailure } from './pool.ts';
import { type FileTask, processFile } from './process-file.ts';

/** A parse worker: receives file tasks, answers with what `processFile` made of them. */
const { root, config } = workerData as { root: string; config: QuarryConfig };

// one file at a time, in the order they came: the pool knows which file a worker that dies was on (the first it has
// not answered, once the worker said it is ready: pool.ts), without a message for each file's start
let queue: Promise<void> = Promise.resolve();
parentPort!.on('message', (msg: { id: number; task: FileTask }) => {
  queue = queue.then(() => handle(msg));
});
parentPort!.postMessage({ id: 0, ready: true });

/**
 * A worker whose V8 heap or tree-sitter memory passed this after a file is replaced (the pool reads `swollen`):
 * neither gives memory back. A large file leaves the heap that V8 grew for it (160–270 MiB against the 40–50 of
 * ordinary files), and tree-sitter's WebAssembly memory only grows; a new worker starts small, and loads the
 * grammars the pool holds without compiling them again.
 */
const SWOLLEN_BYTES = 128 * 2 ** 20;
function swollen(): boolean {
  return getHeapStatistics().total_heap_size > SWOLLEN_BYTES || treeSitterMemory() > SWOLLEN_BYTES;
}

// the grammars this worker loaded that the pool has not been told of (it holds them compiled: see compiledGrammar)
let told = 0;
function newGrammars(): { grammars?: string[] } {
  const names = loadedGrammarNames();
  if (names.length === told) return {};
  const grammars = names.slice(told);
  told = names.length;
  return { grammars };
}

async function handle(msg: { id: number; task: FileTask }): Promise<void> {
  try {
    const made = await processFile(root, msg.task, config);
    // packed: the thread that hands out files reads only the row, and passes the rest on to the writer uncopied
    const outcome = made.status === 'indexed' ? { ...made, update: packUpdate(made.update) } : made;
    parentPort!.postMessage(
      { id: msg.id, outcome, ...newGrammars(), ...(swollen() ? { swollen: true } : {}) },
      outcome.status === 'indexed' ? packedBuffers([outcome.update]) : [],
    );
  } catch (err) {
    parentPort!.postMessage({
      id: msg.id,
      error: (err as Error).stack ?? String(err),
      // this worker's tree-sitter memory is suspect from now on: the pool replaces it
      ...(isWasmFailure(err) ? { wasm: true } : {}),
    });
  }
}
