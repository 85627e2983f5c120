// A team's try of the shared index, as issue 22's was made (docs/reliability.md, "A team's index"):
//
//   node --import tsx bench/team-try.ts [--json]
//
// Three repositories in one PostgreSQL (a fresh test server), each holding a marker no other holds and the usual
// secret shapes; `quarry serve --tokens` with a token for one repository and one for all. Then:
//   - every HTTP route and MCP tool that takes a repository, asked for the repository the token may not see in 13
//     spellings, and for its own: any answer holding another repository's marker, or a secret as written, is a leak;
//   - the token revoked: the next request is refused;
//   - another folder indexed under a taken key: refused (exit 2), the key's files untouched; --replace replaces;
//   - `repos rm` while an indexer holds the key's lock: refused (exit 4) and, with --wait, done once it finishes.
// Kills with resume equality are bench/kill-loop.ts's (the table above this one's in docs/reliability.md).

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { makeTree, runCli, spawnCli, waitForOutput } from '../test/helpers.ts';
import { freePort, startServer } from '../test/store-servers.ts';

const json = process.argv.includes('--json');
// every CLI call as a user makes it, away from any checkout (the helpers' environment: no colour, no user config,
// no embedding)
const cli = (args: string[]) => runCli(args, { cwd: tmpdir() });
const AWS = 'AKIAQWERTYUIOPASDFGH';
const GHP = 'ghp_0123456789abcdefghijABCDEFGHIJ012345';
const PASSWORD = 'hunter2-correct-horse';
const repoTree = (marker: string) =>
  makeTree({
    'src/service.py': `def ${marker}_handler(request):\n    """handle a request for ${marker}"""\n    return ${marker}_lookup(request)\n\ndef ${marker}_lookup(request):\n    return request\n`,
    'src/settings.py': `AWS_ACCESS_KEY_ID = "${AWS}"\nGITHUB_TOKEN = "${GHP}"\nDB_PASSWORD = "${PASSWORD}"\n# ${marker} settings\n`,
    'README.md': `# ${marker}\n\nThe ${marker} service handles requests.\n`,
  });

const pg = await startServer('postgres');
const trees: string[] = [];
const names = ['acme/alpha', 'acme/bravo', 'acme/charlie'];
const markers = ['alphamarker', 'bravomarker', 'charliemarker'];
for (const [i, name] of names.entries()) {
  const root = repoTree(markers[i]!);
  trees.push(root);
  execFileSync('git', ['-C', root, 'init', '-q']);
  const r = cli(['index', root, '--store', pg.url, '--repo', name, '--quiet']);
  if (r.code !== 0) throw new Error(r.stderr);
}
const tokens = join(mkdtempSync(join(tmpdir(), 'quarry-try-')), 'tokens.json');
const tokenAlpha = cli(['token', 'add', 'alice', 'acme/alpha', '--tokens', tokens]).stdout.trim();
const tokenAll = cli(['token', 'add', 'ci', '--all', '--tokens', tokens]).stdout.trim();
const port = await freePort();
const server = spawnCli(
  ['serve', '--no-watch', '--store', pg.url, '--tokens', tokens, '--port', String(port)],
  { cwd: tmpdir() },
);
await waitForOutput(server, /quarry panel:/);
const base = `http://127.0.0.1:${port}`;

// the spellings a client might try for a repository it may not read (bravo), and what a wildcard may mean
const SPELLINGS = [
  'acme/bravo',
  'ACME/BRAVO',
  'acme/bravo/',
  ' acme/bravo',
  'acme%2Fbravo',
  'acme/./bravo',
  'acme//bravo',
  '*',
  'acme/*',
  '../acme/bravo',
  'acme/bravo\u0000',
  'acme\\bravo',
  'bravo',
];
const leaksIn = (text: string, own: string) => {
  const found: string[] = [];
  for (const m of markers) if (m !== own && text.includes(m)) found.push(m);
  for (const s of [AWS, GHP, PASSWORD]) if (text.includes(s)) found.push('secret as written');
  return found;
};

