import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import { compiledGrammar } from '../src/chunk/chunker.ts';
import { createFilePool, parseWorkerHeapMb } from '../src/indexing/pool.ts';
import { type FileOutcome, processFile } from '../src/indexing/process-file.ts';
import { isPacked, packedBuffers, packUpdate, unpackUpdate } from '../src/store/packed.ts';
import { startWorker } from '../src/workers.ts';
import { makeTree, removeTree, testConfig } from './helpers.ts';

const MiB = 2 ** 20;

/** Small Python functions, ~44 bytes each: the default ~6.6 MB is a tree and its captures far past a 48 MiB heap. */
function hugePython(functions = 150_000): string {
  const out: string[] = [];
  for (let i = 0; i < functions; i++) out.push(`def f${i}(a, b):\n    return a + b * ${i}\n`);
  return out.join('\n');
}

const task = (root: string, path: string) => {
  const st = statSync(join(root, path));
  return { path, size: st.size, mtimeMs: st.mtimeMs };
};

/** What a parse worker (indexing/worker.ts) answers for one file, as the pool reads it. */
type Answer = {
  id: number;
  ready?: boolean;
  outcome?: FileOutcome;
  grammars?: string[];
  swollen?: boolean;
};

/** Sends one file to a worker and waits for its answer (not the message that it is ready). */
function answer(w: ReturnType<typeof startWorker>, id: number, t: ReturnType<typeof task>): Promise<Answer> {
  return new Promise((resolve) => {
    const on = (msg: Answer) => {
      if (msg.id !== id || msg.ready) return;
      w.off('message', on);
      resolve(msg);
    };
    w.on('message', on);
    w.postMessage({ id, task: t });
  });
}

test("a parse worker's heap limit grows with the largest file indexed", () => {
  assert.equal(parseWorkerHeapMb({ maxFileBytes: MiB }), 1024);
  assert.equal(parseWorkerHeapMb({ maxFileBytes: 64 * 1024 }), 1024);
  assert.equal(parseWorkerHeapMb({ maxFileBytes: 8 * MiB }), 4096);
});

test("a parse worker's update comes packed, and unpacks to what this thread makes of the file", async () => {
  const root = makeTree({
    'app.py': 'class Shop:\n    def total(self, items):\n        return sum(i.price for i in items)\n',
    'notes.md': '# Notes\n\nThe shop sums prices. ünïcödé 🙂\n',
  });
  try {
    const config = testConfig();
    const pool = createFilePool(root, config, 1);
    try {
      for (const path of ['app.py', 'notes.md']) {
        const fromWorker = await pool.run(task(root, path));
        const here = await processFile(root, task(root, path), config);
        assert.equal(fromWorker.status, 'indexed');
        assert.equal(here.status, 'indexed');
        if (fromWorker.status !== 'indexed' || here.status !== 'indexed') continue;
        const u = fromWorker.update;
        assert.ok(isPacked(u), `${path} came whole`);
        // the row is read where the files are handed out; the count without unpacking
        assert.deepEqual(u.file, here.update.file);
        assert.equal(u.chunkCount, here.update.chunks.length);
        assert.ok(u.chunkCount > 0);
        assert.deepEqual(unpackUpdate(u), here.update);
      }
    } finally {
      await pool.close();
    }
  } finally {
    removeTree(root);
  }
});

test('a packed update moves to another thread uncopied, and a whole one passes through unpacking as it is', async () => {
  const update = {
    file: {
      path: 'a.ts',
      size: 10,
      mtimeMs: 1,
      hash: 'h',
      language: 'typescript',
      method: 'tree-sitter' as const,
    },
    chunks: [],
    symbols: [],
    tokens: { path: 'a ts', symbols: '', body: 'const x' },
    text: 'const x = 1;',
  };
  assert.equal(unpackUpdate(update), update);
  const packed = packUpdate(update);
  assert.equal(packed.chunkCount, 0);
  const [buffer] = packedBuffers([packed, update]);
  assert.equal(packedBuffers([packed, update]).length, 1);
  const { port1, port2 } = new MessageChannel();
  const received = new Promise<typeof packed>((resolve) => port2.once('message', resolve));
  port1.postMessage(packed, [buffer!]);
  const there = await received;
  port1.close();
  // moved, not copied: this side's view is empty now, the other side's unpacks whole
  assert.equal(packed.packed.byteLength, 0);
  assert.deepEqual(unpackUpdate(there), update);
});

