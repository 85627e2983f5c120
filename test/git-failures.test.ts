// Git failures never hide the working tree (issue 63, item 6): a git command that fails (a lock held by another git
// command, a timeout, a broken repository) is tried again, never taken for "no local changes" or "not tracked",
// never remembered as a verdict, and said in the answer itself until git reads again, on the next call.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { readHistory } from '../src/search/history.ts';
import { indexedMainWorktree } from '../src/workspace/root.ts';
import { walk } from '../src/workspace/walk.ts';
import { CLI, git, makeTree, removeTree, runCli, testConfig } from './helpers.ts';

const TSX = new URL(import.meta.resolve('tsx')).pathname;
const REAL_GIT = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();

/**
 * A `git` that fails the named subcommands (exit 128, as git does on a held `index.lock`) while its flag file exists,
 * and is the real git otherwise: `on()` breaks git, `off()` mends it, `calls()` counts the failures.
 */
function brokenGit(subcommands: string[]) {
  const dir = makeTree({}, 'quarry-fake-git-');
  const flag = join(dir, 'broken');
  const count = join(dir, 'calls');
  const cases = subcommands.join('|');
  writeFileSync(
    join(dir, 'git'),
    `#!/bin/sh
if [ -e '${flag}' ]; then
  for a in "$@"; do
    case "$a" in ${cases}) echo x >> '${count}'; echo "fatal: Unable to create '.git/index.lock': File exists." >&2; exit 128;; esac
  done
fi
exec '${REAL_GIT}' "$@"
`,
    { mode: 0o755 },
  );
  return {
    PATH: `${dir}:${process.env.PATH}`,
    on: () => writeFileSync(flag, ''),
    off: () => rmSync(flag, { force: true }),
    calls: () => (existsSync(count) ? execFileSync('wc', ['-l', count], { encoding: 'utf8' }).trim() : '0'),
    remove: () => removeTree(dir),
  };
}

/** Runs `f` with the fake git first on this process's PATH (spawnSync and execFile inherit it). */
async function withPath<T>(path: string, f: () => T | Promise<T>): Promise<T> {
  const real = process.env.PATH;
  process.env.PATH = path;
  try {
    return await f();
  } finally {
    process.env.PATH = real;
  }
}

describe('a linked worktree served while git diff fails', () => {
  const env = { QUARRY_EMBED: 'static' };
  let main: string;
  let wt: string;
  const broken = brokenGit(['diff']);
  before(() => {
    main = makeTree({
      'src/ledger.ts': 'export function postEntry(amount: number) {\n  return amount * 2;\n}\n',
      'src/audit.ts': 'export function auditTrail() {\n  return "trail";\n}\n',
    });
    git(main, 'init', '-q');
    git(main, 'add', '-A');
    git(main, 'commit', '-qm', 'one');
    assert.equal(runCli(['index', '--quiet'], { cwd: main, env }).code, 0);
    wt = `${main}-wt`;
    git(main, 'worktree', 'add', '-q', wt, 'HEAD');
    // this worktree's own version of a file
    writeFileSync(
      join(wt, 'src/ledger.ts'),
      'export function postEntry(amount: number) {\n  return reconcileLedger(amount);\n}\n',
    );
  });
  after(() => {
    broken.off();
    broken.remove();
    removeTree(wt);
    removeTree(main);
  });

  it('finds the main tree without running git (rev-parse failing does not make the worktree a project of its own)', async () => {
    const revParse = brokenGit(['rev-parse']);
    try {
      revParse.on();
      assert.equal(await withPath(revParse.PATH, () => indexedMainWorktree(wt)), main);
    } finally {
      revParse.remove();
    }
  });

  it('search --json carries `stale` while git fails, and searches this worktree, not the main tree', () => {
    broken.on();
    try {
      const r = runCli(['search', '--json', 'reconcileLedger'], {
        cwd: wt,
        env: { ...env, PATH: broken.PATH },
      });
      assert.equal(r.code, 0, r.stderr);
      const res = JSON.parse(r.stdout) as { stale?: string; results: Array<{ path: string }> };
      assert.match(res.stale ?? '', /local changes not (applied|read).*git diff --name-only failed/);
      assert.equal(res.results[0]?.path, 'src/ledger.ts', 'the worktree’s own version is searched');
    } finally {
      broken.off();
    }
  });

  it('quarry mcp opened while git fails serves the worktree, says so in its answers, and recovers on the next call', async () => {
    broken.on();
    const client = new Client({ name: 'quarry-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['--import', TSX, CLI, '--root', wt, 'mcp'],
        env: { ...process.env, ...env, PATH: broken.PATH, QUARRY_SHARED_CACHE: 'off' } as Record<
          string,
          string
        >,
        stderr: 'pipe',
      }),
    );
    const call = async (name: string, args: Record<string, unknown>) =>
      ((await client.callTool({ name, arguments: args })) as { content: Array<{ text: string }> }).content[0]!
        .text;
    try {
      // the worktree is what is served: its root, its own file version, and the failure said in the answers
      const status = await call('index_status', {});
      assert.match(status, new RegExp(`^root: ${wt}$`, 'm'));
      assert.match(status, /overlay\.stale: .*git diff --name-only failed/);
      assert.match(await call('read_file', { path: 'src/ledger.ts' }), /reconcileLedger/);
      const during = await call('search_code', { query: 'reconcileLedger' });
      assert.match(during, /^note: local changes not (applied|read).*git diff --name-only failed/);
      assert.match(during, /src\/ledger\.ts/);
      // git works again: the next call reads the worktree's changes, a file added meanwhile is found, no note
      broken.off();
      writeFileSync(join(wt, 'src/afterwards.ts'), 'export function afterwardsFeature() {\n  return 3;\n}\n');
      const later = await call('search_code', { query: 'afterwardsFeature' });
      assert.doesNotMatch(later, /^note:/m);
      assert.match(later, /src\/afterwards\.ts/);
      assert.doesNotMatch(await call('index_status', {}), /overlay\.stale/);
      assert.match(await call('read_file', { path: 'src/ledger.ts' }), /reconcileLedger/);
    } finally {
      broken.off();
      await client.close();
    }
    assert.ok(!existsSync(join(wt, '.quarry', 'index.db')), 'no index of its own');
  });
});

