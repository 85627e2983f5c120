import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { indexProject, openProject } from '../src/project/local/index.ts';
import { type OverlayProject, openOverlay } from '../src/project/overlay.ts';
import { openRemoteProject } from '../src/project/remote.ts';
import type { LocalProject, Project } from '../src/project/types.ts';
import type { SearchResponse } from '../src/search/search.ts';
import type { Store } from '../src/store/types.ts';
import { gitChangesSince } from '../src/workspace/root.ts';
import { git, makeTree, REPO, removeTree, runCli, spawnCli, waitForOutput, writeFiles } from './helpers.ts';
import { startServer, type TestServer } from './store-servers.ts';

// A local overlay on a shared index (docs/team.md): the shared index (PostgreSQL) is built at a commit; the working
// tree then changes (files edited, deleted, added, staged); searching the shared index through the overlay must
// give what a full local index of the working tree gives, over a direct store, HTTP and MCP alike.

const REPO_KEY = 'acme/overlay';
const CONFIG = '[embed]\nprovider = "static"\nstatic_table = "code-v1"\n';
const QUERIES = [
  'writer lock held by a process that is gone is reclaimed',
  'git history recency prior for ranking files',
  'trigram plan of literals for a regex',
  'overlay probe that merges the nearest vectors',
  'replace secrets in snippets before they are shown',
  'read the TOML settings file and report the line of an error',
  'chunk a file with tree-sitter definitions',
  'retry a fetch when the connection resets',
];

/** Files and scores as a full index gives them (rounded where the engines' float arithmetic differs). */
function shape(res: SearchResponse) {
  return {
    files: res.files.map((f) => `${f.path} ${f.score.toFixed(6)}`),
    results: res.results.map((r) => `${r.path}:${r.startLine}-${r.endLine} ${r.score.toFixed(6)}`),
  };
}

/**
 * Two indexes of the same files hold the same chunks (so that their results can be equal at all): a file chunked
 * otherwise in one of them (by lines after a parse's deadline, say) is named, rather than found as a score that moved.
 */
async function assertSameChunks(want: Store, got: Store, label: string, only?: (path: string) => boolean) {
  const files = (await want.listFiles()).filter((f) => !only || only(f.path));
  const theirs = new Map((await got.listFiles()).map((f) => [f.path, f]));
  const ours = new Set(files.map((f) => f.path));
  const extra = [...theirs.keys()].filter((p) => !ours.has(p) && (!only || only(p)));
  assert.deepEqual(extra, [], `files in ${label} that the full index does not hold`);
  const paths = files.map((f) => f.path);
  const [a, b] = await Promise.all([want.getFilesChunks(paths), got.getFilesChunks(paths)]);
  const lines = (cs: Array<{ startLine: number; endLine: number }> | undefined) =>
    (cs ?? []).map((c) => `${c.startLine}-${c.endLine}`).join(' ');
  for (const f of files) {
    const other = theirs.get(f.path);
    assert.ok(other, `${f.path} is in the full index and not in ${label}`);
    assert.equal(
      `${other.method} ${lines(b.get(f.path))}`,
      `${f.method} ${lines(a.get(f.path))}`,
      `${f.path} is chunked otherwise in ${label} than in the full index`,
    );
  }
}