type Call = { face: string; run: (repo: string) => Promise<string> };
const http = (token: string) => async (method: string, path: string, repo: string, body?: object) => {
  const sep = path.includes('?') ? '&' : '?';
  const url = body ? `${base}${path}` : `${base}${path}${sep}repo=${encodeURIComponent(repo)}`;
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify({ ...body, repo }) } : {}),
  });
  return `${res.status} ${await res.text()}`;
};
const mcpClient = async (token: string) => {
  const client = new Client({ name: 'team-try', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
};
const vector = Array.from({ length: 384 }, (_, i) => Math.sin(i));
function calls(token: string, mcp: Client): Call[] {
  const h = http(token);
  const tool = (name: string, args: object) => async (repo: string) => {
    const r = await mcp.callTool({ name, arguments: { ...args, repo } });
    return JSON.stringify(r);
  };
  return [
    { face: 'GET /api/status', run: (r) => h('GET', '/api/status', r) },
    { face: 'GET /api/search', run: (r) => h('GET', '/api/search?q=handler%20settings%20password', r) },
    { face: 'GET /api/file', run: (r) => h('GET', '/api/file?path=src/settings.py', r) },
    { face: 'GET /api/definitions', run: (r) => h('GET', '/api/definitions?name=handler', r) },
    { face: 'GET /api/references', run: (r) => h('GET', '/api/references?name=request', r) },
    { face: 'GET /api/outline', run: (r) => h('GET', '/api/outline?path=src/service.py', r) },
    { face: 'GET /api/map', run: (r) => h('GET', '/api/map?tokens=2000', r) },
    {
      face: 'POST /api/context',
      run: (r) => h('POST', '/api/context', r, { question: 'what are the settings?' }),
    },
    {
      face: 'POST /api/route',
      run: (r) => h('POST', '/api/route', r, { question: 'list the functions in src/service.py' }),
    },
    {
      face: 'POST /api/grep',
      run: (r) => h('POST', '/api/grep', r, { pattern: 'marker|AKIA|ghp_|PASSWORD' }),
    },
    {
      face: 'POST /api/nearest',
      run: (r) => h('POST', '/api/nearest', r, { embedder: 'x', vector, level: 'chunks', limit: 10 }),
    },
    { face: 'MCP search_code', run: tool('search_code', { query: 'handler settings password' }) },
    { face: 'MCP grep', run: tool('grep', { pattern: 'marker|AKIA|ghp_|PASSWORD' }) },
    { face: 'MCP get_context', run: tool('get_context', { question: 'what are the settings?' }) },
    { face: 'MCP find_symbol', run: tool('find_symbol', { name: 'handler' }) },
    { face: 'MCP list_symbols', run: tool('list_symbols', { path: 'src/service.py' }) },
    { face: 'MCP read_file', run: tool('read_file', { path: 'src/settings.py' }) },
    { face: 'MCP repo_map', run: tool('repo_map', { tokens: 2000 }) },
    { face: 'MCP index_status', run: tool('index_status', {}) },
    { face: 'MCP nearest_vectors', run: tool('nearest_vectors', { embedder: 'x', vector, limit: 10 }) },
  ];
}

const rows: Array<{
  token: string;
  requests: number;
  leaks: number;
  examples: string[];
  /** Calls for the token's own repository that answered with its content (the control: the calls work). */
  ownAnswered: string;
}> = [];
for (const [label, token, own0] of [
  ['alice (acme/alpha only)', tokenAlpha, 'alphamarker'],
  ['ci (every repository)', tokenAll, ''],
] as const) {
  const mine: string = own0;
  const mcp = await mcpClient(token);
  let requests = 0;
  let leaks = 0;
  let own = 0;
  const examples: string[] = [];
  const list = calls(token, mcp);
  for (const call of list) {
    // alice: bravo in every spelling, and her own repository (which must show its own marker and no secret);
    // ci: every spelling too (a wildcard and a real name may show any marker, never a secret as written)
    for (const repo of [...SPELLINGS, 'acme/alpha']) {
      requests++;
      const text = await call.run(repo).catch((e: Error) => `error ${e.message}`);
      const found = leaksIn(text, mine).filter((f) => mine || f === 'secret as written');
      if (repo === 'acme/alpha' && text.includes('alphamarker')) own++;
      if (found.length) {
        leaks++;
        if (examples.length < 5)
          examples.push(`${call.face} repo=${JSON.stringify(repo)}: ${found.join(', ')}`);
      }
    }
  }
  await mcp.close();
  rows.push({ token: label, requests, leaks, examples, ownAnswered: `${own} of ${list.length}` });
}

// revocation: the next request after `token rm` is refused
cli(['token', 'rm', 'alice', '--tokens', tokens]);
const revoked = (await http(tokenAlpha)('GET', '/api/status', 'acme/alpha')).split(' ')[0];

// a key taken by another source
const other = makeTree({ 'other.py': 'def other_project():\n    return 1\n' });
trees.push(other);
const before = cli(['files', '--store', pg.url, '--repo', 'acme/alpha']).stdout;
const collision = cli(['index', other, '--store', pg.url, '--repo', 'acme/alpha', '--quiet']);
const after = cli(['files', '--store', pg.url, '--repo', 'acme/alpha']).stdout;

// repos rm while an indexer holds the key: a big tree indexed in the background
const big = makeTree(
  Object.fromEntries(
    Array.from({ length: 3000 }, (_, i) => [
      `m${i}.ts`,
      `export function f${i}(x: number) {\n  return x * ${i};\n}\n`.repeat(20),
    ]),
  ),
);
trees.push(big);
const indexer = spawnCli(['index', big, '--store', pg.url, '--repo', 'acme/big', '--quiet'], {
  cwd: tmpdir(),
});
const indexerDone = new Promise<number | null>((r) => indexer.on('exit', r));
let rmBusy: { code: number | null; stderr: string } = { code: null, stderr: '' };
for (let i = 0; i < 200; i++) {
  await new Promise((r) => setTimeout(r, 250));
  const st = cli(['repos', '--store', pg.url, '--json']);
  if (st.stdout.includes('acme/big')) {
    rmBusy = cli(['repos', 'rm', 'acme/big', '--store', pg.url]);
    break;
  }
}
const rmWait = cli(['repos', 'rm', 'acme/big', '--store', pg.url, '--wait']);
const indexerExit = await indexerDone;
const left = cli(['repos', '--store', pg.url, '--json']).stdout.includes('acme/big');

const out = {
  routes: calls('', null as unknown as Client).length,
  spellings: SPELLINGS.length,
  tokens: rows,
  revokedStatus: Number(revoked),
  collision: { exit: collision.code, message: collision.stderr.trim(), filesUnchanged: before === after },
  rmWhileIndexing: { exit: rmBusy.code, message: rmBusy.stderr.trim() },
  rmWait: { exit: rmWait.code, indexerExit, repositoryGone: !left },
};
server.kill('SIGTERM');
await pg.dispose();
for (const t of trees) rmSync(t, { recursive: true, force: true });
rmSync(join(tokens, '..'), { recursive: true, force: true });
console.log(json ? JSON.stringify(out) : JSON.stringify(out, null, 2));
writeFileSync(join(tmpdir(), 'quarry-team-try.json'), JSON.stringify(out));