describe('git ls-files failing while a build folder holds tracked source', () => {
  const broken = brokenGit(['ls-files']);
  after(() => broken.remove());

  it('keeps the last verdict (the tracked build/ source stays indexed), warns, and never remembers the failure', async () => {
    const root = makeTree({
      'build/generate.js': 'module.exports = function generateTables() { return 1; };\n',
      'lib/a.js': 'const a = 1;\n',
    });
    try {
      git(root, 'init', '-q');
      git(root, 'add', '-A');
      git(root, 'commit', '-qm', 'init');
      assert.equal(runCli(['index', '--no-embed', '--quiet'], { cwd: root }).code, 0);
      broken.on();
      const r = runCli(['index', '--no-embed'], { cwd: root, env: { PATH: broken.PATH } });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /0 deleted/, 'the tracked build/ source is not dropped');
      assert.match(
        r.stderr,
        /what git tracks in build\/ could not be read \(git ls-files -z failed: fatal: .*\): walked as last known/,
      );
      const found = JSON.parse(
        runCli(['search', '--json', 'generateTables'], { cwd: root, env: { PATH: broken.PATH } }).stdout,
      ) as { results: Array<{ path: string }> };
      assert.equal(found.results[0]?.path, 'build/generate.js');
      broken.off();
    } finally {
      broken.off();
      removeTree(root);
    }
  });

  it('a walk right after git recovers asks git again (a failure is not cached)', async () => {
    const root = makeTree({ 'build/gen.js': 'module.exports = 1;\n', 'lib/a.js': 'const a = 1;\n' });
    try {
      git(root, 'init', '-q');
      git(root, 'add', '-A');
      git(root, 'commit', '-qm', 'init');
      const paths = () => walk(root, testConfig()).files.map((f) => f.path);
      const notices: string[] = [];
      broken.on();
      // no verdict known yet: the defaults' rule stands, and the walk says why
      const during = await withPath(broken.PATH, () =>
        walk(root, testConfig(), { onNotice: (m) => notices.push(m) }).files.map((f) => f.path),
      );
      assert.deepEqual(during, ['lib/a.js']);
      broken.off();
      assert.deepEqual(await withPath(broken.PATH, paths), ['build/gen.js', 'lib/a.js']);
      assert.match(notices.join('\n'), /git ls-files -z failed: .*no earlier answer is known/);
      // and now that a verdict is known, a failure keeps it
      broken.on();
      assert.deepEqual(await withPath(broken.PATH, paths), ['build/gen.js', 'lib/a.js']);
    } finally {
      broken.off();
      removeTree(root);
    }
  });
});

describe('git log failing while history priors are read', () => {
  it('is asked again on the next search, not remembered as "no history"', async () => {
    const broken = brokenGit(['log']);
    const root = makeTree({ 'a.ts': 'export const a = 1;\n' });
    try {
      git(root, 'init', '-q');
      git(root, 'add', '-A');
      git(root, 'commit', '-qm', 'init');
      broken.on();
      assert.equal(await withPath(broken.PATH, () => readHistory(root)), undefined);
      broken.off();
      const history = await withPath(broken.PATH, () => readHistory(root));
      assert.equal(history?.commits, 1);
    } finally {
      broken.off();
      broken.remove();
      removeTree(root);
    }
  });
});
