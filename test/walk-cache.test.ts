import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { QuarryConfig } from '../src/config/config.ts';
import { treeDelta } from '../src/workspace/delta.ts';
import { gitCleanStats, parseIndex } from '../src/workspace/git-index.ts';
import { folderMemoFile, loadFolderMemos, saveFolderMemos } from '../src/workspace/ignore/index.ts';
import { gitTracked } from '../src/workspace/tracked.ts';
import { type FolderMemos, type WalkIgnore, walk } from '../src/workspace/walk.ts';
import { git, indexLexically, makeTree, openLexical, removeTree, runCli, testConfig } from './helpers.ts';

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
    // ignored by .gitignore, re-included by the .quarryignore above it: walked with the .gitignore's say overridden
    '.quarryignore': '!vendor/\n',
    'vendor/lib.ts': 'x',
    'vendor/inner/deep.ts': 'x',
    'odd/a:b,c.ts': 'x',
    'odd/1,2:x': 'x',
  });
  writeFileSync(join(root, '.gitignore'), '*.log\ngenerated/\n!keep.log\nvendor/\n');
  symlinkSync(join(root, 'a.ts'), join(root, 'link.ts'));
  execFileSync('mkfifo', [join(root, 'odd', 'pipe')]);
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
    const walked = said(root, config, second);
    for (const p of ['vendor/lib.ts', 'vendor/inner/deep.ts', 'odd/a:b,c.ts', 'odd/1,2:x'])
      assert.ok(walked.includes(`"path":"${p}","size"`), p);
    assert.match(walked, /"path":"odd\/pipe","reason":"special"/);
    // what the file keeps decodes to the same decisions
    const file = join(root, 'kept.json');
    saveFolderMemos(file, first);
    const again = loadFolderMemos(file);
    assert.equal(again.last.size, first.next.size);
    for (const [path, m] of first.next) assert.deepEqual(again.last.get(path)?.entries, m.entries, path);
  });

  it('sees an ignore file moved to another folder with the same text', () => {
    const root = sample();
    writeFileSync(join(root, 'src', '.gitignore'), '/a/b.ts\n');
    const config = testConfig();
    const first = memos();
    said(root, config, first);
    assert.doesNotMatch(said(root, config, memos(first)), /"path":"src\/a\/b\.ts","size"/);
    // src/a/.gitignore holds what src/.gitignore held: src/a itself is listed again, but src/a's folders are not
    renameSync(join(root, 'src', '.gitignore'), join(root, 'src', 'a', '.gitignore'));
    const second = memos(first);
    const now = said(root, config, second);
    assert.equal(now, said(root, config));
    assert.match(now, /"path":"src\/a\/b\.ts","size"/, 'the anchored rule no longer reaches src/a/b.ts');
  });

  it('lists a folder again when what is remembered of it is damaged, and never leaves the root', () => {
    const root = sample();
    const config = testConfig();
    const plain = said(root, config);
    const first = memos();
    said(root, config, first);
    const file = join(root, '.quarry-walk.json');
    saveFolderMemos(file, first);
    const data = JSON.parse(readFileSync(file, 'utf8')) as { folders: unknown[][] };
    const damage: Array<[column: number, value: unknown]> = [
      [4, 'f../../etc/passwd'],
      [4, 'q-unknown'],
      [4, 'd7,8:pkg'],
      [4, 'i099:x'],
      [4, 'sZx'],
      [4, 12],
      [3, ['../../etc/passwd']],
      [3, null],
      [1, null],
      [1, 'x'],
      [1, [1, 2]],
    ];
    for (const [column, value] of damage) {
      const copy = structuredClone(data);
      for (const row of copy.folders) row[column] = value;
      writeFileSync(file, JSON.stringify(copy));
      const loaded = { ...loadFolderMemos(file), settledBefore: Date.now() + 60_000 };
      assert.equal(said(root, config, loaded).replace(/\{"path":"\.quarry-walk\.json"[^}]*\},?/, ''), plain);
      assert.equal(loaded.reused, 0, JSON.stringify(value));
    }
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

  it('remembers a folder that holds a build folder outside git, and decides it again once git tracks it', () => {
    const root = makeTree({ 'build/gen.ts': 'x', 'src/a.ts': 'x' });
    trees.push(root);
    const config = testConfig();
    const first = memos();
    said(root, config, first);
    const second = memos(first);
    assert.doesNotMatch(said(root, config, second), /build\/gen\.ts","size"/);
    assert.equal(second.read, 0, 'the root too: nothing but a git checkout could walk its build/');
    git(root, 'init', '-q');
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'one');
    // (what git tracks is believed for 10 s in a process: this one still takes build/ for untracked)
    const third = memos(second);
    assert.equal(said(root, config, third), said(root, config));
    assert.ok(third.read >= 1, 'the root read again');
    assert.ok(!third.next.has(''), 'and no longer remembered: what git tracks in build/ may change');
  });

  it('is kept by `quarry index`, and off with walk_cache = false', async () => {
    const root = sample();
    const env = { QUARRY_EMBED: 'none' };
    const file = join(root, '.quarry', 'walk.json');
    // a folder changed in the 2 s before a walk is not remembered: let the new tree settle
    await new Promise((done) => setTimeout(done, 2_200));
    assert.equal(runCli(['index', root, '--quiet'], { env }).code, 0);
    const kept = loadFolderMemos(file);
    assert.ok(kept.last.has('pkg/deeper') && kept.last.has('vendor/inner'), [...kept.last.keys()].join(' '));
    assert.ok(!kept.last.has(''), 'the root, which .quarry/ was just made in, is listed again next time');
    rmSync(join(root, '.quarry'), { recursive: true });
    assert.equal(runCli(['index', root, '--quiet'], { env: { ...env, QUARRY_WALK_CACHE: '0' } }).code, 0);
    assert.ok(!existsSync(file));
    assert.ok(existsSync(join(root, '.quarry', 'index.db')));
  });
});

