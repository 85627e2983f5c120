import assert from 'node:assert/strict';
import { appendFileSync, chmodSync, cpSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { openProject, searchProject } from '../src/project/local/index.ts';
import { indexPaths } from '../src/workspace/root.ts';
import {
  copyPolyglot,
  dumpIndex,
  bigTree as makeBigTree,
  makeTree,
  removeTree,
  runCli,
  runCliAsync,
  spawnCli,
} from './helpers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));

/** A generated repository big enough that indexing takes a few seconds. */
const bigTree = (files = 1500) => makeBigTree(files, trees);

/** The index of `root` equals the index a fresh `quarry index` builds from a copy of its files. */
function assertMatchesCleanBuild(root: string): void {
  const clean = makeTree({});
  trees.push(clean);
  cpSync(root, clean, {
    recursive: true,
    preserveTimestamps: true,
    filter: (src) => !src.endsWith('.quarry'),
  });
  assert.equal(runCli(['index', clean, '--quiet']).code, 0);
  assert.deepEqual(dumpIndex(indexPaths(root).db), dumpIndex(indexPaths(clean).db));
}

function indexedCount(db: string): number {
  if (!existsSync(db)) return 0;
  try {
    const d = new Database(db, { readonly: true, fileMustExist: true });
    try {
      return d.prepare(`SELECT COUNT(*) FROM files`).pluck().get() as number;
    } finally {
      d.close();
    }
  } catch {
    return 0;
  }
}

describe('quarry CLI', () => {
  let root: string;
  before(() => {
    root = copyPolyglot(trees);
    const r = runCli(['index', root, '--quiet']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /indexed .* 17 files \(17 added/);
  });

  it('prints the search JSON contract', () => {
    const r = runCli(['search', '--json', '--top-k', '3', 'parse config file'], { cwd: root });
    assert.equal(r.code, 0, r.stderr);
    const json = JSON.parse(r.stdout);
    assert.equal(json.query, 'parse config file');
    assert.equal(json.mode, 'lexical');
    assert.ok(json.results.length >= 1);
    assert.deepEqual(Object.keys(json.results[0]).sort(), [
      'column',
      'endLine',
      'kind',
      'label',
      'line',
      'path',
      'score',
      'snippet',
      'snippetLine',
      'startLine',
      'symbol',
    ]);
    assert.equal(json.results[0].path, 'config_loader.py');
    assert.ok(json.files.length >= 1);
    assert.deepEqual(Object.keys(json.files[0]).sort(), ['path', 'score']);
    const many = JSON.parse(runCli(['search', '--json', '-k', '3', 'return'], { cwd: root }).stdout);
    assert.equal(many.results.length, 3);
  });

  it('finds the project root by walking up, and ranks files with --files', () => {
    const r = runCli(['search', '--files', 'TaskQueue', 'push'], { cwd: join(root, '.quarry') });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout.split('\n')[0]!, /Queue\.kt$/);
  });

  it('shows path:lines, the symbol and a snippet in plain text when not on a terminal', () => {
    const r = runCli(['search', 'HandleHealth'], { cwd: root });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^1\. server\.go:1-20 Server\.HandleHealth \(method\) /);
    assert.match(r.stdout, /│ func \(s \*Server\) HandleHealth/);
    assert.doesNotMatch(r.stdout, /\x1b\[/);
  });

  it('reports status, as text and as JSON', () => {
    const text = runCli(['status'], { cwd: root });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /files +17/);
    assert.match(text.stdout, /pending +up to date/);
    const r = runCli(['status', '--json', '--root', root]);
    const s = JSON.parse(r.stdout);
    assert.equal(s.files, 17);
    assert.ok(s.chunks > 0 && s.bytes > 0);
    assert.equal(s.languages.typescript, 1);
    assert.deepEqual(s.pending, { added: 0, modified: 0, deleted: 0 });
    assert.equal(s.run.state, 'idle');
  });

  it('fails with one clear line and a meaningful exit code', () => {
    const empty = makeTree({ 'a.txt': 'hello' });
    trees.push(empty);
    const noIndex = runCli(['search', 'x', '--root', empty]);
    assert.equal(noIndex.code, 3);
    assert.equal(noIndex.stderr, `quarry: no index in ${empty}: run \`quarry index\` there first\n`);
    const emptyQuery = runCli(['search', '  '], { cwd: root });
    assert.equal(emptyQuery.code, 2);
    assert.match(emptyQuery.stderr, /^quarry: empty query: /);
    const badFlag = runCli(['search', '--top-k', 'lots', 'x'], { cwd: root });
    assert.equal(badFlag.code, 2);
    assert.match(badFlag.stderr, /expected a positive whole number/);
    const notDir = runCli(['index', join(root, 'server.go')]);
    assert.equal(notDir.code, 2);
    assert.match(notDir.stderr, /is not a directory/);
  });

  it('keeps the index out of git status', () => {
    assert.match(readFileSync(join(root, '.quarry', '.gitignore'), 'utf8'), /^\*$/m);
  });

  it('opens an index for search without waiting on a writer’s transaction', async () => {
    const writer = new Database(indexPaths(root).db);
    writer.prepare('BEGIN IMMEDIATE').run();
    try {
      // taking the write lock here would fail with SQLITE_BUSY once the busy timeout ran out
      const project = await openProject({ root });
      const res = await searchProject(project, 'HandleHealth');
      await project.close();
      assert.equal(res.results[0]?.path, 'server.go');
    } finally {
      writer.prepare('ROLLBACK').run();
      writer.close();
    }
  });

  it('indexes an empty directory', () => {
    const empty = makeTree({});
    trees.push(empty);
    const r = runCli(['index', empty, '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).files, 0);
  });

  it('resumes after kill -9 and ends identical to a clean build', async () => {
    const big = bigTree();
    const { db } = indexPaths(big);
    const child = spawnCli(['index', big, '--quiet']);
    const exited = new Promise((resolve) => child.on('exit', resolve));
    // kill it once some files are committed, well before the end
    for (let i = 0; i < 600 && indexedCount(db) < 100; i++) await sleep(25);
    child.kill('SIGKILL');
    await exited;
    const partial = indexedCount(db);
    assert.ok(partial > 0 && partial < 1500, `killed after ${partial} files`);
    const check = new Database(db);
    assert.equal(check.pragma('integrity_check', { simple: true }), 'ok');
    check.close();

    const status = JSON.parse(runCli(['status', '--json', '--root', big]).stdout);
    assert.equal(status.run.state, 'interrupted');
    assert.equal(status.pending.added, 1500 - partial);

    const resumed = runCli(['index', big, '--json']);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(
      JSON.parse(resumed.stdout).added,
      1500 - partial,
      'the resumed run reads only what was missing',
    );

    assertMatchesCleanBuild(big);
  });

  it('copes with files deleted while it runs, and the next run matches a clean build', async () => {
    const big = bigTree(1200);
    const { db } = indexPaths(big);
    const child = spawnCli(['index', big, '--quiet']);
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    for (let i = 0; i < 600 && indexedCount(db) < 1; i++) await sleep(10);
    // delete every other module folder while the run reads files
    const { rmSync } = await import('node:fs');
    for (const dir of readdirSync(join(big, 'src')).filter((_, i) => i % 2 === 1))
      rmSync(join(big, 'src', dir), { recursive: true });
    assert.equal(await exited, 0, stderr);
    assert.equal(runCli(['index', big, '--quiet']).code, 0);
    assertMatchesCleanBuild(big);
  });

  it('commits what is done on Ctrl-C and exits 130', async () => {
    const big = bigTree(1000);
    const { db, lock } = indexPaths(big);
    const child = spawnCli(['index', big, '--quiet']);
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    for (let i = 0; i < 600 && indexedCount(db) < 50; i++) await sleep(25);
    child.kill('SIGINT');
    assert.equal(await exited, 130);
    assert.match(stderr, /stopping: committing what is done/);
    assert.ok(!existsSync(lock), 'the lock is released');
    const done = indexedCount(db);
    assert.ok(done > 0, 'work before the interrupt is kept');
    const resumed = JSON.parse(runCli(['index', big, '--json']).stdout);
    assert.equal(resumed.added, 1000 - done);
  });

  it('answers searches while the index is being written, and refuses a second writer', async () => {
    const big = bigTree(1200);
    assert.equal(runCli(['index', big, '--quiet']).code, 0);
    // change every file so that the next run re-chunks all of them
    for (const dir of readdirSync(join(big, 'src')))
      for (const f of readdirSync(join(big, 'src', dir)))
        appendFileSync(join(big, 'src', dir, f), '\n// edited\n');
    const { lock } = indexPaths(big);
    const child = spawnCli(['index', big, '--quiet', '--json']);
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    let running = true;
    const exited = new Promise<number | null>((resolve) =>
      child.on('exit', (code) => {
        running = false;
        resolve(code);
      }),
    );
    for (let i = 0; i < 400 && !existsSync(lock); i++) await sleep(25);
    assert.ok(existsSync(lock), 'the writer took the lock');
    const second = spawnCli(['index', big, '--quiet']);
    let secondErr = '';
    second.stderr.on('data', (d) => {
      secondErr += d;
    });
    const secondCode = new Promise((resolve) => second.on('exit', resolve));
    const project = await openProject({ root: big });
    let searchesDuringWrite = 0;
    try {
      while (running) {
        const res = await searchProject(project, 'respond value module step', { topK: 5 });
        assert.equal(res.results.length, 5);
        if (running) searchesDuringWrite++;
        await sleep(5);
      }
    } finally {
      await project.close();
    }
    assert.equal(await exited, 0);
    assert.equal(JSON.parse(out).updated, 1200);
    assert.equal(await secondCode, 4);
    assert.match(
      secondErr,
      /another quarry \(pid \d+\) is indexing this project: wait for it, or run with --wait/,
    );
    assert.ok(searchesDuringWrite > 0, 'searched while the writer ran');
  });

  it('skips an unreadable file with a warning and indexes the rest', async (t) => {
    const dir = copyPolyglot(trees);
    chmodSync(dir, 0o755);
    chmodSync(join(dir, 'lib.rs'), 0o000);
    const isRoot = process.getuid?.() === 0;
    if (isRoot) {
      // root reads anything: run quarry as an unprivileged user so that the permission bites
      const { chownSync } = await import('node:fs');
      chownSync(dir, 65534, 65534);
      for (const f of readdirSync(dir)) chownSync(join(dir, f), 65534, 65534);
    }
    const { code, stdout, stderr } = await runCliAsync(
      ['index', dir, '--json'],
      isRoot ? { uid: 65534, gid: 65534 } : {},
    );
    t.diagnostic(stderr);
    assert.equal(code, 0, stderr);
    assert.match(stderr, /warning: skipped unreadable lib\.rs \(EACCES\)/);
    assert.equal(JSON.parse(stdout).added, 16);
  });
});

describe('quarry index without weights', () => {
  it('counts the failed download in the time it reports (regression: 18.8 s reported for a 36.5 s run)', async () => {
    const { createServer } = await import('node:http');
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    // a hub that answers after a second, with nothing
    const hub = createServer((_req, res) => {
      setTimeout(() => res.writeHead(404).end(), 1200);
    });
    await new Promise<void>((r) => hub.listen(0, '127.0.0.1', r));
    const cache = mkdtempSync(join(tmpdir(), 'quarry-cache-'));
    const root = makeTree({ 'src/a.ts': 'export const a = 1;\n' });
    try {
      const { port } = hub.address() as import('node:net').AddressInfo;
      const r = await runCliAsync(['index', root], {
        env: {
          QUARRY_EMBED: 'local',
          XDG_CACHE_HOME: cache,
          QUARRY_HUB_URL: `http://127.0.0.1:${port}`,
          QUARRY_MODEL_DIR: '',
        },
      });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /semantic search is off/);
      const m = /in (\d+(?:\.\d+)?) ?s \((\d+(?:\.\d+)?) ?s of it getting the embedding model ready\)/.exec(
        r.stdout,
      );
      assert.ok(m, r.stdout);
      assert.ok(Number(m[2]) >= 1 && Number(m[1]) >= Number(m[2]), r.stdout);
    } finally {
      hub.close();
      rmSync(cache, { recursive: true, force: true });
      removeTree(root);
    }
  });
});

describe('quarry CLI: each command loads its own module', () => {
  /** `quarry …argv` in this process, its exit code and what it wrote. */
  async function inProcess(argv: string[]): Promise<{ code: number; out: string; err: string }> {
    const { main } = await import('../src/cli/main.ts');
    const got = { out: '', err: '' };
    const sink = (key: 'out' | 'err') =>
      ({
        write: (s: string) => {
          got[key] += String(s);
          return true;
        },
        isTTY: false,
        columns: 200,
      }) as unknown as NodeJS.WriteStream;
    const code = await main(argv, { stdout: sink('out'), stderr: sink('err') });
    return { code, ...got };
  }

  it('every command help lists runs with only the module named for it loaded, after global options too', async () => {
    const help = await inProcess(['--help']);
    assert.equal(help.code, 0, help.err);
    const names = help.out
      .split('Commands:')[1]!
      .split('\n')
      .map((l) => /^ {2}([a-z]+)\b/.exec(l)?.[1])
      .filter((n): n is string => Boolean(n) && n !== 'help');
    assert.ok(names.length >= 25, names.join(' '));
    const { entriesFor } = await import('../src/cli/main.ts');
    const valued = new Set(['--root', '--color']);
    const every = entriesFor(['--help'], valued).length;
    for (const name of names) {
      // the table names every command's module: a name missing from it would load every module (as completion
      // does, which lists them all)
      const entries = entriesFor(['--root', '.', name, '--json'], valued);
      if (name === 'completion') assert.equal(entries.length, every);
      else {
        assert.equal(entries.length, 1, `${name}: ${entries.length} modules`);
        assert.ok(entries[0]![0].includes(name), `${name} loads the module of ${entries[0]![0].join(', ')}`);
      }
      // help asked before the command lists every command
      assert.equal(entriesFor(['-h', name], valued).length, every);
      // a word the table maps to the wrong module would be an unknown command here
      for (const argv of [
        [name, '--help'],
        ['--root', '.', '--color', 'never', name, '--help'],
      ]) {
        const r = await inProcess(argv);
        assert.equal(r.code, 0, `quarry ${argv.join(' ')}: ${r.err}`);
        assert.match(r.out, new RegExp(`^Usage: quarry ${name} `), `quarry ${argv.join(' ')}`);
      }
    }
    // no command, a misspelt one: every module, so that commander can name the nearest
    const typo = await inProcess(['serch', 'x']);
    assert.equal(typo.code, 2);
    assert.match(typo.err, /unknown command 'serch'[\s\S]*Did you mean search\?/);
    // an unknown option points to the command's help, on its one line (issue 65)
    const option = await inProcess(['search', '--foo', 'x']);
    assert.equal(option.code, 2);
    assert.match(option.err, /^quarry: unknown option '--foo': see `quarry search --help`$/m);
    const sub = await inProcess(['model', 'status', '--foo']);
    assert.match(sub.err, /^quarry: unknown option '--foo': see `quarry model status --help`$/m);
    const listed = await inProcess(['-h', 'search']);
    assert.equal(listed.code, 0);
    for (const name of names) assert.match(listed.out, new RegExp(`^ {2}${name}\\b`, 'm'));
    const version = await inProcess(['--version']);
    assert.equal(version.code, 0);
    assert.match(version.out, /^\d+\.\d+\.\d+\n$/);
  });
});
