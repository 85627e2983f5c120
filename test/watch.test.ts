import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { indexProject, type LocalProject as Project } from '../src/project/local/index.ts';
import { announceWatcher, watcherElsewhere } from '../src/store/lock.ts';
import { type AutoSync, startAutoSync, watchFailure } from '../src/watch/autosync.ts';
import { makeTree, openLexical, removeTree, until } from './helpers.ts';

const git = (root: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', ...args], {
    cwd: root,
    encoding: 'utf8',
  });

describe('auto-sync: the watcher keeps the index fresh', () => {
  let root: string;
  let project: Project;
  let sync: AutoSync;
  const paths = async () => (await project.store.listFiles()).map((f) => f.path).sort();
  const has = async (p: string) => (await paths()).includes(p);
  before(async () => {
    root = makeTree({
      '.gitignore': 'build/\n*.log\n',
      'src/main.py': 'def main():\n    return 1\n',
      'src/util.py': 'def helper():\n    return 2\n',
    });
    git(root, 'init', '-q', '-b', 'main');
    git(root, 'add', '.');
    git(root, 'commit', '-qm', 'init');
    project = await openLexical(root);
    await indexProject(project);
    sync = await startAutoSync(project, { sweepMs: 0 });
  });
  after(async () => {
    await sync.stop();
    await project.close();
    removeTree(root);
  });

  it('says that it watches, for searches in other processes, while it runs (.quarry/watchers/<pid>)', () => {
    const dir = join(root, '.quarry');
    assert.ok(existsSync(join(dir, 'watchers', String(process.pid))));
    assert.equal(watcherElsewhere(dir), false, 'this process is not elsewhere');
    // what a stop does with the note: it goes
    const scratch = join(root, 'build', 'index-dir');
    const stop = announceWatcher(scratch);
    assert.ok(existsSync(join(scratch, 'watchers', String(process.pid))));
    stop();
    assert.equal(existsSync(join(scratch, 'watchers', String(process.pid))), false);
  });

  it(
    'leaves no child process behind (issue 65: `quarry serve` kept a zombie sh, the watcher asking for watchman)',
    {
      skip: process.platform !== 'linux' && 'reads /proc',
    },
    () => {
      const zombies = readdirSync('/proc')
        .filter((d) => /^\d+$/.test(d))
        .map((d) => {
          try {
            return readFileSync(`/proc/${d}/stat`, 'utf8');
          } catch {
            return ''; // gone meanwhile
          }
        })
        // "pid (comm) state ppid …"
        .map((stat) => /^\d+ \((.*)\) (\S) (\d+) /.exec(stat))
        .filter((m) => m && m[2] === 'Z' && Number(m[3]) === process.pid)
        .map((m) => m![1]);
      assert.deepEqual(zombies, []);
    },
  );

  it('indexes a created file, a modified one, and drops a deleted one', async () => {
    writeFileSync(join(root, 'src/new_feature.py'), 'def brand_new_feature():\n    return 3\n');
    await until(() => has('src/new_feature.py'), 'created file indexed');
    const syncsBefore = sync.status().syncs;
    writeFileSync(join(root, 'src/util.py'), 'def helper_renamed_inside():\n    return 2\n');
    await until(
      async () => (await project.store.findSymbols(['helper_renamed_inside'])).length === 1,
      'modified file re-indexed',
    );
    assert.ok(sync.status().syncs > syncsBefore);
    assert.equal((await project.store.findSymbols(['helper'])).length, 0, 'the old definition is gone');
    rmSync(join(root, 'src/new_feature.py'));
    await until(async () => !(await has('src/new_feature.py')), 'deleted file dropped');
  });

  it('lets grep trust the index while it has nothing pending (no walk of the tree), and walk while it has', async () => {
    writeFileSync(join(root, 'src/quiet.py'), 'def quiet_watch_marker():\n    return 5\n');
    await until(() => has('src/quiet.py'), 'created file indexed');
    await until(
      async () => !(await project.grep({ pattern: 'quiet_watch_marker' })).fromDisk,
      'the watcher is quiet',
    );
    const trusted = await project.grep({ pattern: 'quiet_watch_marker' });
    assert.equal(trusted.matches[0]?.path, 'src/quiet.py');
    // --no-ignore reads what the index never holds: it always walks
    assert.ok((await project.grep({ pattern: 'quiet_watch_marker', noIgnore: true })).fromDisk);
  });

  it('follows a rename, and a folder moved or removed as a whole', async () => {
    renameSync(join(root, 'src/util.py'), join(root, 'src/tools.py'));
    await until(async () => (await has('src/tools.py')) && !(await has('src/util.py')), 'rename followed');
    mkdirSync(join(root, 'pkg/deep'), { recursive: true });
    writeFileSync(join(root, 'pkg/deep/a.py'), 'A = 1\n');
    writeFileSync(join(root, 'pkg/deep/b.py'), 'B = 2\n');
    await until(
      async () => (await has('pkg/deep/a.py')) && (await has('pkg/deep/b.py')),
      'new folder indexed',
    );
    renameSync(join(root, 'pkg'), join(root, 'lib'));
    await until(
      async () =>
        (await has('lib/deep/a.py')) && (await has('lib/deep/b.py')) && !(await has('pkg/deep/a.py')),
      'moved folder followed',
    );
    rmSync(join(root, 'lib'), { recursive: true });
    await until(async () => !(await paths()).some((p) => p.startsWith('lib/')), 'removed folder dropped');
  });

  it('leaves ignored paths out', async () => {
    mkdirSync(join(root, 'build'), { recursive: true });
    writeFileSync(join(root, 'build/out.py'), 'def generated():\n    pass\n');
    writeFileSync(join(root, 'debug.log'), 'noise\n');
    writeFileSync(join(root, 'src/marker.py'), 'MARKER = 1\n');
    // the marker proves a sync ran after the ignored files were written
    await until(() => has('src/marker.py'), 'marker indexed');
    assert.equal(await has('build/out.py'), false);
    assert.equal(await has('debug.log'), false);
  });

  it('handles a git checkout of another branch as one batch, and the status says so', async () => {
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'work');
    git(root, 'checkout', '-q', '-b', 'other');
    for (let i = 0; i < 30; i++)
      writeFileSync(join(root, `src/branch_${i}.py`), `def branch_fn_${i}():\n    return ${i}\n`);
    rmSync(join(root, 'src/main.py'));
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'other branch');
    await until(
      async () => (await has('src/branch_29.py')) && !(await has('src/main.py')),
      'other branch indexed',
    );
    const synced = sync.status().syncs;
    git(root, 'checkout', '-q', 'main');
    await until(
      async () => (await has('src/main.py')) && !(await paths()).some((p) => p.startsWith('src/branch_')),
      'back on main',
    );
    const s = sync.status();
    assert.ok(s.syncs - synced <= 3, `a checkout is a few syncs, not one per file (${s.syncs - synced})`);
    assert.equal(s.watching, true);
    assert.ok(s.lastSync);
    assert.equal(s.filesIndexed, (await paths()).length);
    assert.equal(s.lastError, null);
  });
});

describe('a watcher that cannot start', () => {
  it('says why in one line and that it polls instead; the system limit comes with the way to raise it', () => {
    const limit = watchFailure(
      new Error('inotify_add_watch on /repo/a failed: No space left on device'),
      15_000,
    );
    assert.equal(limit.split('\n').length, 1);
    assert.match(
      limit,
      /^the file watcher could not start \(inotify_add_watch .*\): looking for changes every 15 s instead; .*sysctl fs\.inotify\.max_user_watches=/,
    );
    const other = watchFailure(new Error('something else'), 30_000);
    assert.equal(
      other,
      'the file watcher could not start (something else): looking for changes every 30 s instead',
    );
  });
});