describe("git's record of a tracked file stands for its stat", () => {
  const indexVersion = (root: string) => readFileSync(join(root, '.git', 'index')).readUInt32BE(4);
  /** What parseIndex reads of the repository's index, each record against the file's own stat. */
  function records(root: string): string[] {
    const read = parseIndex(readFileSync(join(root, '.git', 'index')))?.records;
    assert.ok(read, 'the index is read');
    for (const path of read.at.keys()) {
      const st = lstatSync(join(root, path));
      assert.deepEqual(read.get(path), { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs }, path);
    }
    return [...read.at.keys()].sort();
  }

  it('reads each index version, leaving out the entries git does not stat', () => {
    const root = makeTree({
      'a.ts': 'x',
      'src/b.ts': 'yy',
      'src/deep/c.ts': 'zzz',
      'assumed.ts': 'a',
      'skipped.ts': 's',
      'ünïcode/naïve.ts': 'u',
    });
    trees.push(root);
    symlinkSync('a.ts', join(root, 'link.ts'));
    git(root, 'init', '-q');
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'one');
    git(root, 'update-index', '--index-version', '2');
    assert.equal(indexVersion(root), 2);
    const all = ['a.ts', 'assumed.ts', 'skipped.ts', 'src/b.ts', 'src/deep/c.ts', 'ünïcode/naïve.ts'];
    assert.deepEqual(records(root), all, 'the link is no regular file');
    // assumed unchanged, skip-worktree and intent-to-add entries: git does not stat them (the last two need v3)
    git(root, 'update-index', '--assume-unchanged', 'assumed.ts');
    git(root, 'update-index', '--skip-worktree', 'skipped.ts');
    writeFileSync(join(root, 'later.ts'), 'l');
    git(root, 'add', '-N', 'later.ts');
    assert.equal(indexVersion(root), 3);
    const stated = ['a.ts', 'src/b.ts', 'src/deep/c.ts', 'ünïcode/naïve.ts'];
    assert.deepEqual(records(root), stated);
    git(root, 'update-index', '--index-version', '4');
    assert.equal(indexVersion(root), 4);
    assert.deepEqual(records(root), stated, 'paths cut by their prefixes read back whole');
    assert.equal(parseIndex(Buffer.from('DIRC\0\0\0\x05\0\0\0\0')), undefined, 'an unknown version');
    assert.equal(
      parseIndex(readFileSync(join(root, '.git', 'index')).subarray(0, 100)),
      undefined,
      'cut off',
    );
  });

  it('leaves out each tracked file whose stat is not what the index records', async () => {
    const root = makeTree({ 'a.ts': 'x', 'src/b.ts': 'yy', 'src/deep/c.ts': 'zzz', 'd.ts': 'd' });
    trees.push(root);
    git(root, 'init', '-q');
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'one');
    assert.deepEqual([...((await gitCleanStats(root))?.at.keys() ?? [])].sort(), [
      'a.ts',
      'd.ts',
      'src/b.ts',
      'src/deep/c.ts',
    ]);
    writeFileSync(join(root, 'src', 'b.ts'), 'zz'); // the same size
    rmSync(join(root, 'a.ts'));
    utimesSync(join(root, 'src', 'deep', 'c.ts'), new Date(), new Date(Date.now() - 60_000)); // only touched
    assert.deepEqual([...((await gitCleanStats(root))?.at.keys() ?? [])], ['d.ts']);
    // what git tracks, read from the index on the way, answers as `git ls-files -- <folder>` does
    for (const dir of ['src', 'src/deep', 'src/de', 'd.ts'])
      assert.deepEqual(
        gitTracked(root, dir),
        { files: git(root, 'ls-files', '-z', '--', dir).split('\0').filter(Boolean) },
        dir,
      );
    assert.equal(await gitCleanStats(join(root, 'src')), undefined, 'no checkout has its top there');
  });

  it('gives the same delta as a stat of every file, through edits, additions, deletions, renames and links', async () => {
    const files: Record<string, string> = { '.gitignore': 'out/\n', 'out/gen.ts': 'export const gen = 1;\n' };
    for (let i = 0; i < 24; i++) files[`src/m${i % 4}/f${i}.ts`] = `export const v${i} = ${i};\n`;
    files['docs/guide.md'] = '# guide\n';
    // a build folder the defaults leave out, walked because git tracks source in it
    files['build/tool.ts'] = 'export const tool = 1;\n';
    files['top.ts'] = 'export const top = 1;\n';
    const root = makeTree(files);
    trees.push(root);
    git(root, 'init', '-q');
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'one');
    // what changed in the 2 s before a walk is not taken from git's record: let the new tree settle
    await new Promise((done) => setTimeout(done, 2_200));
    await indexLexically(root);
    const project = await openLexical(root);
    const outside = `${root}-outside-link`;
    try {
      const indexed = await project.store.listFiles();
      const memoFile = folderMemoFile(root, project.config);
      const both = async () => {
        const git = await gitCleanStats(root);
        assert.ok(git, 'git answers');
        const byGit = treeDelta(root, project.config, indexed, { ...(memoFile ? { memoFile } : {}), git });
        const byStat = treeDelta(root, project.config, indexed);
        const shown = (d: typeof byGit) => JSON.stringify([[...d.changed].sort(), [...d.gone].sort()]);
        assert.equal(shown(byGit), shown(byStat));
        assert.equal(byStat.recorded, 0);
        return byGit;
      };
      const first = await both();
      assert.equal(first.changed.size + first.gone.size, 0);
      assert.equal(first.recorded, 28, 'every indexed file taken from git');
      // an edit of the same size in a folder whose times do not change, and a file only touched
      writeFileSync(join(root, 'src/m1/f5.ts'), 'export const v5 = 9;\n');
      utimesSync(join(root, 'src/m2/f6.ts'), new Date(), new Date(Date.now() + 5_000));
      // a file added in a new nested folder, a deletion, a rename, an ignore rule that now leaves docs/ out
      mkdirSync(join(root, 'src/m3/deeper/still'), { recursive: true });
      writeFileSync(join(root, 'src/m3/deeper/still/new.ts'), 'export const n = 1;\n');
      rmSync(join(root, 'top.ts'));
      renameSync(join(root, 'src/m0/f0.ts'), join(root, 'src/m0/g0.ts'));
      writeFileSync(join(root, '.gitignore'), 'out/\ndocs/\n');
      let now = await both();
      assert.deepEqual([...now.changed.keys()].sort(), [
        '.gitignore',
        'src/m0/g0.ts',
        'src/m1/f5.ts',
        'src/m2/f6.ts',
        'src/m3/deeper/still/new.ts',
      ]);
      assert.deepEqual([...now.gone].sort(), ['docs/guide.md', 'src/m0/f0.ts', 'top.ts']);
      assert.ok(now.recorded >= 20, `${now.recorded} taken from git`);
      // git's index brought up to date with the edits: its records are no longer what the index holds
      git(root, 'add', '-A');
      now = await both();
      assert.ok(now.changed.has('src/m1/f5.ts') && now.changed.has('src/m2/f6.ts'));
      // a second name outside the tree for a tracked file: a stat leaves it out, and so does git's record
      linkSync(join(root, 'src/m3/f7.ts'), outside);
      assert.ok((await both()).gone.has('src/m3/f7.ts'), 'a hard link is left out');
      git(root, 'update-index', '--refresh');
      assert.ok((await both()).gone.has('src/m3/f7.ts'), 'after git recorded its new status too');
      // and once a later walk, which kept its folders, saw every file after the link was made
      await new Promise((done) => setTimeout(done, 2_200));
      writeFileSync(join(root, 'src/m3/later.ts'), 'export const later = 1;\n');
      await both();
      const kept = loadFolderMemos(memoFile);
      assert.ok((kept.lastChecked ?? 0) > lstatSync(outside).ctimeMs, 'the kept check is after the link');
      assert.deepEqual([...(kept.lastStatSkips ?? [])], ['src/m3/f7.ts']);
      assert.ok((await both()).gone.has('src/m3/f7.ts'), 'still left out');
    } finally {
      rmSync(outside, { force: true });
      await project.close();
    }
  });
});