test('a file that takes its parse worker past its heap ends neither the run nor the files in flight with it', async () => {
  const files: Record<string, string> = { 'huge.py': hugePython() };
  for (let i = 0; i < 6; i++) files[`small${i}.py`] = `def small_${i}():\n    return ${i}\n`;
  const root = makeTree(files);
  try {
    const config = testConfig({ maxFileBytes: 16 * MiB });
    const pool = createFilePool(root, config, 1, 48);
    const paths = ['small0.py', 'huge.py', 'small1.py', 'small2.py', 'small3.py', 'small4.py', 'small5.py'];
    const outcomes = await Promise.all(paths.map((p) => pool.run(task(root, p))));
    await pool.close();
    const byPath = new Map(paths.map((p, i) => [p, outcomes[i]!]));
    for (const p of paths.filter((x) => x !== 'huge.py')) {
      const o = byPath.get(p)!;
      assert.equal(o.status, 'indexed', `${p}: ${JSON.stringify(o)}`);
    }
    // the worker died on it twice: chunked by lines in a third, or left out as unreadable if that died too
    const huge = byPath.get('huge.py')! as FileOutcome;
    if (huge.status === 'indexed') assert.equal(huge.update.file.method, 'lines');
    else {
      assert.equal(huge.status, 'unreadable');
      assert.match(huge.detail, /parse worker died.*memory/);
    }
  } finally {
    removeTree(root);
  }
});

test('workers that die on starting end the run with their error, and do not take every file down one by one', async () => {
  const root = makeTree({ 'a.py': 'def a():\n    return 1\n', 'b.py': 'def b():\n    return 2\n' });
  try {
    // no worker can start in 1 MiB of heap
    const pool = createFilePool(root, testConfig(), 1, 1);
    const results = await Promise.allSettled(['a.py', 'b.py'].map((p) => pool.run(task(root, p))));
    await pool.close();
    for (const r of results) {
      assert.equal(r.status, 'rejected');
      assert.match(String((r as PromiseRejectedResult).reason), /memory/);
    }
  } finally {
    removeTree(root);
  }
});

test('a parse worker names each grammar it loads once, and the pool can hold it compiled from the same bytes', async () => {
  const root = makeTree({
    'a.ts': 'export const a = 1;\n',
    'b.ts': 'export function b() {}\n',
    'c.py': 'def c():\n  pass\n',
  });
  const w = startWorker('indexing/worker', { root, config: testConfig() });
  try {
    const said: Array<string[] | undefined> = [];
    for (const [i, path] of ['a.ts', 'b.ts', 'c.py'].entries()) {
      const m = await answer(w, i, task(root, path));
      assert.equal(m.outcome?.status, 'indexed', path);
      said.push(m.grammars);
    }
    assert.deepEqual(said, [['typescript'], undefined, ['python']]);
    const wasm = (globalThis as unknown as { WebAssembly: { Module: new (b: Uint8Array) => object } })
      .WebAssembly;
    assert.ok((await compiledGrammar('python')) instanceof wasm.Module);
  } finally {
    await w.terminate();
    removeTree(root);
  }
});

test('a worker whose memory grew for a large file says so, and the pool goes on without it', async () => {
  // ~3 MB of Python parsed to its end leaves tree-sitter's memory at ~165 MiB, whatever the machine's speed; a
  // parse cut at its deadline (3 s, passed on a loaded machine) would leave as much as it had reached
  const timeout = process.env.QUARRY_PARSE_TIMEOUT_MS;
  process.env.QUARRY_PARSE_TIMEOUT_MS = '300000'; // workers copy the environment when they start
  const root = makeTree({
    'huge.py': hugePython(70_000),
    'a.py': 'def a():\n    return 1\n',
    'b.py': 'def b():\n  pass\n',
  });
  const config = testConfig({ maxFileBytes: 16 * MiB });
  const w = startWorker('indexing/worker', { root, config });
  try {
    const swollen: Array<boolean | undefined> = [];
    for (const [i, path] of ['a.py', 'huge.py'].entries()) {
      const m = await answer(w, i, task(root, path));
      assert.equal(m.outcome?.status, 'indexed', path);
      assert.ok(!m.outcome.suspect, `${path} was parsed to its end`);
      swollen.push(m.swollen);
    }
    assert.deepEqual(
      swollen,
      [undefined, true],
      'a small file leaves the memory as it was; 3 MB of Python does not',
    );
    // the pool replaces such a worker and gives its next files to the new one
    const pool = createFilePool(root, config, 1);
    const outcomes = await Promise.all(
      ['a.py', 'huge.py', 'b.py', 'a.py'].map((p) => pool.run(task(root, p))),
    );
    await pool.close();
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['indexed', 'indexed', 'indexed', 'indexed'],
    );
  } finally {
    await w.terminate();
    removeTree(root);
    if (timeout === undefined) delete process.env.QUARRY_PARSE_TIMEOUT_MS;
    else process.env.QUARRY_PARSE_TIMEOUT_MS = timeout;
  }
});
