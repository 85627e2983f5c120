// Recovery (regression: a truncated .quarry/index.db gave "internal error: database disk image is malformed",
// exit 70, and `quarry reset --yes` failed the same way): a corrupt index is one line that says what to do, on the
// CLI and over HTTP, and reset removes it without opening it
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  truncateSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { acquireWriterLock } from '../src/store/lock.ts';
import { copyPolyglot, makeTree, REPO, removeTree, runCli, runCliAsync, until } from './helpers.ts';

describe('a corrupt index', () => {
  const trees: string[] = [];
  let root: string;
  before(() => {
    root = copyPolyglot(trees);
    const r = runCli(['index', '--quiet'], { cwd: root, env: { QUARRY_EMBED: 'none' } });
    assert.equal(r.code, 0, r.stderr);
  });
  after(() => {
    for (const t of trees) removeTree(t);
  });

  it('is one line with exit 6 on every command that reads it, and reset removes it so that index rebuilds it', () => {
    const db = join(root, '.quarry', 'index.db');
    const size = readFileSync(db).length;
    truncateSync(db, Math.floor(size / 3));
    for (const args of [['search', 'router', '--mode', 'lexical'], ['status'], ['def', 'Router']]) {
      const r = runCli(args, { cwd: root, env: { QUARRY_EMBED: 'none' } });
      assert.equal(r.code, 6, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^quarry: the index is corrupt: run `quarry reset`, then `quarry index`\n$/);
    }
    const reset = runCli(['reset', '--yes'], { cwd: root });
    assert.equal(reset.code, 0, reset.stderr);
    assert.match(reset.stdout, /deleted the index/);
    const again = runCli(['index', '--quiet'], { cwd: root, env: { QUARRY_EMBED: 'none' } });
    assert.equal(again.code, 0, again.stderr);
    const found = runCli(['search', 'router', '--mode', 'lexical', '--files'], { cwd: root });
    assert.equal(found.code, 0, found.stderr);
    assert.match(found.stdout, /Router\.php/);
  });

  it('a file that is no database at all reads the same', () => {
    writeFileSync(
      join(root, '.quarry', 'index.db'),
      'this is not a database, it is a text file '.repeat(200),
    );
    const r = runCli(['search', 'router', '--mode', 'lexical'], { cwd: root });
    assert.equal(r.code, 6, r.stderr);
    assert.match(r.stderr, /the index is corrupt: run `quarry reset`/);
    assert.equal(runCli(['reset', '--yes'], { cwd: root }).code, 0);
  });

  it('an index truncated to 0 bytes is corrupt, not empty (regression: search said "no matches", exit 1)', () => {
    assert.equal(runCli(['index', '--quiet'], { cwd: root, env: { QUARRY_EMBED: 'none' } }).code, 0);
    truncateSync(join(root, '.quarry', 'index.db'), 0);
    for (const args of [['search', 'router', '--mode', 'lexical'], ['grep', 'Router'], ['status']]) {
      const r = runCli(args, { cwd: root, env: { QUARRY_EMBED: 'none' } });
      assert.equal(r.code, 6, `${args.join(' ')}: ${r.stderr}`);
      assert.match(
        r.stderr,
        /^quarry: the index \S+ is empty \(0 bytes\): it was truncated; run `quarry reset`, then `quarry index`\n$/,
      );
    }
    assert.equal(runCli(['reset', '--yes'], { cwd: root }).code, 0);
    assert.equal(runCli(['index', '--quiet'], { cwd: root, env: { QUARRY_EMBED: 'none' } }).code, 0);
    assert.equal(runCli(['search', 'router', '--mode', 'lexical', '--files'], { cwd: root }).code, 0);
  });
});

