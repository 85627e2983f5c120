import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { trackedByDefaults, type WalkIgnore, walk } from '../src/workspace/walk.ts';
import { makeTree, removeTree, runCli, testConfig } from './helpers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));
function tree(files: Record<string, string | Buffer>): string {
  const t = makeTree(files);
  trees.push(t);
  return t;
}
const paths = (root: string, config = testConfig()) => walk(root, config).files.map((f) => f.path);

describe('walking the tree', () => {
  it('honours .gitignore at every level, with negations', () => {
    const root = tree({
      '.gitignore': '*.log\ngenerated/\n!keep.log\n',
      'a.ts': 'x',
      'debug.log': 'x',
      'keep.log': 'x',
      'generated/out.ts': 'x',
      'pkg/.gitignore': 'local.ts\n!debug2.log\n',
      'pkg/local.ts': 'x',
      'pkg/main.ts': 'x',
      'pkg/debug2.log': 'x',
      'pkg/deeper/local.ts': 'x',
      'other/local.ts': 'x',
    });
    assert.deepEqual(
      paths(root).sort(),
      [
        '.gitignore',
        'a.ts',
        'keep.log',
        'other/local.ts',
        'pkg/.gitignore',
        'pkg/debug2.log',
        'pkg/main.ts',
      ].sort(),
    );
  });

  it('honours .quarryignore and .git/info/exclude, and re-includes defaults on request', () => {
    const root = tree({
      '.git/info/exclude': 'scratch.ts\n',
      '.git/HEAD': 'ref: refs/heads/main\n',
      '.quarryignore': 'docs/\n!vendor/\n',
      'scratch.ts': 'x',
      'main.ts': 'x',
      'docs/guide.md': 'x',
      'vendor/lib.go': 'x',
      'node_modules/dep/index.js': 'x',
    });
    assert.deepEqual(paths(root).sort(), ['.quarryignore', 'main.ts', 'vendor/lib.go']);
  });

  it('leaves out dependencies, build outputs, lock files, bundles, media and archives by default', () => {
    const root = tree({
      'src/app.py': 'x',
      'node_modules/x/index.js': 'x',
      'dist/bundle.js': 'x',
      'target/debug/a.rs': 'x',
      '__pycache__/a.pyc': 'x',
      'package-lock.json': '{}',
      'Cargo.lock': 'x',
      'app.min.js': 'x',
      'logo.png': 'x',
      'release.tar.gz': 'x',
      '.venv/lib/site.py': 'x',
    });
    assert.deepEqual(paths(root), ['src/app.py']);
  });

  it('never indexes files that look like secrets unless asked', () => {
    const root = tree({
      '.env': 'TOKEN=1',
      '.env.production': 'TOKEN=1',
      '.env.example': 'TOKEN=',
      'deploy/server.pem': 'x',
      id_rsa: 'x',
      'id_rsa.pub': 'x',
      'credentials.json': '{}',
      'app.ts': 'x',
    });
    const result = walk(root, testConfig());
    assert.deepEqual(result.files.map((f) => f.path).sort(), ['.env.example', 'app.ts', 'id_rsa.pub']);
    assert.equal(result.skipped.filter((s) => s.reason === 'secret').length, 5);
    assert.equal(paths(root, testConfig({ includeSecrets: true })).length, 8);
  });

  it('names a file whose name is not valid UTF-8 instead of dropping it (regression: in no count at all)', () => {
    const root = makeTree({ 'ok.ts': 'export const ok = 1;\n' });
    trees.push(root);
    writeFileSync(
      Buffer.concat([Buffer.from(`${root}/caf`), Buffer.from([0xe9]), Buffer.from('.ts')]),
      'x\n',
    );
    const r = walk(root, testConfig());
    assert.deepEqual(
      r.files.map((f) => f.path),
      ['ok.ts'],
    );
    assert.deepEqual(
      r.skipped.map((s) => [s.path, s.reason]),
      [['caf\uFFFD.ts', 'bad-name']],
    );
  });

  it('leaves out a hard link to a file outside the root, named, unless asked (regression: indexed and served)', () => {
    const outside = makeTree({ passwd: 'root:x:0:0:root:/root:/bin/bash\n' });
    const root = makeTree({ 'ok.ts': 'export const ok = 1;\n' });
    trees.push(outside, root);
    linkSync(join(outside, 'passwd'), join(root, 'users.txt'));
    const r = walk(root, testConfig());
    assert.deepEqual(
      r.files.map((f) => f.path),
      ['ok.ts'],
    );
    assert.deepEqual(
      r.skipped.map((s) => [s.path, s.reason]),
      [['users.txt', 'hard-link']],
    );
    const asked = walk(root, testConfig({ includeHardLinks: true }));
    assert.deepEqual(
      asked.files.map((f) => f.path),
      ['ok.ts', 'users.txt'],
    );
  });

  it('skips files over the size limit', () => {
    const root = tree({ 'big.ts': 'x'.repeat(2000), 'small.ts': 'x' });
    const result = walk(root, testConfig({ maxFileBytes: 1000 }));
    assert.deepEqual(
      result.files.map((f) => f.path),
      ['small.ts'],
    );
    assert.deepEqual(result.skipped, [{ path: 'big.ts', reason: 'too-large', detail: '2000 bytes' }]);
  });

  it('does not follow symlinks: no loops, nothing outside the root', () => {
    const outside = tree({ 'secret-place/a.ts': 'x' });
    const root = tree({ 'src/a.ts': 'x' });
    symlinkSync(root, join(root, 'src', 'loop'));
    symlinkSync(join(outside, 'secret-place'), join(root, 'escape'));
    symlinkSync(join(root, 'src', 'a.ts'), join(root, 'alias.ts'));
    const result = walk(root, testConfig());
    assert.deepEqual(
      result.files.map((f) => f.path),
      ['src/a.ts'],
    );
    assert.deepEqual(
      result.skipped.map((s) => s.reason),
      ['symlink', 'symlink', 'symlink'],
    );
  });

  it('handles an empty directory and a folder that is not a git repository', () => {
    const root = tree({});
    mkdirSync(join(root, 'empty'));
    assert.deepEqual(paths(root), []);
    writeFileSync(join(root, 'one.py'), 'print(1)\n');
    assert.deepEqual(paths(root), ['one.py']);
  });
});

