import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { refusedFlags, workerExecArgv } from '../src/workers.ts';
import { runCli } from './helpers.ts';

test("reads the flags a worker refuses from Node's own error, and leaves other errors alone", () => {
  let caught: unknown;
  try {
    new Worker('', { eval: true, execArgv: ['--max-old-space-size=512', '--liftoff-only'] }).terminate();
  } catch (err) {
    caught = err;
  }
  assert.deepEqual(refusedFlags(caught), ['--max-old-space-size=512', '--liftoff-only']);
  assert.equal(refusedFlags(new Error('flags: --x')), undefined);
  assert.equal(refusedFlags(undefined), undefined);
});

test('a worker inherits the flags it takes, less --input-type and those refused, with their values', () => {
  const argv = [
    '--input-type=module',
    '--max-old-space-size',
    '512',
    '--import',
    'tsx',
    '--title=q',
    '--no-warnings',
  ];
  assert.deepEqual(workerExecArgv(argv, ['--max-old-space-size', '--title=q']), [
    '--import',
    'tsx',
    '--no-warnings',
  ]);
  assert.deepEqual(workerExecArgv(['--input-type', 'module', '--enable-source-maps'], []), [
    '--enable-source-maps',
  ]);
});

test('indexing runs under V8 flags that worker threads refuse (node --max-old-space-size=… quarry index)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'quarry-v8flags-'));
  try {
    // more files than one thread parses alone, so the parse workers and the writer thread start
    for (let i = 0; i < 40; i++)
      writeFileSync(join(dir, `m${i}.py`), `def handler_${i}(x):\n    return x + ${i}\n`);
    const r = runCli(['index', dir, '--json'], {
      nodeArgs: ['--max-old-space-size=2048', '--stack-size=900'],
      env: { QUARRY_WORKERS: '2', QUARRY_WRITE_BEHIND_FILES: '10' },
    });
    assert.equal(r.code, 0, r.stderr);
    const found = runCli(['search', 'handler_17', '--json'], { cwd: dir });
    assert.equal(found.code, 0, found.stderr);
    assert.match(found.stdout, /m17\.py/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
