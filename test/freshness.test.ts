import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openEmbedder } from '../src/embed/open.ts';
import { embedPending } from '../src/indexing/embedding.ts';
import { indexProject, indexStatus, openProject } from '../src/project/local/index.ts';
import { loadFolderMemos } from '../src/workspace/ignore/index.ts';
import {
  git,
  indexLexically,
  makeTree,
  openLexical,
  removeTree,
  runCli,
  testConfig,
  waitForOutput,
} from './helpers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));

describe('freshness an agent can see', () => {
  it('status says the commit, what was left out and why, and whether vectors are complete', async () => {
    const root = makeTree({
      'quarry.toml': 'max_file_bytes = 2000\n\n[embed]\nprovider = "static"\n',
      '.gitignore': 'build/\n',
      'build/out.js': 'generated();\n',
      'src/app.ts': 'export function startApp() {\n  return 1;\n}\n',
      'src/big.ts': `export const big = "${'x'.repeat(3000)}";\n`,
      id_rsa: 'not really a key\n',
      'blob.txt': Buffer.from([0, 1, 2, 3, 0, 0, 255, 0]),
    });
    trees.push(root);
    symlinkSync('/etc/hostname', join(root, 'link.txt'));
    git(root, 'init', '-q', '-b', 'main');
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'one');
    const project = await openProject({ root, create: true, userConfig: false });
    try {
      await indexProject(project);
      const st = await indexStatus(project);
      const head = git(root, 'rev-parse', 'HEAD').toString().trim();
      assert.deepEqual(st.built, { branch: 'main', commit: head });
      assert.equal(st.skipped?.reasons['too-large'], 1);
      assert.equal(st.skipped?.reasons.secret, 1);
      assert.equal(st.skipped?.reasons.symlink, 1);
      assert.ok((st.skipped?.ignored.folders ?? 0) >= 1, 'build/ ignored');
      assert.equal(st.skippedFiles, 1, 'the binary file, indexed without chunks');
      assert.equal(st.embedding.complete, true);
      const fresh = await project.search('start the app');
      assert.equal(fresh.stale, undefined);
      const text = runCli(['status'], { cwd: root, env: { QUARRY_EMBED: 'static' } }).stdout;
      assert.match(text, /built at main@[0-9a-f]{12}/);
      assert.match(
        text,
        /^left out +1 with a secret-looking name, 1 symbolic links, 1 too large, 1 without chunks .*, 1 folder and 0 files ignored/m,
      );
      assert.match(text, /· complete$/m);
    } finally {
      await project.close();
    }
  });

  it('a search says in one line when its results may be stale, on the CLI and in --json', async () => {
    const root = makeTree({
      'quarry.toml': '[embed]\nprovider = "static"\n',
      'src/app.ts': 'export function startApp() {\n  return 1;\n}\n',
    });
    trees.push(root);
    git(root, 'init', '-q');
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'one');
    const env = { QUARRY_EMBED: 'static' };
    assert.equal(runCli(['index', '--quiet'], { cwd: root, env }).code, 0);
    // a commit since the index that changed no file here: the checkout moved
    git(root, 'commit', '-q', '--allow-empty', '-m', 'two');
    const moved = runCli(['search', 'start app', '--json'], { cwd: root, env });
    assert.match(
      JSON.parse(moved.stdout).stale,
      /^the checkout moved from [0-9a-f]{12} to [0-9a-f]{12} since the last index/,
    );
    assert.match(runCli(['search', 'start app'], { cwd: root, env }).stderr, /^note: the checkout moved/m);
    // a new file: the search indexes it (its words) before it answers, and hybrid search says the vectors are
    // not complete
    writeFileSync(join(root, 'src/more.ts'), 'export function moreWork() {}\n');
    const caught = JSON.parse(
      runCli(['search', 'more work', '--json', '--mode', 'lexical'], { cwd: root, env }).stdout,
    );
    assert.equal(caught.results[0]?.path, 'src/more.ts');
    const partial = JSON.parse(runCli(['search', 'more work', '--json'], { cwd: root, env }).stdout);
    assert.equal(partial.stale, 'vectors cover 2 of 3 files so far: the rest are found by their words alone');
    // a lexical search is not made staler by missing vectors
    const lexical = JSON.parse(
      runCli(['search', 'more work', '--json', '--mode', 'lexical'], { cwd: root, env }).stdout,
    );
    assert.equal(lexical.stale, undefined);
    // a run that was killed
    const project = await openProject({ root, userConfig: false });
    try {
      await project.store.setMeta('run', JSON.stringify({ startedAt: Date.now(), pending: 3 }));
    } finally {
      await project.close();
    }
    const killed = JSON.parse(runCli(['search', 'start app', '--json'], { cwd: root, env }).stdout);
    assert.match(killed.stale, /^the last index run was interrupted/);
    // many changed files are not indexed by a search: it says how many are pending
    for (let i = 0; i < 30; i++)
      writeFileSync(join(root, `src/gen${i}.ts`), `export const gen${i} = ${i};\n`);
    const many = JSON.parse(runCli(['search', 'start app', '--json'], { cwd: root, env }).stdout);
    assert.match(
      many.stale,
      /^30 files changed since the last index: results may miss them \(run `quarry index`/,
    );
    // a tree whose last full walk counted more files than a search walks is not walked (nor listed) by a search
    const big = await openProject({ root, userConfig: false });
    try {
      assert.equal(await big.store.getMeta('tree_files'), '2', 'the index counted the files its walk found');
      await big.store.setMeta('tree_files', '20000');
    } finally {
      await big.close();
    }
    const unwalked = JSON.parse(runCli(['search', 'start app', '--json'], { cwd: root, env }).stdout);
    assert.doesNotMatch(unwalked.stale ?? '', /changed since the last index/);
    // …and its answer says so, not silence that reads as "nothing changed"
    assert.match(
      unwalked.stale,
      /^edits since the last index are not looked for in a tree of 20,000 files without a watcher: keep `quarry watch`/,
    );
    // …unless a watcher in another process keeps the index fresh (it leaves .quarry/watchers/<its pid>)
    const watcher = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      mkdirSync(join(root, '.quarry', 'watchers'), { recursive: true });
      writeFileSync(join(root, '.quarry', 'watchers', String(watcher.pid)), '');
      const watched = JSON.parse(runCli(['search', 'start app', '--json'], { cwd: root, env }).stdout);
      assert.doesNotMatch(watched.stale ?? '', /not looked for/);
    } finally {
      watcher.kill();
      await new Promise((done) => watcher.once('exit', done));
    }
    // a watcher that died says nothing
    const dead = JSON.parse(runCli(['search', 'start app', '--json'], { cwd: root, env }).stdout);
    assert.match(dead.stale, /^edits since the last index are not looked for/);
    // search.walk_files raises the size a search walks (here past the count), or turns the walk and its note off
    writeFileSync(join(root, 'quarry.toml'), '[search]\nwalk_files = 30000\n');
    const raised = JSON.parse(runCli(['search', 'start app', '--json'], { cwd: root, env }).stdout);
    assert.match(raised.stale, /^31 files changed since the last index/);
    writeFileSync(join(root, 'quarry.toml'), '[search]\nwalk_files = 0\n');
    const off = JSON.parse(runCli(['search', 'start app', '--json'], { cwd: root, env }).stdout);
    assert.doesNotMatch(off.stale ?? '', /edits since|changed since/); // (the interrupted run above still speaks)
  });

  it('says "being updated" only while a running index has files to re-read (regression: every start-up sync said so)', async () => {
    const root = makeTree({ 'src/app.ts': 'export function startApp() {\n  return 1;\n}\n' });
    trees.push(root);
    const env = { QUARRY_EMBED: 'none' };
    assert.equal(runCli(['index', '--quiet'], { cwd: root, env }).code, 0);
    const holder = spawn(
      process.execPath,
      ['--import', 'tsx', new URL('./hold-writer.ts', import.meta.url).pathname, root],
      { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      await waitForOutput(holder, /locked/);
      // a sync that walked and found nothing to re-read says nothing; one with files to re-read says so
      for (const [pending, stale] of [
        [0, undefined],
        [3, 'the index is being updated: results may miss the latest changes'],
      ] as const) {
        const project = await openProject({
          root,
          userConfig: false,
          overrides: { embed: { provider: 'none' } },
        });
        try {
          await project.store.setMeta('run', JSON.stringify({ startedAt: Date.now(), pending }));
          assert.equal((await project.search('start app', { mode: 'lexical' })).stale, stale);
        } finally {
          await project.close();
        }
      }
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('status shows an embedding run under way: phase, files, rate', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 40; i++)
      files[`src/m${i}.ts`] = `export function work${i}(x: number) {\n  return x * ${i};\n}\n`;
    const root = makeTree(files);
    trees.push(root);
    const project = await openProject({
      root,
      create: true,
      userConfig: false,
      overrides: { embed: { provider: 'none' } },
    });
    const embedder = (await openEmbedder(
      testConfig({ embed: { ...testConfig().embed, provider: 'static' } }),
    ))!;
    try {
      await indexProject(project, { embed: false });
      const stop = new AbortController();
      await embedPending(project.store, embedder, {
        batchFiles: 1,
        signal: stop.signal,
        onProgress: (p) => {
          if (p.done >= 5) stop.abort();
        },
      });
      // a writer holds the index (as the run would): its recorded progress is shown
      const lock = await project.store.acquireWriter();
      try {
        const st = await indexStatus(project);
        assert.equal(st.embedding.complete, false);
        assert.equal(st.embedding.progress?.phase, 1);
        assert.equal(st.embedding.progress?.total, 40);
        assert.ok(typeof st.embedding.progress?.textsPerSec === 'number');
      } finally {
        await lock.release();
      }
      assert.equal((await indexStatus(project)).embedding.progress, undefined, 'no run: no progress shown');
    } finally {
      await embedder.close();
      await project.close();
    }
  });
  it('def, refs, symbols and map answer from the working tree after a rename and a deletion, as search does', async () => {
    const root = makeTree({
      'pkg/query.py':
        'def _merge_queryparams(a, b):\n    return {**a, **b}\n\n\ndef build(a):\n    return _merge_queryparams(a, {})\n',
      'pkg/multipart.py': 'class MultipartStream:\n    def read(self):\n        return b""\n',
      'pkg/client.py':
        'from pkg.multipart import MultipartStream\n\n\ndef send():\n    return MultipartStream().read()\n',
    });
    trees.push(root);
    await indexLexically(root);
    writeFileSync(
      join(root, 'pkg/query.py'),
      'def _combine_query_params(a, b):\n    return {**a, **b}\n\n\ndef build(a):\n    return _combine_query_params(a, {})\n',
    );
    rmSync(join(root, 'pkg/multipart.py'));
    const project = await openLexical(root);
    try {
      assert.deepEqual(
        (await project.definitions('_combine_query_params')).map((d) => `${d.path}:${d.startLine}`),
        ['pkg/query.py:1'],
      );
      assert.deepEqual(await project.definitions('_merge_queryparams'), []);
      assert.deepEqual(await project.definitions('MultipartStream'), []);
      assert.deepEqual(
        (await project.references('_combine_query_params')).map((r) => r.path),
        ['pkg/query.py'],
      );
      const outline = await project.outline('pkg/query.py');
      assert.deepEqual(
        outline.symbols.map((s) => s.name),
        ['_combine_query_params', 'build'],
      );
      const map = await project.repoMap({ budget: 2000 });
      assert.ok(
        !map.entries.some((f) => f.path === 'pkg/multipart.py'),
        'the deleted file is not in the map',
      );
    } finally {
      await project.close();
    }
    // a one-shot command too: the rename back is seen by `quarry def` without an index run
    writeFileSync(join(root, 'pkg/query.py'), 'def _merge_queryparams(a, b):\n    return {**a, **b}\n');
    const def = runCli(['def', '_merge_queryparams', '--json'], { cwd: root, env: { QUARRY_EMBED: 'none' } });
    assert.equal(def.code, 0, def.stderr);
    assert.match(def.stdout, /pkg\/query\.py/);
  });

  it('a grep reads its candidates as written, and shows no secret of them nor confirms one', () => {
    const key = 'AKIAZ7QX4RTPL2MNB8VW';
    const root = makeTree({
      'app/settings.py': `# billing\nAWS_ACCESS_KEY_ID = "${key}"\nREGION = "eu-west-1"\n`,
      'app/other.py': 'def unrelated():\n    return "AWS_ACCESS_KEY_ID"\n',
    });
    trees.push(root);
    const env = { QUARRY_EMBED: 'none' };
    assert.equal(runCli(['index', '--quiet'], { cwd: root, env }).code, 0);
    // the file is unchanged since the index: read from disk as written, redacted before a line of it is shown
    const shown = runCli(['grep', '-C', '1', 'AWS_ACCESS_KEY_ID = "'], { cwd: root, env });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /AWS_ACCESS_KEY_ID = "\[REDACTED/);
    assert.ok(!shown.stdout.includes(key));
    // a pattern that only the value matches finds nothing, whatever reaches into it
    for (const pattern of ['AKIAZ7QX', 'KEY_ID = "AKIA', 'KEY_ID = "[A-Z0-9]{20}"']) {
      const r = runCli(['grep', pattern], { cwd: root, env });
      assert.equal(r.code, 1, `${pattern}: ${r.stdout}`);
      assert.ok(!r.stdout.includes(key));
    }
  });

  it("a one-shot command's catch-up keeps the folders it read, and sees an edit in a folder whose times did not change, a nested new file and an ignore rule", async () => {
    const root = makeTree({
      '.gitignore': 'out/\n',
      'src/app/deep/core.py': 'def alpha_handler():\n    return 1\n',
      'src/app/other.py': 'def other():\n    return 2\n',
      'docs/notes.py': 'def gamma_notes():\n    return 3\n',
    });
    trees.push(root);
    git(root, 'init', '-q');
    git(root, 'add', '-A');
    git(root, 'commit', '-qm', 'one');
    // folders changed in the 2 s before a walk are not remembered: let the new tree settle
    await new Promise((done) => setTimeout(done, 2_200));
    await indexLexically(root);
    const memo = join(root, '.quarry', 'walk.json');
    const env = { QUARRY_EMBED: 'none' };
    const defined = (name: string) => {
      const r = runCli(['def', name, '--json'], { cwd: root, env });
      assert.ok(r.code === 0 || r.code === 1, r.stderr);
      return r.stdout;
    };
    // rewritten in place, the same size: src/app/deep's times do not change
    const before = statSync(join(root, 'src/app/deep')).mtimeMs;
    writeFileSync(join(root, 'src/app/deep/core.py'), 'def omega_handler():\n    return 1\n');
    assert.equal(statSync(join(root, 'src/app/deep')).mtimeMs, before);
    assert.match(defined('omega_handler'), /src\/app\/deep\/core\.py/);
    assert.doesNotMatch(defined('alpha_handler'), /core\.py/);
    // a new folder two levels down, then a rule that leaves docs/ out
    mkdirSync(join(root, 'src/app/deep/more/still'), { recursive: true });
    writeFileSync(join(root, 'src/app/deep/more/still/added.py'), 'def beta_added():\n    return 4\n');
    writeFileSync(join(root, '.gitignore'), 'out/\ndocs/\n');
    assert.match(defined('beta_added'), /added\.py/);
    assert.doesNotMatch(defined('gamma_notes'), /notes\.py/);
    // the catch-up kept what it read: the new folders, once settled, are taken as they are by the next one
    await new Promise((done) => setTimeout(done, 2_200));
    writeFileSync(join(root, 'src/app/other.py'), 'def other():\n    return 22\n');
    assert.match(defined('other'), /other\.py/);
    const kept = loadFolderMemos(memo);
    assert.ok(kept.last.has('src/app/deep/more/still'), [...kept.last.keys()].join(' '));
    assert.ok(kept.lastChecked !== undefined, 'with the time it saw every file');
  });
});
