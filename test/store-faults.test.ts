import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ChromaClient } from 'chromadb';
import pg from 'pg';
import { isQuarryError } from '../src/errors.ts';
import { indexProject, openProject, searchProject } from '../src/project/local/index.ts';
import { bigTree, CLI, copyPolyglot, makeTree, removeTree, runCli, spawnCli } from './helpers.ts';
import { freshRepo, openFor, snapshot, storeEnv } from './store-guarantees.ts';
import { freePort, startServer, type TestServer } from './store-servers.ts';

const TSX = new URL(import.meta.resolve('tsx')).pathname;
const trees: string[] = [];
after(() => trees.forEach(removeTree));

const oneLine = (s: string) => s.trim().split('\n').length === 1;

describe('PostgreSQL: bad input and faults', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer('postgres');
  });
  after(async () => server?.dispose());

  it('says in one line when the server cannot be reached, refuses the user, or lacks the database', async () => {
    const root = copyPolyglot(trees);
    const port = await freePort();
    const down = runCli([
      'search',
      'x',
      '--root',
      root,
      '--store',
      `postgres://quarry@127.0.0.1:${port}/postgres`,
    ]);
    assert.equal(down.code, 6, down.stderr);
    assert.ok(oneLine(down.stderr), down.stderr);
    assert.match(
      down.stderr,
      /cannot reach PostgreSQL at postgres:\/\/quarry@127\.0\.0\.1:\d+\/postgres .*start the server/,
    );

    const who = runCli(['index', root, '--store', server.url.replace('quarry@', 'intruder:secret@')]);
    assert.equal(who.code, 2, who.stderr);
    assert.ok(oneLine(who.stderr), who.stderr);
    assert.match(who.stderr, /refused the credentials/);
    assert.doesNotMatch(who.stderr, /secret/, 'the password is never printed');

    const nodb = runCli(['index', root, '--store', server.url.replace(/\/postgres$/, '/nosuchdb')]);
    assert.equal(nodb.code, 2, nodb.stderr);
    assert.ok(oneLine(nodb.stderr), nodb.stderr);
    assert.match(nodb.stderr, /nosuchdb.*create it/);

    const unknown = runCli(['search', 'x', '--root', root, '--store', server.url, '--repo', 'never-indexed']);
    assert.equal(unknown.code, 3, unknown.stderr);
    assert.match(unknown.stderr, /no (quarry )?index .*run `quarry index/);
  });

  it('refuses a server without pgvector, and writes nothing', async () => {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query('CREATE DATABASE novector');
    await admin.end();
    // the extension's files are out of the server's reach (PostgreSQL 18's extension_control_path)
    const url = `${server.url.replace(/\/postgres$/, '/novector')}?options=${encodeURIComponent('-c extension_control_path=/nonexistent')}`;
    const root = copyPolyglot(trees);
    const r = runCli(['index', root, '--store', url]);
    assert.equal(r.code, 2, r.stderr);
    assert.ok(oneLine(r.stderr), r.stderr);
    assert.match(r.stderr, /has no pgvector extension.*install pgvector/);
    const check = new pg.Client({ connectionString: server.url.replace(/\/postgres$/, '/novector') });
    await check.connect();
    const tables = await check.query(
      `SELECT count(*)::int AS n FROM pg_tables WHERE tablename LIKE 'quarry%'`,
    );
    await check.end();
    assert.equal(tables.rows[0].n, 0, 'nothing half-written');
  });

  it('refuses a vector that does not fit the table, in one line, and stores nothing of it', async () => {
    const root = copyPolyglot(trees);
    const repo = freshRepo();
    const project = await openFor({ name: 'postgres', url: () => server.url }, root, repo);
    await indexProject(project, { embed: false });
    const v = project.store.vectors!;
    await v.useEmbedder('three-dims', 3);
    const [file] = await v.pendingFiles(2, 1);
    const chunks = (await project.store.getFilesChunks([file!.path])).get(file!.path)!;
    await assert.rejects(
      v.putChunkVectors([
        {
          path: file!.path,
          hash: file!.hash,
          vectors: [{ chunkId: chunks[0]!.chunkId, vector: new Float32Array(2) }],
        },
      ]),
      (err: unknown) => {
        assert.ok(isQuarryError(err) && err.code === 'BAD_INPUT', String(err));
        assert.ok(oneLine((err as Error).message));
        assert.match((err as Error).message, /does not fit.*quarry index/);
        return true;
      },
    );
    const status = await v.status();
    assert.deepEqual([status.refined, status.chunkVectors], [0, 0], 'the whole batch rolled back');
    await project.close();
  });

  it('resumes after the server dies mid-index, and ends equal to a clean build', async () => {
    const big = bigTree(700, trees);
    const repo = freshRepo();
    const env = { ...storeEnv({ name: 'postgres', url: () => server.url }, repo), QUARRY_EMBED: 'none' };
    const child = spawnCli(['index', big, '--quiet'], { env });
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    const probe = new pg.Client({ connectionString: server.url });
    await probe.connect();
    probe.on('error', () => {});
    const committed = async () =>
      Number(
        (
          await probe.query(
            `SELECT count(*) AS n FROM quarry_files f JOIN quarry_repos r ON r.id = f.repo WHERE r.name = $1`,
            [repo],
          )
        ).rows[0].n,
      );
    for (let i = 0; i < 1200; i++) {
      try {
        if ((await committed()) >= 50) break;
      } catch {
        // the schema is being made
      }
      await sleep(25);
    }
    await probe.end().catch(() => {});
    await server.stop(); // an immediate shutdown, mid-transaction
    const code = await exited;
    await server.restart();
    assert.notEqual(code, 0);
    assert.ok(oneLine(stderr), stderr);
    assert.match(
      stderr,
      /cannot reach PostgreSQL at|PostgreSQL server at .* went away .*the next run resumes/,
    );
    const resumed = runCli(['index', big, '--json'], { env });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.ok(JSON.parse(resumed.stdout).added < 700, 'it resumed rather than starting over');

    const clean = makeTree({});
    trees.push(clean);
    cpSync(big, clean, { recursive: true, filter: (src) => !src.endsWith('.quarry') });
    const cleanRepo = freshRepo();
    assert.equal(runCli(['index', clean, '--quiet'], { env: { ...env, QUARRY_REPO: cleanRepo } }).code, 0);
    const t = { name: 'postgres', url: () => server.url };
    const a = await openFor(t, big, repo, false);
    const b = await openFor(t, clean, cleanRepo, false);
    assert.deepEqual(await snapshot(a.store), await snapshot(b.store));
    assert.deepEqual(await a.store.check(), [], 'the driver’s check finds the resumed index sound');
    await a.close();
    await b.close();
    // a BM25 counter that disagrees with its rows is found by the check, and by quarry doctor
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query(`UPDATE quarry_repos SET chunk_docs = chunk_docs + 5 WHERE name = $1`, [repo]);
    await admin.end();
    const c = await openFor(t, big, repo, false);
    const problems = await c.store.check();
    await c.close();
    assert.ok(
      problems.some((p) => /BM25 counts \d+ chunk documents but the rows hold \d+/.test(p)),
      problems.join('\n'),
    );
    const doctor = runCli(['doctor', '--root', big], { env });
    assert.equal(doctor.code, 6, doctor.stdout + doctor.stderr);
    assert.match(doctor.stdout, /problems? in the index: BM25 counts/);
  });

  it('serves search, ask --dry-run, the HTTP API and MCP from PostgreSQL as from SQLite', async () => {
    const root = copyPolyglot(trees);
    const env = { QUARRY_STORE_URL: server.url, QUARRY_REPO: freshRepo() };
    assert.equal(runCli(['index', root, '--quiet'], { env }).code, 0);
    const local = copyPolyglot(trees);
    assert.equal(runCli(['index', local, '--quiet']).code, 0);

    const q = 'how is the config file parsed';
    const remote = runCli(['search', q, '--json', '--root', root], { env });
    const base = runCli(['search', q, '--json', '--root', local]);
    assert.equal(remote.code, 0, remote.stderr);
    const strip = (s: string) =>
      JSON.parse(s).results.map((r: { path: string; score: number }) => [r.path, r.score]);
    assert.deepEqual(strip(remote.stdout), strip(base.stdout));

    const askRemote = runCli(['ask', '--dry-run', q, '--root', root], { env });
    const askLocal = runCli(['ask', '--dry-run', q, '--root', local]);
    assert.equal(askRemote.code, 0, askRemote.stderr);
    assert.equal(askRemote.stdout, askLocal.stdout, 'the same prompt from either store');

    await servesPanelAndAgents(root, env);
  });

  it('with its store down, serve answers 503 in its own words, with no store URL, and the client says so', async () => {
    // regression: 500 with user@host:port/db in the body, and the remote CLI then said "cannot reach quarry"
    const root = copyPolyglot(trees);
    const env = { QUARRY_STORE_URL: server.url, QUARRY_REPO: freshRepo(), QUARRY_EMBED: 'none' };
    assert.equal(runCli(['index', root, '--quiet'], { env }).code, 0);
    const port = await freePort();
    const serve = spawnCli(['serve', '--root', root, '--port', String(port), '--no-watch'], { env });
    const base = `http://127.0.0.1:${port}`;
    try {
      let up = false;
      for (let i = 0; i < 200 && !up; i++) {
        up = await fetch(`${base}/api/status`).then(
          (r) => r.ok,
          () => false,
        );
        if (!up) await sleep(100);
      }
      assert.ok(up, 'serve started');
      await server.stop();
      const res = await fetch(`${base}/api/search?q=parse%20config&mode=lexical`);
      const body = (await res.json()) as { error: string };
      assert.equal(res.status, 503, body.error);
      assert.match(body.error, /the server's store/);
      assert.doesNotMatch(body.error, /127\.0\.0\.1|quarry@|postgres:\/\//);
      const cli = runCli(['--remote', base, 'search', 'parse config', '--mode', 'lexical'], { cwd: root });
      assert.equal(cli.code, 6, cli.stderr);
      assert.doesNotMatch(cli.stderr, /cannot reach quarry/);
      assert.match(
        cli.stderr,
        /^quarry: http:\/\/127\.0\.0\.1:\d+\/? is up, but the store it reads is not \(/m,
      );
    } finally {
      serve.kill('SIGTERM');
      await server.restart();
    }
  });
});

/** `quarry serve`'s API and `quarry mcp` over stdio, both on the store `env` names, answer a search. */
async function servesPanelAndAgents(root: string, env: Record<string, string>): Promise<void> {
  // the web panel's API
  const port = await freePort();
  const serve = spawnCli(['serve', '--root', root, '--port', String(port), '--no-watch'], { env });
  try {
    let body: { results?: Array<{ path: string }> } | undefined;
    for (let i = 0; i < 200 && !body; i++) {
      try {
        const res = await fetch(
          `http://127.0.0.1:${port}/api/search?q=${encodeURIComponent('parse config')}`,
        );
        if (res.ok) body = (await res.json()) as typeof body;
      } catch {
        await sleep(100);
      }
    }
    assert.equal(body?.results?.[0]?.path, 'config_loader.py');
    const status = (await (await fetch(`http://127.0.0.1:${port}/api/status`)).json()) as { files: number };
    assert.equal(status.files, 17);
  } finally {
    serve.kill('SIGTERM');
  }

  // an agent over MCP
  const client = new McpClient({ name: 'quarry-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['--import', TSX, CLI, '--root', root, 'mcp', '--no-watch'],
      env: { ...(process.env as Record<string, string>), QUARRY_EMBED: 'none', ...env },
      stderr: 'pipe',
    }),
  );
  try {
    const r = (await client.callTool({ name: 'search_code', arguments: { query: 'parse config' } })) as {
      content: Array<{ text: string }>;
    };
    assert.match(r.content.map((c) => c.text).join(''), /config_loader\.py/);
  } finally {
    await client.close();
  }
}

describe('Chroma: bad input, foreign collections, and hybrid search equal to SQLite’s', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer('chroma');
  });
  after(async () => server?.dispose());

  it('says in one line when the server cannot be reached', async () => {
    const root = copyPolyglot(trees);
    const port = await freePort();
    const r = runCli(['index', root, '--store', `chroma://127.0.0.1:${port}`]);
    assert.equal(r.code, 6, r.stderr);
    assert.ok(oneLine(r.stderr), r.stderr);
    assert.match(r.stderr, /cannot reach the Chroma server at chroma:\/\/127\.0\.0\.1:\d+.*chroma run/);
  });

  it('indexes, searches, assembles an ask prompt, serves the panel and MCP as the SQLite default does', async () => {
    const root = copyPolyglot(trees);
    const local = copyPolyglot(trees);
    const env = { QUARRY_STORE_URL: server.url, QUARRY_REPO: freshRepo() };
    const r = runCli(['index', root, '--json'], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(runCli(['index', local, '--quiet']).code, 0);
    const q = 'how is the config file parsed';
    const strip = (out: string) =>
      JSON.parse(out).results.map((x: { path: string; score: number }) => [x.path, x.score]);
    const there = runCli(['search', q, '--json', '--root', root], { env });
    assert.equal(there.code, 0, there.stderr);
    assert.deepEqual(strip(there.stdout), strip(runCli(['search', q, '--json', '--root', local]).stdout));
    assert.equal(
      runCli(['ask', '--dry-run', q, '--root', root], { env }).stdout,
      runCli(['ask', '--dry-run', q, '--root', local]).stdout,
    );
    await servesPanelAndAgents(root, env);
  });

  it('keeps each key apart: --repo selects that key alone, and a second key leaves the first intact', async () => {
    // regression: one SQLite side per checkout, so --repo other searched this checkout's lexical rows, and indexing
    // under a second key orphaned the first key's collections
    const root = copyPolyglot(trees);
    const [k1, k2] = [freshRepo(), freshRepo()];
    const at = (repo: string) => ({ QUARRY_STORE_URL: server.url, QUARRY_REPO: repo, QUARRY_EMBED: 'none' });
    assert.equal(runCli(['index', root, '--quiet'], { env: at(k1) }).code, 0);
    const never = runCli(['search', 'config', '--root', root], { env: at(k2) });
    assert.equal(never.code, 3, `a key never indexed here has no index here: ${never.stdout}${never.stderr}`);
    assert.equal(runCli(['index', root, '--quiet'], { env: at(k2) }).code, 0);
    for (const k of [k1, k2]) {
      const r = runCli(['search', 'parse config', '--json', '--root', root], { env: at(k) });
      assert.equal(r.code, 0, `${k}: ${r.stderr}`);
      assert.equal(JSON.parse(r.stdout).results[0].path, 'config_loader.py');
    }
  });

  it('embeds into Chroma, ranks like sqlite-vec, and refuses a collection another embedder or program made', async () => {
    const root = copyPolyglot(trees);
    const local = copyPolyglot(trees);
    const repo = freshRepo();
    const env = {
      QUARRY_STORE_URL: server.url,
      QUARRY_REPO: repo,
      QUARRY_EMBED: 'local',
      QUARRY_OFFLINE: '1',
    };
    const there = await openProject({ root, create: true, userConfig: false, env });
    const here = await openProject({
      root: local,
      create: true,
      userConfig: false,
      env: { QUARRY_EMBED: 'local', QUARRY_OFFLINE: '1' },
    });
    const r1 = await indexProject(there);
    const r2 = await indexProject(here);
    assert.equal(r1.embedding?.refinedFiles, r2.embedding?.refinedFiles);
    const status = await there.store.vectors!.status();
    assert.equal(status.chunkVectors, (await here.store.vectors!.status()).chunkVectors);
    for (const q of ['read settings from a json file', 'start an http server', 'a user record with a name']) {
      const [a, b] = await Promise.all([searchProject(there, q), searchProject(here, q)]);
      assert.equal(a.mode, 'hybrid');
      assert.deepEqual(
        a.results.map((x) => x.path),
        b.results.map((x) => x.path),
        q,
      );
      for (const [i, x] of a.results.entries())
        assert.ok(Math.abs(x.signals.dense - b.results[i]!.signals.dense) < 1e-3, `${q}: cosine agrees`);
    }
    await here.close();
    const embedderId = (await there.store.vectors!.embedder())!.id;
    assert.deepEqual(await there.store.check(), [], 'every file marked embedded has its vectors in Chroma');
    await there.close();

    // tamper: the collection now says another embedder made it
    const client = new ChromaClient({ host: '127.0.0.1', port: server.port });
    const mine = (await client.listCollections()).filter((c) => c.name.startsWith(`quarry-${repo}-`));
    assert.equal(mine.length, 2);
    const chunks = mine.find((c) => c.name.endsWith('-chunks'))!;
    // a vector lost from Chroma behind quarry's back is found by the driver's check
    await chunks.delete({ ids: (await chunks.get({ limit: 1 })).ids });
    const checked = await openProject({ root, userConfig: false, env });
    const problems = await checked.store.check();
    await checked.close();
    assert.deepEqual(problems, ['Chroma lacks 1 vectors of chunks marked embedded']);
    await chunks.modify({ metadata: { quarry_embedder: 'someone-else', quarry_dimension: 768 } });
    const again = await openProject({ root, userConfig: false, env });
    await assert.rejects(
      searchProject(again, 'read settings'),
      /holds vectors of someone-else .*not local:.*quarry index/,
    );
    // `quarry index` rebuilds it with quarry's own embedder
    const rebuilt = await indexProject(again);
    assert.equal(rebuilt.embedding?.reset, true);
    assert.equal((await again.store.vectors!.embedder())?.id, embedderId);
    await again.close();

    // a collection by that name that another program made is refused, never used or deleted
    const name = chunks.name;
    await client.deleteCollection({ name });
    await client.createCollection({
      name,
      metadata: { owner: 'another-tool' },
      embeddingFunction: null as never,
    });
    const third = await openProject({ root, userConfig: false, env });
    await assert.rejects(
      searchProject(third, 'read settings'),
      /was not made by quarry: delete it, or pick another name with --repo/,
    );
    await assert.rejects(indexProject(third), /was not made by quarry/);
    assert.equal(
      (await client.getCollection({ name, embeddingFunction: null as never })).metadata?.owner,
      'another-tool',
    );
    await third.close();
  });
});
