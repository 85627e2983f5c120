import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { acquireWriterLock } from '../src/store/lock.ts';
import { indexPaths } from '../src/workspace/root.ts';
import { CLI, copyPolyglot, indexLexically, makeTree, removeTree, runCli, waitForOutput } from './helpers.ts';

const TSX = new URL(import.meta.resolve('tsx')).pathname;
const ENV = { ...process.env, QUARRY_EMBED: 'none', NO_COLOR: '1' } as Record<string, string>;

type Text = { content: Array<{ type: string; text: string }>; isError?: boolean };
const textOf = (r: unknown) => (r as Text).content.map((c) => c.text).join('');
// the structured content of a tool's answer (the text is compact, for the model)
/** Asks for the answer's facts as structured content, as quarry's own remote client does. */
const STRUCTURED = { 'quarry/structured': true };
// biome-ignore lint/suspicious/noExplicitAny: tests read fields of the answer
const dataOf = (r: unknown): any => (r as { structuredContent: unknown }).structuredContent;

async function until<T>(fn: () => Promise<T | undefined>, what: string, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await fn();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never happened: ${what}`);
}

describe('quarry mcp over stdio, driven by the SDK’s own client', () => {
  let root: string;
  let client: Client;
  before(async () => {
    root = copyPolyglot([]);
    client = new Client({ name: 'quarry-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['--import', TSX, CLI, '--root', root!, 'mcp'],
        env: ENV,
        stderr: 'pipe',
      }),
    );
  });
  after(async () => {
    await client.close();
    removeTree(root);
  });

  it('lists its tools with schemas and descriptions', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [
      'find_symbol',
      'get_context',
      'grep',
      'index_status',
      'list_repos',
      'list_symbols',
      'nearest_vectors',
      'read_file',
      'reindex',
      'repo_map',
      'search_code',
    ]);
    const search = tools.find((t) => t.name === 'search_code')!;
    assert.ok(search.description!.length > 80);
    assert.deepEqual(search.inputSchema.required, ['query']);
    assert.ok('top_k' in (search.inputSchema.properties as object));
  });

  it('indexes on start; search_code, get_context, find_symbol, list_symbols and index_status answer', async () => {
    await until(async () => {
      const s = dataOf(await client.callTool({ name: 'index_status', arguments: {}, _meta: STRUCTURED }));
      return s.files > 0 && s.reindexing === null ? s : undefined;
    }, 'the initial index');
    const search = dataOf(
      await client.callTool({
        name: 'search_code',
        arguments: { query: 'Registry register', top_k: 3 },
        _meta: STRUCTURED,
      }),
    );
    assert.ok(search.results.length >= 1 && search.results.length <= 3, JSON.stringify(search));
    assert.equal(search.results[0].path, 'lib.rs');
    assert.ok(
      search.results.every(
        (r: { startLine: number; snippet: string }) => r.startLine > 0 && typeof r.snippet === 'string',
      ),
    );

    const ctx = textOf(
      await client.callTool({
        name: 'get_context',
        arguments: { question: 'how does the registry register a name', budget: 2000 },
      }),
    );
    assert.match(ctx, /^\[1\] \S+:\d+-\d+$/m);
    assert.match(ctx, /Question: how does the registry register a name/);

    const sym = dataOf(
      await client.callTool({
        name: 'find_symbol',
        arguments: { name: 'Registry.register' },
        _meta: STRUCTURED,
      }),
    );
    assert.equal(sym.definitions[0].path.endsWith('lib.rs'), true);
    assert.equal(sym.definitions[0].container, 'Registry');
    // a name used but defined nowhere here (HashMap, from Rust's library): a page past its last reference is empty,
    // not "nothing named HashMap"
    const used = dataOf(
      await client.callTool({ name: 'find_symbol', arguments: { name: 'HashMap' }, _meta: STRUCTURED }),
    );
    assert.equal(used.definitions.length, 0);
    assert.ok(used.referenceFiles >= 1 && !used.note, JSON.stringify(used));
    const past = (await client.callTool({
      name: 'find_symbol',
      arguments: { name: 'HashMap', offset: used.referenceFiles + 5, limit: 1 },
    })) as Text;
    assert.doesNotMatch(textOf(past), /nothing named HashMap/);
    assert.match(textOf(past), /references: 1 file|references: \d+ files/);
    // a page of a name used in several files says how many files and lines there are in all, not "of more" (issue 65)
    const page = await client.callTool({ name: 'find_symbol', arguments: { name: 'name', limit: 2 } });
    const all = dataOf(
      await client.callTool({ name: 'find_symbol', arguments: { name: 'name' }, _meta: STRUCTURED }),
    );
    assert.ok(all.referenceFiles > 2, JSON.stringify(all));
    const uses = all.references.reduce((n: number, r: { lines: number[] }) => n + r.lines.length, 0);
    assert.match(
      textOf(page),
      new RegExp(
        `^references: ${all.referenceFiles} files, ${uses} lines in all \\(files 1-2 shown\\)$`,
        'm',
      ),
    );
    assert.doesNotMatch(textOf(page), /of more/);

    const list = dataOf(
      await client.callTool({ name: 'list_symbols', arguments: { path: 'lib.rs' }, _meta: STRUCTURED }),
    );
    assert.ok(list.symbols.some((s: { name: string }) => s.name === 'checksum'));
    // a top-level variable the definitions already hold is listed once (issue 65: it was also an "expression")
    for (const v of list.variables as Array<{ name: string; line: number }>)
      assert.ok(
        !list.symbols.some(
          (s: { name: string; startLine: number }) => s.name === v.name && s.startLine === v.line,
        ),
        `${v.name} listed twice`,
      );
    const missing = (await client.callTool({ name: 'list_symbols', arguments: { path: 'nope.rs' } })) as Text;
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /nope\.rs is not in the index/);
    // the hint is a command that works without a query (`search --files` needs one)
    assert.match(textOf(missing), /`quarry files` lists them/);
    assert.doesNotMatch(textOf(missing), /search --files/);
  });

  it('answers agents in compact text with numbered lines; instructions, annotations and repo_map', async () => {
    assert.match(client.getInstructions() ?? '', /Use quarry's grep tool for an exact string/);
    const tools = (await client.listTools()).tools;
    for (const t of tools) {
      assert.equal(typeof t.annotations?.readOnlyHint, 'boolean', `${t.name} has no readOnlyHint`);
      assert.equal(t.annotations!.readOnlyHint, t.name !== 'reindex', t.name);
    }
    const r = await client.callTool({
      name: 'search_code',
      arguments: { query: 'Registry register', top_k: 2 },
    });
    const text = textOf(r);
    assert.match(text, /^\d+ results? \(\w+\) for "Registry register":/);
    assert.match(text, /^lib\.rs:\d+-\d+ .*\(score [\d.]+\)$/m);
    assert.match(text, /^\s*\d+ {2}.*Registry/m, 'snippet lines are numbered');
    assert.doesNotMatch(text, /^\s*[{[]/, 'not JSON');
    const sym = textOf(
      await client.callTool({ name: 'find_symbol', arguments: { name: 'Registry.register' } }),
    );
    assert.match(sym, /^lib\.rs:\d+-\d+ \w+ Registry\.register$/m);
    const read = textOf(
      await client.callTool({ name: 'read_file', arguments: { path: 'lib.rs', start: 2, end: 4 } }),
    );
    assert.match(read, /^lib\.rs:2-4 of \d+\n2 {2}/);
    // past the end: an error that says how long the file is, not an empty page (issue 65)
    const past = (await client.callTool({
      name: 'read_file',
      arguments: { path: 'lib.rs', start: 5000 },
    })) as Text;
    assert.equal(past.isError, true);
    assert.match(textOf(past), /lib\.rs has \d+ lines: start at a line from 1 to \d+/);
    // every repository the server holds (here one), each result labelled with its repository
    const every = dataOf(
      await client.callTool({
        name: 'search_code',
        arguments: { query: 'Registry register', top_k: 2, repo: '*' },
        _meta: STRUCTURED,
      }),
    );
    assert.equal(every.results[0].path, 'lib.rs', JSON.stringify(every));
    const map = await client.callTool({ name: 'repo_map', arguments: { budget: 300 }, _meta: STRUCTURED });
    assert.ok(dataOf(map).files.length >= 1);
    // an agent that does not ask gets the text alone: the facts once, not twice
    const plain = await client.callTool({ name: 'repo_map', arguments: { budget: 300 } });
    assert.equal((plain as { structuredContent?: unknown }).structuredContent, undefined);
    assert.equal(textOf(plain), textOf(map));
    assert.match(textOf(map), /^\S+\.\w+:\n\s*\d+│\S/m);
  });

  it('a call may name another indexed project by its absolute root; relative roots and unindexed folders are refused', async () => {
    const other = copyPolyglot([]);
    writeFileSync(join(other, 'only_here.py'), 'def kestrel_lantern():\n    return 1\n');
    await indexLexically(other);
    try {
      const r = dataOf(
        await client.callTool({
          name: 'search_code',
          arguments: { query: 'kestrel_lantern', root: other },
          _meta: STRUCTURED,
        }),
      );
      assert.equal(r.results[0].path, 'only_here.py');
      const here = dataOf(
        await client.callTool({
          name: 'search_code',
          arguments: { query: 'kestrel_lantern' },
          _meta: STRUCTURED,
        }),
      );
      assert.ok(!here.results.some((x: { path: string }) => x.path === 'only_here.py'));
      const rel = (await client.callTool({
        name: 'search_code',
        arguments: { query: 'x', root: 'relative/dir' },
      })) as Text;
      assert.equal(rel.isError, true);
      assert.match(textOf(rel), /absolute path/);
      const bare = makeTree({ 'a.py': 'x = 1\n' });
      const none = (await client.callTool({
        name: 'search_code',
        arguments: { query: 'x', root: bare },
      })) as Text;
      assert.equal(none.isError, true);
      assert.match(textOf(none), /no index/);
      removeTree(bare);
    } finally {
      removeTree(other);
    }
  });

  it('rejects arguments that break the schema, with a message', async () => {
    const r = (await client.callTool({ name: 'search_code', arguments: { query: 'x', top_k: 0 } })) as Text;
    assert.equal(r.isError, true);
    assert.match(textOf(r), /top_k/);
    const r2 = (await client.callTool({ name: 'search_code', arguments: {} })) as Text;
    assert.equal(r2.isError, true);
    // an argument the tool does not take is refused with the ones it does (regression: dropped without a word)
    const r3 = (await client.callTool({
      name: 'grep',
      arguments: { pattern: 'Router', fixed_strings: true },
    })) as Text;
    assert.equal(r3.isError, true);
    assert.match(textOf(r3), /grep takes no argument "fixed_strings": its arguments are pattern, fixed,/);
    const { tools } = await client.listTools();
    assert.equal(tools.find((t) => t.name === 'grep')?.inputSchema.additionalProperties, false);
  });

  it('a second reindex while one runs reports the running one', async () => {
    await until(async () => {
      const s = dataOf(await client.callTool({ name: 'index_status', arguments: {}, _meta: STRUCTURED }));
      return s.reindexing === null ? s : undefined;
    }, 'the initial index to finish');
    // another writer holds the index: the first re-index waits for it, so it is running when the second comes
    const lock = await acquireWriterLock(indexPaths(root).lock, { waitMs: 30_000 });
    let first: { status: string; startedAt: string };
    try {
      first = dataOf(
        await client.callTool({ name: 'reindex', arguments: { wait: false }, _meta: STRUCTURED }),
      );
      const second = dataOf(
        await client.callTool({ name: 'reindex', arguments: { wait: true }, _meta: STRUCTURED }),
      );
      assert.equal(first.status, 'started');
      assert.equal(second.status, 'already running');
      assert.equal(second.startedAt, first.startedAt);
    } finally {
      lock.release();
    }
    const done = await until(async () => {
      const s = dataOf(await client.callTool({ name: 'index_status', arguments: {}, _meta: STRUCTURED }));
      return s.reindexing === null ? s : undefined;
    }, 'the re-index to finish once the lock is free');
    assert.ok(done.files > 0);
  });

  it('keeps the index fresh: a file saved while it runs becomes searchable', async () => {
    writeFileSync(join(root, 'fresh_module.py'), 'def zanzibar_quokka():\n    return "fresh"\n');
    const found = await until(async () => {
      const r = dataOf(
        await client.callTool({
          name: 'search_code',
          arguments: { query: 'zanzibar_quokka' },
          _meta: STRUCTURED,
        }),
      );
      return r.results.find((x: { path: string }) => x.path === 'fresh_module.py');
    }, 'the saved file in search results');
    assert.equal(found.symbol, 'zanzibar_quokka');
  });
});

describe('quarry mcp --http', () => {
  let root: string;
  let other: string;
  let url: string;
  let child: ReturnType<typeof spawn>;
  let tokensFile: string;
  before(async () => {
    root = copyPolyglot([]);
    await indexLexically(root);
    other = copyPolyglot([]);
    writeFileSync(join(other, 'only_here.py'), 'def kestrel_lantern():\n    return 1\n');
    await indexLexically(other);
    tokensFile = join(other, 'tokens.json');
    child = spawn(process.execPath, ['--import', TSX, CLI, '--root', root, 'mcp', '--http', '--no-watch'], {
      env: ENV,
    });
    url = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d) => {
        out += d;
        const m = /listening on (\S+)/.exec(out);
        if (m) resolve(m[1]!);
      });
      child.on('exit', (code) => reject(new Error(`quarry mcp --http exited ${code}`)));
    });
  });
  after(() => {
    child.kill('SIGTERM');
    removeTree(root);
    removeTree(other);
  });

  const post = (headers: Record<string, string>, path?: string) =>
    new Promise<number>((resolve, reject) => {
      const u = new URL(url);
      const req = request(
        {
          host: u.hostname,
          port: u.port,
          path: path ?? `${u.pathname}${u.search}`,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...headers,
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    });

  it('serves the same tools over streamable HTTP on 127.0.0.1, to the holder of the token in its URL', async () => {
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/mcp\?token=[\w-]{20,}$/);
    const client = new Client({ name: 'quarry-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const { tools } = await client.listTools();
    assert.equal(tools.length, 11);
    const s = dataOf(await client.callTool({ name: 'index_status', arguments: {}, _meta: STRUCTURED }));
    assert.ok('files' in s);
    await client.close();
    // the same token as a header
    const token = new URL(url).searchParams.get('token')!;
    const bare = new URL(url);
    bare.search = '';
    const viaHeader = new Client({ name: 'quarry-test', version: '1.0.0' });
    await viaHeader.connect(
      new StreamableHTTPClientTransport(bare, {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    assert.equal((await viaHeader.listTools()).tools.length, 11);
    await viaHeader.close();
  });

  it('refuses a request without the token or with another one (401): other local processes get nothing', async () => {
    const u = new URL(url);
    assert.equal(await post({}, u.pathname), 401);
    assert.equal(await post({ authorization: 'Bearer qry_not-the-token' }, u.pathname), 401);
    assert.equal(await post({}, `${u.pathname}?token=wrong`), 401);
  });

  it('refuses a wrong Host header (DNS rebinding) and a cross-origin request', async () => {
    assert.equal(await post({ host: 'evil.example:80' }), 403);
    assert.equal(await post({ origin: 'https://evil.example' }), 403);
  });

  it('opens a root only inside the folder it was started for, unless a token for every repository grants it', async () => {
    const client = new Client({ name: 'quarry-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    try {
      const out = (await client.callTool({
        name: 'read_file',
        arguments: { path: 'only_here.py', root: other },
      })) as Text;
      assert.equal(out.isError, true);
      assert.match(out.content[0]!.text, /outside .*opens only that folder/);
      assert.doesNotMatch(out.content[0]!.text, /kestrel_lantern/);
      const own = (await client.callTool({ name: 'read_file', arguments: { path: 'lib.rs', root } })) as Text;
      assert.notEqual(own.isError, true, own.content[0]?.text);
    } finally {
      await client.close();
    }
    // a server started with a tokens file: a token for every repository that may re-index opens the other folder;
    // one limited to some repositories does not
    const all = runCli(['token', 'add', 'agent', '--all', '--reindex', '--tokens', tokensFile], { env: ENV });
    const some = runCli(['token', 'add', 'reader', 'x', '--tokens', tokensFile], { env: ENV });
    assert.equal(all.code, 0, all.stderr);
    assert.equal(some.code, 0, some.stderr);
    const tokenOf = (r: { stdout: string }) => /qry_[\w-]+/.exec(r.stdout)![0];
    const served = spawn(
      process.execPath,
      ['--import', TSX, CLI, '--root', root, 'mcp', '--http', '--no-watch', '--tokens', tokensFile],
      { env: ENV },
    );
    try {
      const base = (await waitForOutput(served, /listening on (\S+)/))[1]!;
      assert.doesNotMatch(base, /token=/);
      for (const [token, allowed] of [
        [tokenOf(all), true],
        [tokenOf(some), false],
      ] as const) {
        const c = new Client({ name: 'quarry-test', version: '1.0.0' });
        await c.connect(
          new StreamableHTTPClientTransport(new URL(base), {
            requestInit: { headers: { authorization: `Bearer ${token}` } },
          }),
        );
        const r = (await c.callTool({
          name: 'read_file',
          arguments: { path: 'only_here.py', root: other },
        })) as Text;
        assert.equal(r.isError === true, !allowed);
        if (allowed) assert.match(r.content[0]!.text, /kestrel_lantern/);
        await c.close();
      }
    } finally {
      served.kill('SIGTERM');
    }
  });
});

describe('which folders an MCP call may open (host/roots.ts, one rule for every face)', () => {
  it("serve's /mcp (no root policy) refuses root; stdio's owner may open any; HTTP callers only the served folder", async () => {
    const { allowedRoot } = await import('../src/host/roots.ts');
    const home = makeTree({ 'sub/a.py': 'x = 1\n' });
    const elsewhere = makeTree({ 'b.py': 'y = 2\n' });
    try {
      assert.throws(() => allowedRoot(undefined, elsewhere), /does not open other folders: use repo/);
      assert.equal(allowedRoot({ home, owner: true }, elsewhere), elsewhere);
      assert.equal(allowedRoot({ home, owner: false }, join(home, 'sub')), join(home, 'sub'));
      assert.throws(() => allowedRoot({ home, owner: false }, elsewhere), /outside .*opens only that folder/);
      assert.throws(
        () => allowedRoot({ home, owner: false }, `${home}/../${elsewhere.split('/').pop()}`),
        /outside/,
      );
      const token = (name: string, repos: '*' | Set<string>, reindex: boolean) => ({ name, repos, reindex });
      assert.equal(
        allowedRoot({ home, owner: false, grant: token('agent', '*', true) }, elsewhere),
        elsewhere,
      );
      for (const weak of [
        token('agent', '*', false),
        token('reader', new Set(['x']), true),
        token('command-line', '*', true),
      ])
        assert.throws(
          () => allowedRoot({ home, owner: false, grant: weak }, elsewhere),
          /outside/,
          weak.name,
        );
      assert.throws(() => allowedRoot({ home, owner: true }, 'relative/dir'), /must be an absolute path/);
    } finally {
      removeTree(home);
      removeTree(elsewhere);
    }
  });
});

describe('read_file pages a long file by lines and by characters', () => {
  it('answers at most 20,000 characters of text and says where to read on, until the end', async () => {
    const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
    const { openedSet } = await import('../src/host/set.ts');
    const { createMcpServer } = await import('../src/mcp/server.ts');
    const { indexProject } = await import('../src/project/local/index.ts');
    const { openLexical } = await import('./helpers.ts');
    const line = (i: number) => `export const value${String(i).padStart(4, '0')} = "${'x'.repeat(60)}";`;
    const root = makeTree({
      'src/big.ts': `${Array.from({ length: 1500 }, (_, i) => line(i + 1)).join('\n')}\n`,
    });
    const project = await openLexical(root);
    try {
      await indexProject(project);
      const server = createMcpServer(openedSet([project]));
      const [a, b] = InMemoryTransport.createLinkedPair();
      await server.connect(a);
      const c = new Client({ name: 'page-test', version: '1' });
      await c.connect(b);
      let start = 1;
      let pages = 0;
      const seen: string[] = [];
      for (;;) {
        const r = (await c.callTool({ name: 'read_file', arguments: { path: 'src/big.ts', start } })) as Text;
        const text = textOf(r);
        assert.ok(text.length < 22_000, `page ${pages}: ${text.length} characters`);
        seen.push(...text.split('\n').filter((l) => /^\s*\d+ {2}export/.test(l)));
        pages++;
        const next = /call again with start (\d+)/.exec(text);
        if (!next) break;
        start = Number(next[1]);
      }
      assert.ok(pages >= 5, `${pages} pages`);
      assert.equal(seen.length, 1500, 'every line once, in order');
      assert.match(seen.at(-1)!, /value1500/);
      await c.close();
    } finally {
      await project.close();
      removeTree(root);
    }
  });
});