describe('a local overlay of a working tree on a shared index', () => {
  let pgServer: TestServer;
  let root: string;
  let empty: string;
  let full: LocalProject;
  let served: ChildProcess | undefined;
  let url = '';
  const changed = ['src/search/grep.ts', 'src/store/lock.ts', 'src/search/history.ts'];

  before(async () => {
    pgServer = await startServer('postgres');
    root = makeTree({ '.gitignore': '.quarry/\n', 'quarry.toml': CONFIG });
    empty = makeTree({});
    cpSync(join(REPO, 'src'), join(root, 'src'), { recursive: true });
    cpSync(join(REPO, 'test', 'fixtures', 'polyglot'), join(root, 'polyglot'), { recursive: true });
    git(root, 'init', '-q', '-b', 'main');
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'the shared state');
    // the team's index, built at that commit
    const r = runCli(['index', root, '--store', pgServer.url, '--repo', REPO_KEY, '--quiet'], {
      env: { QUARRY_EMBED: 'static' },
    });
    assert.equal(r.code, 0, r.stderr);
    // the developer's changes since: an edit, a rewrite, a deletion, an untracked file and a staged one
    appendFileSync(
      join(root, 'src/search/grep.ts'),
      '\n/** The overlay probe: merges the nearest vectors of two indexes by cosine similarity. */\nexport function overlayProbe(a: number[], b: number[]): number[] {\n  return [...a, ...b].sort((x, y) => y - x);\n}\n',
    );
    const lock = readFileSync(join(root, 'src/store/lock.ts'), 'utf8');
    writeFileSync(join(root, 'src/store/lock.ts'), lock.replace(/reclaimed/g, 'taken over'));
    rmSync(join(root, 'src/search/history.ts'));
    writeFiles(root, {
      'src/probe/merge.ts':
        'export function mergeNearestVectors(ours: number[], theirs: number[]) {\n  // the overlay probe: nearest vectors of both sides\n  return ours.concat(theirs);\n}\n',
      'src/probe/staged.py':
        'def retry_on_reset(fetch):\n    """retry a fetch when the connection resets"""\n    return fetch()\n',
    });
    git(root, 'add', 'src/probe/staged.py');
    changed.push('src/probe/merge.ts', 'src/probe/staged.py');
    // what the overlay must equal: a full local index of the working tree (.quarry/index.db)
    full = await openProject({ root, create: true, userConfig: false });
    await indexProject(full);
  });

  after(async () => {
    await full?.close();
    if (served && served.exitCode === null) {
      const exited = new Promise((r) => served!.once('exit', r));
      served.kill('SIGTERM');
      await exited;
    }
    await pgServer?.dispose();
    removeTree(root);
    removeTree(empty);
  });

  async function assertEqualsFull(overlay: OverlayProject): Promise<void> {
    assert.deepEqual([...overlay.overlay.changed].sort(), [...changed].sort());
    await assertSameChunks(full.store, overlay.store, "the overlay's own index");
    for (const q of QUERIES) {
      const [want, got] = await Promise.all([full.search(q), overlay.search(q)]);
      assert.equal(got.mode, 'hybrid');
      assert.deepEqual(shape(got), shape(want), q);
      for (const r of got.results) assert.equal(r.side, changed.includes(r.path) ? 'local' : 'shared');
      assert.ok(!got.files.some((f) => f.path === 'src/search/history.ts'), 'a deleted file is gone');
    }
    const added = await overlay.search('merge nearest vectors of ours and theirs');
    assert.equal(added.files[0]?.path, 'src/probe/merge.ts');
    assert.equal(added.results[0]?.side, 'local');
  }

  it('over the store directly (--store … --repo): results equal a full local index', async () => {
    const base = await openProject({
      root,
      userConfig: false,
      overrides: { store: { url: pgServer.url, repo: REPO_KEY } },
    });
    // without the overlay the shared index is stale exactly where the developer works
    const stale = await base.search('merge nearest vectors of ours and theirs');
    assert.ok(!stale.files.some((f) => f.path === 'src/probe/merge.ts'));
    // the shared index's chunks of the files that did not change are the full index's (its vectors are found by them)
    await assertSameChunks(full.store, base.store, 'the shared index', (p) => !changed.includes(p));
    const overlay = await openOverlay(base, { root });
    assert.ok(overlay, 'an overlay');
    try {
      await assertEqualsFull(overlay);
      const st = await overlay.status();
      assert.equal(st.overlay?.changed, changed.length);
      assert.equal(st.repo, REPO_KEY);
      // only the differing files have vectors here; the rest come from the shared index
      const own = await openProject({
        root,
        userConfig: false,
        overrides: { store: { driver: 'sqlite', url: join(root, '.quarry/overlay/index.db') } },
      });
      try {
        const files = (await own.store.listFiles()).length;
        const embedded = (await own.store.vectors!.status()).coarse;
        assert.ok(files > 100, `the overlay's lexical index is the working tree (${files} files)`);
        assert.equal(embedded, changed.length - 1, 'vectors for the changed files that exist, and no other');
      } finally {
        await own.close();
      }
    } finally {
      await overlay.close();
    }
  });

  it('over HTTP (quarry serve) and MCP (/mcp): the same results, and a later edit is seen', async () => {
    served = spawnCli(['serve', '--no-watch', '--store', pgServer.url, '--port', '0'], { cwd: empty });
    url = (await waitForOutput(served, /quarry panel: (\S+)/))[1]!;
    const base = new URL(url);
    base.search = '';
    for (const remote of [base.toString(), new URL('mcp', base).toString()]) {
      const project: Project = await openRemoteProject({ url: remote, repo: REPO_KEY });
      const overlay = await openOverlay(project, { root, refreshSeconds: 0 });
      assert.ok(overlay, `an overlay over ${remote}`);
      try {
        await assertEqualsFull(overlay);
        // 100 results (a long context) ask the shared index for its most nearest vectors, and no more
        const wide = await overlay.search(QUERIES[0]!, { topK: 100 });
        assert.ok(wide.results.length > 10, `${wide.results.length} results`);
      } finally {
        await overlay.close();
      }
    }
    // an agent's `quarry mcp --remote` in the checkout relays the shared index with this checkout's changes
    const relay = spawnCli(['mcp', '--http', '--port', '0', '--remote', base.toString()], {
      cwd: root,
      env: { QUARRY_EMBED: 'static' },
    });
    try {
      const mcpUrl = (await waitForOutput(relay, /listening on (\S+)/))[1]!;
      const client = new McpClient({ name: 'overlay-test', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
      const res = (await client.callTool({
        name: 'search_code',
        arguments: { query: 'merge nearest vectors of ours and theirs', top_k: 3 },
      })) as { content: Array<{ text: string }> };
      assert.match(res.content[0]!.text, /src\/probe\/merge\.ts/);
      await client.close();
    } finally {
      const exited = new Promise((r) => relay.once('exit', r));
      relay.kill('SIGTERM');
      await exited;
    }
    // a long-lived overlay (an MCP server, a chat) sees an edit made after it opened
    const project = await openRemoteProject({ url: base.toString(), repo: REPO_KEY });
    const overlay = await openOverlay(project, { root, refreshSeconds: 0 });
    assert.ok(overlay);
    try {
      writeFiles(root, {
        'src/probe/later.ts': 'export const zanzibarQuokka = "a word no other file has";\n',
      });
      const res = await overlay.search('zanzibarQuokka');
      assert.equal(res.files[0]?.path, 'src/probe/later.ts');
      assert.equal(res.files[0]?.side, 'local');
    } finally {
      rmSync(join(root, 'src/probe/later.ts'));
      await overlay.close();
    }
  });

  it('the CLI overlays --repo and --remote in a checkout; --no-overlay searches the shared index as built', () => {
    const env = { QUARRY_STORE_URL: pgServer.url, QUARRY_EMBED: 'static' };
    const on = runCli(['search', 'merge nearest vectors of ours and theirs', '--repo', REPO_KEY, '--json'], {
      cwd: root,
      env,
    });
    assert.equal(on.code, 0, on.stderr);
    const first = JSON.parse(on.stdout).results[0];
    assert.equal(first.path, 'src/probe/merge.ts');
    assert.equal(first.side, 'local');
    const status = runCli(['status', '--repo', REPO_KEY], { cwd: root, env });
    assert.match(status.stdout, /^overlay +5 files differ from .*acme\/overlay \(built at [0-9a-f]{12}\)/m);
    const text = runCli(['search', 'merge nearest vectors', '--repo', REPO_KEY, '-k', '3'], {
      cwd: root,
      env,
    });
    assert.match(text.stdout, /src\/probe\/merge\.ts:1-4 .*\(local\)/);
    const off = runCli(
      ['search', 'merge nearest vectors of ours and theirs', '--repo', REPO_KEY, '--no-overlay', '--json'],
      {
        cwd: root,
        env,
      },
    );
    assert.ok(!JSON.parse(off.stdout).results.some((r: { path: string }) => r.path === 'src/probe/merge.ts'));
    // a checkout that does not have the shared index's commit: one line says so, and the shared index answers
    const other = makeTree({ 'a.ts': 'export const a = 1;\n' });
    try {
      git(other, 'init', '-q');
      const r = runCli(['search', 'overlay probe', '--repo', REPO_KEY], { cwd: other, env });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /which this checkout does not have: `git fetch` it/);
    } finally {
      removeTree(other);
    }
  });
});