describe('the writer lock across hosts (regression: a lock written by another host, as every docker run is, was never reclaimed)', () => {
  const trees: string[] = [];
  after(() => {
    for (const t of trees) removeTree(t);
  });

  it('a lock from another host is honoured while its heartbeat runs, named with its host, and reclaimed once it stops', () => {
    const root = copyPolyglot(trees);
    const lock = join(root, '.quarry', 'index.lock');
    mkdirSync(join(root, '.quarry'), { recursive: true });
    writeFileSync(lock, JSON.stringify({ pid: 4242, host: 'container-7f3a', startedAt: Date.now() }));
    const held = runCli(['index', '--quiet'], { cwd: root, env: { QUARRY_EMBED: 'none' } });
    assert.equal(held.code, 4, held.stderr);
    assert.match(
      held.stderr,
      /another quarry \(pid 4242\) is indexing this project: wait for it, or run with --wait \(it runs on container-7f3a; its lock expires 60 s after its heartbeat stops\)/,
    );
    const old = new Date(Date.now() - 10 * 60_000);
    utimesSync(lock, old, old);
    const reclaimed = runCli(['index', '--quiet'], { cwd: root, env: { QUARRY_EMBED: 'none' } });
    assert.equal(reclaimed.code, 0, reclaimed.stderr);
  });

  it('index --wait reports its wait apart from its work (regression: the wait was counted in "indexed in")', async () => {
    const root = copyPolyglot(trees);
    const lock = await acquireWriterLock(join(root, '.quarry', 'index.lock'));
    const run = runCliAsync(['index', '--wait', '--no-embed'], { cwd: root, env: { QUARRY_EMBED: 'none' } });
    // released two seconds after the CLI opened the index (it asks for the lock next), not a fixed time after its
    // spawn: on a loaded machine its start alone took more than three seconds, and it never waited
    const db = join(root, '.quarry', 'index.db');
    await until(async () => existsSync(db), 'the CLI opened the index', 60_000);
    await new Promise((r) => setTimeout(r, 2_000));
    lock.release();
    const r = await run;
    assert.equal(r.code, 0, r.stderr);
    const m = /indexed \S+ in \S+ \(after waiting ([\d.]+)s for another quarry\)/.exec(r.stdout);
    assert.ok(m, r.stdout);
    // the CLI asks for the lock moments after it opens the index: a second or more of the two is wait
    assert.ok(Number(m[1]) >= 1, `waited ${m[1]} s`);
  });

  it('the holder keeps its lock fresh', async () => {
    const dir = makeTree({});
    trees.push(dir);
    const path = join(dir, 'index.lock');
    const lock = await acquireWriterLock(path);
    try {
      const old = new Date(Date.now() - 10 * 60_000);
      utimesSync(path, old, old);
      await new Promise((r) => setTimeout(r, 5_500));
      assert.ok(Date.now() - statSync(path).mtimeMs < 10_000, 'the heartbeat touched the lock');
    } finally {
      lock.release();
    }
  });
});

describe('exits as grep has them', () => {
  const trees: string[] = [];
  after(() => {
    for (const t of trees) removeTree(t);
  });

  it('def and refs exit 1 when nothing is found, 0 when something is (regression: both exited 0)', () => {
    const root = copyPolyglot(trees);
    assert.equal(runCli(['index', '--quiet'], { cwd: root, env: { QUARRY_EMBED: 'none' } }).code, 0);
    for (const cmd of ['def', 'refs']) {
      const none = runCli([cmd, 'NoSuchNameAnywhere'], { cwd: root });
      assert.equal(none.code, 1, `${cmd}: ${none.stderr}`);
      const json = runCli([cmd, 'NoSuchNameAnywhere', '--json'], { cwd: root });
      assert.equal(json.code, 1, `${cmd} --json`);
    }
    assert.equal(runCli(['def', 'Router'], { cwd: root }).code, 0);
  });
});

describe('an install without its packages', () => {
  it('names the missing dependency and the set-up that restores it, in one line (regression: "internal error: Cannot find package")', () => {
    // the built CLI as an install holds it, without node_modules (emptied, or an install that did not finish)
    const home = mkdtempSync(join(tmpdir(), 'quarry-no-modules-'));
    const root = copyPolyglot([]);
    try {
      cpSync(join(REPO, 'bin'), join(home, 'bin'), { recursive: true });
      cpSync(join(REPO, 'dist', 'bundle'), join(home, 'dist', 'bundle'), { recursive: true });
      copyFileSync(join(REPO, 'package.json'), join(home, 'package.json'));
      for (const args of [['status'], ['search', 'router'], ['grep', 'route']]) {
        const r = spawnSync(process.execPath, [join(home, 'bin', 'quarry.js'), ...args], {
          cwd: root,
          encoding: 'utf8',
          env: { ...process.env, QUARRY_EMBED: 'none', NO_COLOR: '1' },
        });
        assert.equal(r.status, 70, `${args[0]}: ${r.stderr}`);
        assert.match(
          r.stderr,
          /^quarry: quarry's dependency [\w@/.-]+ is not installed: run \.\/scripts\/setup\.sh \(or npm install\) in the quarry folder\n$/,
        );
      }
    } finally {
      removeTree(home);
      removeTree(root);
    }
  });
});
