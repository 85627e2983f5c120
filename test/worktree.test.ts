// Every worktree, one index: a linked git worktree of an indexed repository is an overlay on the main tree's index
// (only what differs is indexed there), and answers as a full index of that worktree would.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, makeTree, removeTree, runCli } from './helpers.ts';

const TSX = new URL(import.meta.resolve('tsx')).pathname;

const env = { QUARRY_EMBED: 'static' };

describe('a git worktree of an indexed repository', () => {
  let main: string;
  let wt: string;
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', ...args], { cwd, stdio: 'pipe' });
  before(() => {
    main = makeTree({
      'src/ledger.ts': 'export function postEntry(amount: number) {\n  return amount * 2;\n}\n',
      'src/audit.ts': 'export function auditTrail() {\n  return "trail";\n}\n',
      'src/old.ts': 'export function retiredHelper() {\n  return 0;\n}\n',
    });
    git(main, 'init', '-q');
    git(main, 'add', '-A');
    git(main, 'commit', '-qm', 'one');
    writeFileSync(join(main, 'src/report.ts'), 'export function quarterlyReport() {\n  return 4;\n}\n');
    git(main, 'add', '-A');
    git(main, 'commit', '-qm', 'two');
    assert.equal(runCli(['index', '--quiet'], { cwd: main, env }).code, 0);
    wt = `${main}-wt`;
    git(main, 'worktree', 'add', '-q', wt, 'HEAD~1');
    // this worktree's own edits: one file changed, one added, one deleted
    writeFileSync(
      join(wt, 'src/ledger.ts'),
      'export function postEntry(amount: number) {\n  return reconcileLedger(amount);\n}\n',
    );
    writeFileSync(join(wt, 'src/branchOnly.ts'), 'export function branchOnlyFeature() {\n  return 1;\n}\n');
    rmSync(join(wt, 'src/old.ts'));
  });
  after(() => {
    removeTree(wt);
    removeTree(main);
  });

  it('quarry mcp started in the worktree serves its overlay (no index of its own is made)', async () => {
    const client = new Client({ name: 'quarry-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['--import', TSX, CLI, '--root', wt, 'mcp'],
        env: { ...process.env, ...env, QUARRY_SHARED_CACHE: 'off' } as Record<string, string>,
        stderr: 'pipe',
      }),
    );
    try {
      const res = (await client.callTool({
        name: 'search_code',
        arguments: { query: 'branchOnlyFeature' },
      })) as {
        content: Array<{ text: string }>;
      };
      assert.match(res.content[0]!.text, /src\/branchOnly\.ts/);
    } finally {
      await client.close();
    }
    assert.ok(!existsSync(join(wt, '.quarry', 'index.db')), 'no index of its own');
  });

  it('indexes only what differs, over the main tree index, and answers as a full index of it would', () => {
    const r = runCli(['index'], { cwd: wt, env });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^indexed worktree .* over .*'s index in .*: 4 files differ/m);
    assert.ok(!existsSync(join(wt, '.quarry', 'index.db')), 'no index of its own');
    const ask = (q: string) => JSON.parse(runCli(['search', '--json', q], { cwd: wt, env }).stdout);
    // its own new and changed files are found, marked local; what it deleted and what main added later are not
    assert.equal(ask('branchOnlyFeature').results[0].path, 'src/branchOnly.ts');
    assert.equal(ask('branchOnlyFeature').results[0].side, 'local');
    assert.equal(ask('reconcileLedger').results[0].path, 'src/ledger.ts');
    assert.ok(!ask('retiredHelper').results.some((x: { path: string }) => x.path === 'src/old.ts'));
    assert.ok(!ask('quarterlyReport').results.some((x: { path: string }) => x.path === 'src/report.ts'));
    const queries = ['postEntry amount', 'audit trail', 'branch only feature', 'ledger'];
    const viaOverlay = queries.map((q) =>
      ask(q).results.map((x: { path: string; startLine: number }) => `${x.path}:${x.startLine}`),
    );
    // its status says which chunks it counts and where each chunk vector comes from (issue 65: "chunks 814" stood
    // beside "1617 chunk vectors", the shared index's and this checkout's summed without a word)
    const status = runCli(['status'], { cwd: wt, env });
    assert.equal(status.code, 0, status.stderr);
    const json = JSON.parse(runCli(['status', '--json'], { cwd: wt, env }).stdout);
    const mainVectors = JSON.parse(runCli(['status', '--json'], { cwd: main, env }).stdout).embedding
      .chunkVectors;
    assert.equal(json.overlay.sharedChunkVectors, mainVectors);
    const here = json.embedding.chunkVectors - mainVectors;
    assert.match(status.stdout, /^chunks +\d+ \(this working tree\)$/m);
    assert.match(
      status.stdout,
      new RegExp(
        ` ${json.embedding.chunkVectors} chunk vectors \\(${mainVectors} from the shared index, its versions of the 4 differing files included, and ${here} made here for them\\)`,
      ),
    );
    assert.doesNotMatch(status.stdout, /^updated +never/m);
    // the same answers as a full index of this worktree
    assert.equal(runCli(['index', '--own', '--quiet'], { cwd: wt, env }).code, 0);
    assert.ok(existsSync(join(wt, '.quarry', 'index.db')));
    const viaOwn = queries.map((q) =>
      ask(q).results.map((x: { path: string; startLine: number }) => `${x.path}:${x.startLine}`),
    );
    assert.deepEqual(viaOverlay, viaOwn);
  });
});