describe('an overlay when git fails', () => {
  it('retries once, then says on the answer that local changes were not applied, never taking it for a missing commit', async () => {
    const base = makeTree({ 'src/a.ts': 'export const alpha = "shared words";\n' });
    const fakeBin = makeTree({});
    const realPath = process.env.PATH;
    try {
      git(base, 'init', '-q');
      git(base, 'add', '.');
      git(base, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'one');
      const commit = git(base, 'rev-parse', 'HEAD').trim();
      // a git whose `diff` fails the way a held lock or a timeout does, counting its calls
      const calls = join(fakeBin, 'calls');
      const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
      writeFileSync(
        join(fakeBin, 'git'),
        `#!/bin/sh\nfor a in "$@"; do if [ "$a" = diff ]; then echo x >> ${calls}; echo "fatal: Unable to create '.git/index.lock': File exists." >&2; exit 128; fi; done\nexec ${realGit} "$@"\n`,
        { mode: 0o755 },
      );
      assert.deepEqual(gitChangesSince(base, commit), { changed: [] });
      assert.deepEqual(gitChangesSince(base, '0'.repeat(40)), { missing: true });
      process.env.PATH = `${fakeBin}:${realPath}`;
      const failed = gitChangesSince(base, commit);
      assert.ok('error' in failed);
      assert.match(
        failed.error,
        /^git diff --name-only failed: fatal: Unable to create '\.git\/index\.lock'/,
      );
      assert.equal(readFileSync(calls, 'utf8').split('\n').filter(Boolean).length, 2, 'tried twice');
      process.env.PATH = realPath;

      // an overlay over a local index of the same commit: opened while git works, then git breaks
      const shared = await openProject({
        root: base,
        create: true,
        userConfig: false,
        overrides: { embed: { provider: 'none' } },
      });
      await indexProject(shared);
      writeFiles(base, { 'src/a.ts': 'export const alpha = "local words";\n' });
      const notices: string[] = [];
      const overlay = await openOverlay(shared, {
        root: base,
        refreshSeconds: 0,
        onNotice: (m) => notices.push(m),
      });
      assert.ok(overlay);
      try {
        assert.equal((await overlay.search('local words')).stale, undefined);
        process.env.PATH = `${fakeBin}:${realPath}`;
        const res = await overlay.search('local words');
        assert.match(
          res.stale ?? '',
          /local changes not applied since the last sync: git diff --name-only failed/,
        );
        process.env.PATH = realPath;
        assert.equal((await overlay.search('local words')).stale, undefined, 'said until git reads again');
      } finally {
        process.env.PATH = realPath;
        await overlay.close();
      }
      // opening while git fails: one line saying so, not "this checkout does not have the commit", and never taken
      // for "no local changes": the overlay opens with the files git named last (kept by the session above), says
      // so on every answer, and reads git again on the next call
      const again = await openProject({
        root: base,
        userConfig: false,
        overrides: { embed: { provider: 'none' } },
      });
      process.env.PATH = `${fakeBin}:${realPath}`;
      const opened = await openOverlay(again, { root: base, onNotice: (m) => notices.push(m) });
      assert.ok(opened, 'an overlay, not the shared index as it is');
      try {
        assert.match(
          notices.at(-1)!,
          /^local changes not applied: git diff --name-only failed: .*; searching this working tree over .*, with the 1 file last known to differ/,
        );
        assert.ok(!notices.some((m) => /does not have/.test(m)));
        assert.deepEqual(opened.overlay.changed, ['src/a.ts']);
        const during = await opened.search('local words');
        assert.match(
          during.stale ?? '',
          /^local changes not read: git diff --name-only failed: .*results may be stale/,
        );
        assert.equal(during.results[0]?.path, 'src/a.ts');
        assert.match((await opened.status()).overlay?.stale ?? '', /^local changes not read/);
        process.env.PATH = realPath;
        assert.equal((await opened.search('local words')).stale, undefined, 'read again on the next call');
        assert.equal((await opened.status()).overlay?.stale, undefined);
      } finally {
        process.env.PATH = realPath;
        await opened.close();
      }
    } finally {
      process.env.PATH = realPath;
      removeTree(base);
      removeTree(fakeBin);
    }
  });
});