describe('a walk under some paths (a grep of one folder)', () => {
  const trees: string[] = [];
  after(() => trees.forEach(removeTree));

  it("finds what the whole walk finds under them, ancestors' ignore files applied, and reads no other folder", () => {
    const root = makeTree({
      '.gitignore': '*.log\n',
      'a/.gitignore': 'gen/\n',
      'a/top.ts': 'x',
      'a/b/one.ts': 'x',
      'a/b/run.log': 'x',
      'a/b/gen/made.ts': 'x',
      'a/b/c/deep.ts': 'x',
      'a/bb/other.ts': 'x',
      'a/b.ts': 'x',
      'z/far.ts': 'x',
      'solo.ts': 'x',
    });
    trees.push(root);
    const all = paths(root);
    for (const under of [
      ['a/b'],
      ['a/b/'],
      ['a/b', 'solo.ts'],
      ['a/b/c/deep.ts'],
      ['a'],
      ['nope'],
      ['a/b.ts'],
    ]) {
      const seen: string[] = [];
      const got = walk(root, testConfig(), { under, onIgnore: (i) => seen.push(i.path) })
        .files.map((f) => f.path)
        .sort();
      const want = all.filter((p) =>
        under.some((u) => p === u || p.startsWith(u.endsWith('/') ? u : `${u}/`)),
      );
      assert.deepEqual(got, want.sort(), under.join(' '));
      // what it reports ignoring is under the paths too (a/b/gen by a/.gitignore, run.log by the root's)
      assert.ok(
        seen.every((p) => under.some((u) => p === u || p.startsWith(u.endsWith('/') ? u : `${u}/`))),
        seen.join(' '),
      );
    }
    // the folders read: the root and a (for the way down and their ignore files), a/b and a/b/c; not z, a/bb
    const memo = { last: new Map(), next: new Map(), reused: 0, read: 0 };
    assert.deepEqual(
      walk(root, testConfig(), { under: ['a/b'], memo })
        .files.map((f) => f.path)
        .sort(),
      ['a/b/c/deep.ts', 'a/b/one.ts'],
    );
    assert.equal(memo.read, 4);
  });
});

describe('defaults that show their work (issue: build/ held tracked source and was skipped without a word)', () => {
  const git = (root: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', ...args], { cwd: root });
  it('walks a build/ folder that holds source git tracks; skips one git ignores or does not track', () => {
    const root = makeTree({
      'build/generate.js': 'module.exports = () => 1;\n',
      'build/node_modules/dep/index.js': 'x\n',
      'out/report.txt': 'generated\n',
      'target/debug/app.rs': 'fn main() {}\n',
      'lib/a.js': 'const a = 1;\n',
      'vendor/pkg/v.go': 'package v\n',
      '.gitignore': 'target/\n',
    });
    try {
      git(root, 'init', '-q');
      git(root, 'add', 'build/generate.js', 'lib/a.js', 'vendor', '.gitignore', 'out');
      git(root, 'commit', '-qm', 'init');
      // build/ holds tracked source: walked (its node_modules still skipped); out/ holds only tracked text, not
      // source; target/ is git-ignored; vendor/ is skipped whatever git tracks
      assert.deepEqual(paths(root), ['.gitignore', 'build/generate.js', 'lib/a.js']);
      const ignored: WalkIgnore[] = [];
      walk(root, testConfig(), { onIgnore: (i) => ignored.push(i) });
      assert.deepEqual([...trackedByDefaults(root, ignored)].sort(), [
        ['out', 1],
        ['vendor', 1],
      ]);
      // and status names them, with how to bring one back
      assert.equal(runCli(['index', '--no-embed', '--quiet'], { cwd: root }).code, 0);
      const status = runCli(['status'], { cwd: root }).stdout;
      assert.match(
        status,
        /quarry's defaults left out 2 files git tracks: out\/ \(1\), vendor\/ \(1\) \(a line `!out\/` in \.quarryignore brings a folder back\)/,
      );
      assert.match(
        runCli(['files', '--ignored'], { cwd: root }).stdout,
        /vendor\/ +by quarry's defaults \(1 file git tracks\)/,
      );
    } finally {
      removeTree(root);
    }
  });
});
