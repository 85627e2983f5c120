import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { QuarryConfig } from '../src/config/config.ts';
import { type FolderMemos, type WalkIgnore, walk } from '../src/workspace/walk.ts';
import { loadFolderMemos, saveFolderMemos } from '../src/workspace/walk-cache.ts';
import { makeTree, removeTree, runCli, testConfig } from './helpers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));

/** A tree with ignore files at three levels, a negation, an ignored folder, a link, a secret and a special name. */
function sample(): string {
  const root = makeTree({
    '.gitignore': '*.log\ngenerated/\n!keep.log\n',
    'a.ts': 'x',
    'debug.log': 'x',
    'keep.log': 'x',
    'generated/out.ts': 'x',
    'pkg/.gitignore': 'local.ts\n',
    'pkg/local.ts': 'x',
    'pkg/main.ts': 'x',
    'pkg/deeper/local.ts': 'x',
    'pkg/deeper/other.ts': 'x',
    'pkg/deeper/.quarryignore': 'other.ts\n',
    'node_modules/dep/index.js': 'x',
    'src/a-b.ts': 'x',
    'src/a/b.ts': 'x',
    '.env': 'SECRET=1',
    'docs/readme.md': 'x',
  });
  symlinkSync(join(root, 'a.ts'), join(root, 'link.ts'));
  trees.push(root);
  return root;
}

/** Everything a walk says: its files with their stats, its skips, and its ignores, in its order. */
function said(root: string, config: QuarryConfig, memo?: FolderMemos): string {
  const ignores: WalkIgnore[] = [];
  const r = walk(root, config, { ...(memo ? { memo } : {}), onIgnore: (i) => ignores.push(i) });
  return JSON.stringify([r.files, r.skipped, ignores]);
}

/** Memos that remember every folder, however recently it changed (the tests' trees are all new). */
function memos(last?: FolderMemos): FolderMemos {
  return {
    last: last?.next ?? new Map(),
    next: new Map(),
    reused: 0,
    read: 0,
    settledBefore: Date.now() + 60_000,
  };
}

describe('folders remembered between walks', () => {
  it('finds what a fresh walk finds, listing no folder again when nothing changed', () => {
    const root = sample();
    const config = testConfig();
    const first = memos();
    assert.equal(said(root, config, first), said(root, config));
    assert.equal(first.reused, 0);
    const second = memos(first);
    assert.equal(said(root, config, second), said(root, config));
    assert.equal(second.read, 0, 'every folder taken as it was');
    assert.equal(second.reused, first.next.size);
    assert.ok(second.reused >= 5, `${second.reused} folders remembered`);
  });

  it('lists again a folder whose entries changed, and sees what changed in a file it holds', () => {
    const root = sample();
    const config = testConfig();
    const first = memos();
    said(root, config, first);
    writeFileSync(join(root, 'pkg', 'deeper', 'new.ts'), 'x');
    rmSync(join(root, 'docs', 'readme.md'));
    writeFileSync(join(root, 'a.ts'), 'a longer text'); // the root's entries are as they were
    const second = memos(first);
    const now = said(root, config, second);
    assert.equal(now, said(root, config));
    assert.match(now, /pkg\/deeper\/new\.ts/);
    assert.doesNotMatch(now, /docs\/readme\.md/);
    assert.match(now, /"path":"a\.ts","size":13/);
    assert.equal(second.read, 2, 'pkg/deeper and docs listed again');
  });

  it('applies an ignore file edited in place to its folder and every folder below it', () => {
    const root = sample();
    const config = testConfig();
    const first = memos();
    said(root, config, first);
    // rewriting a file changes its folder's times not at all: the rules' fingerprint must notice
    writeFileSync(join(root, 'pkg', '.gitignore'), 'main.ts\n');
    writeFileSync(join(root, '.gitignore'), '*.log\n!keep.log\n*.md\n');
    const second = memos(first);
    const now = said(root, config, second);
    assert.equal(now, said(root, config));
    assert.match(now, /"path":"pkg\/deeper\/local\.ts","size"/, 'no longer ignored below pkg/');
    assert.doesNotMatch(now, /"path":"pkg\/main\.ts","size"/);
    assert.doesNotMatch(now, /"path":"docs\/readme\.md","size"/);
    assert.match(now, /"path":"generated\/out\.ts","size"/);
  });

  it('starts afresh when the config or a new ignore file changes the rules', () => {
    const root = sample();
    const first = memos();
    said(root, testConfig(), first);
    const config = testConfig({ ignore: ['*.md'] });
    const second = memos(first);
    assert.equal(said(root, config, second), said(root, config));
    assert.equal(second.reused, 0);
    writeFileSync(join(root, 'src', '.gitignore'), 'a/\n');
    const third = memos(second);
    const now = said(root, config, third);
    assert.equal(now, said(root, config));
    assert.doesNotMatch(now, /src\/a\/b\.ts/);
    assert.equal(third.read, 1, 'only src/ listed again (its rules reach src/a, which is now ignored)');
  });

  it('does not remember a folder changed just before the walk', () => {
    const root = sample();
    const config = testConfig();
    const first = { ...memos(), settledBefore: undefined };
    said(root, config, first);
    assert.equal(first.next.size, 0, 'every folder of a tree made a moment ago is read again next time');
    mkdirSync(join(root, 'late'));
    const second = memos();
    said(root, config, second);
    assert.ok(second.next.has('late'));
  });

  it('keeps the folders in a file, and reads every folder when the file is missing or damaged', () => {
    const root = sample();
    const config = testConfig();
    const file = join(root, 'walk.json');
    const first = memos();
    said(root, config, first);
    saveFolderMemos(file, first);
    const loaded = { ...loadFolderMemos(file), settledBefore: Date.now() + 60_000 };
    assert.equal(said(root, config, loaded), said(root, config));
    assert.equal(loaded.read, 1, 'the root, whose entries now hold walk.json');
    assert.equal(loaded.reused, first.next.size - 1);
    writeFileSync(file, '{"format": 2, "folders": [["", 1]]');
    const damaged = loadFolderMemos(file);
    assert.equal(damaged.last.size, 0);
    assert.equal(said(root, config, damaged), said(root, config));
    assert.equal(loadFolderMemos(join(root, 'none.json')).last.size, 0);
  });

  it('is kept by `quarry index`, and off with walk_cache = false', () => {
    const root = sample();
    const env = { QUARRY_EMBED: 'none' };
    const file = join(root, '.quarry', 'walk.json');
    assert.equal(runCli(['index', root, '--quiet'], { env }).code, 0);
    // the tree was made a moment ago, so its folders are listed again until they settle; the file is there
    assert.ok(existsSync(file));
    rmSync(join(root, '.quarry'), { recursive: true });
    assert.equal(runCli(['index', root, '--quiet'], { env: { ...env, QUARRY_WALK_CACHE: '0' } }).code, 0);
    assert.ok(!existsSync(file));
    assert.ok(existsSync(join(root, '.quarry', 'index.db')));
  });
});
