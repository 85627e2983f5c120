// `quarry grep`: exact and regex search over the index (a trigram index for candidates, RE2 to verify), on the CLI,
// over HTTP and as an MCP tool; regression for "quarry search 'c.req.param(' shows none of its literal occurrences".
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { openedSet } from '../src/host/set.ts';
import { createMcpServer } from '../src/mcp/server.ts';
import { indexProject, type LocalProject } from '../src/project/local/index.ts';
import { codeFragment } from '../src/search/query.ts';
import { planTrigrams } from '../src/search/trigrams.ts';
import { startServer } from '../src/server/http.ts';
import { makeTree, openLexical, removeTree, runCli } from './helpers.ts';

const GH = 'ghp_R7tYq2Xz9LmK4pW8sN3vB6cF1hD5gA0eJ2uQ';

const FILES: Record<string, string> = {
  'src/router/index.ts': `export function handle(c: Ctx) {\n  const id = c.req.param('id');\n  const name = c.req.param("name");\n  return id + name;\n}\n`,
  'src/router/trie.ts': `// a trie of routes\nexport class Trie {\n  insert(path: string) {\n    return path.split('/');\n  }\n}\n`,
  'src/helper/cookie.ts': `export function getCookie(c: Ctx, key: string) {\n  return c.req.header('Cookie')?.split(';');\n}\nconst GITHUB_TOKEN = '${GH}';\n`,
  'app/views.py': `def param(request):\n    # C.REQ.PARAM( in a comment, upper case\n    return request.GET.get("id")\n\n\ndef paramless():\n    return None\n`,
  'test/router.test.ts': `import { handle } from '../src/router/index.ts';\ntest('param', () => handle({ req: { param: () => 'x' } }));\n`,
  'docs/guide.md': `# Guide\n\nCall c.req.param('id') to read a path parameter.\n`,
  '.git/HEAD': 'ref: refs/heads/main\n',
};

/** What ripgrep would find: every line of every file that the regex matches (the truth the index must reach). */
function bruteForce(root: string, re: RegExp): string[] {
  const out: string[] = [];
  for (const path of Object.keys(FILES).filter((p) => !p.startsWith('.git/')))
    readFileSync(join(root, path), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        re.lastIndex = 0;
        if (re.test(line)) out.push(`${path}:${i + 1}`);
      });
  return out.sort();
}

describe('quarry grep', () => {
  let root: string;
  let project: LocalProject;
  before(async () => {
    root = makeTree(FILES);
    project = await openLexical(root);
    await indexProject(project);
  });
  after(async () => {
    await project.close();
    removeTree(root);
  });

  it('finds, without regard to case, the letters lower case leaves apart (ſ, µ, a final Σ) through the index', async () => {
    const tree = makeTree({
      'a.txt': 'ſtatic int x;\n',
      'b.txt': 'wait 10µs\n',
      'c.txt': 'ΟΔΥΣΣΕΥΣ\n',
      'd.txt': 'nothing of the kind\n',
    });
    try {
      const p = await openLexical(tree);
      await indexProject(p);
      await p.close();
      const grep = (...args: string[]) => {
        const r = runCli(['grep', '-l', '--json', ...args], { cwd: tree });
        assert.equal(r.code, 0, r.stderr);
        const res = JSON.parse(r.stdout);
        assert.equal(res.indexed, true);
        assert.ok(res.scanned <= 1, `the trigram index narrowed the files read (read ${res.scanned})`);
        return res.paths;
      };
      assert.deepEqual(grep('-i', 'static'), ['a.txt']);
      assert.deepEqual(grep('-i', '10μs'), ['b.txt']);
      assert.deepEqual(grep('ΔΥΣ'), ['c.txt']);
    } finally {
      removeTree(tree);
    }
  });

  it('plans the literals a pattern needs, conservatively', () => {
    assert.deepEqual(planTrigrams('c.req.param(', { fixed: true }), [['c.req.param(']]);
    assert.deepEqual(planTrigrams('ab', { fixed: true }), null);
    assert.deepEqual(planTrigrams('c\\.req\\.param\\('), [['c.req.param(']]);
    assert.deepEqual(planTrigrams('getCookie|setCookie'), [['getCookie'], ['setCookie']]);
    assert.deepEqual(planTrigrams('foo\\w+bar'), [['foo', 'bar']]);
    assert.deepEqual(planTrigrams('colou?r_name'), [['colo', 'r_name']]);
    assert.deepEqual(planTrigrams('func(tion)?Name'), [['func', 'Name']]);
    assert.deepEqual(planTrigrams('(?:insert|delete)Row'), [['Row']]);
    assert.deepEqual(planTrigrams('\\x41BCD'), [['BCD']]);
    assert.deepEqual(planTrigrams('[a-z]+_id'), [['_id']]);
    assert.equal(planTrigrams('\\w+'), null);
    assert.equal(planTrigrams('ab|cdef'), null); // one branch with no literal: every file may match
  });

  it('finds every literal occurrence, exit 0, and what the index narrows equals a scan of every file', () => {
    const r = runCli(['grep', '-F', 'c.req.param(', '--json'], { cwd: root });
    assert.equal(r.code, 0, r.stderr);
    const res = JSON.parse(r.stdout);
    assert.deepEqual(
      res.matches.map((m: { path: string; line: number }) => `${m.path}:${m.line}`),
      ['docs/guide.md:3', 'src/router/index.ts:2', 'src/router/index.ts:3'],
    );
    assert.equal(res.indexed, true);
    assert.ok(res.scanned < 6, `the trigram index narrowed the files read (read ${res.scanned})`);
    for (const [pattern, flags] of [
      ['c\\.req\\.(param|header)\\(', ''],
      ['param', 'i'],
      ['def \\w+\\(', ''],
      ['split\\(.[;/].\\)', ''],
      ['\\bid\\b', ''],
    ] as const) {
      const got = JSON.parse(
        runCli(['grep', pattern, ...(flags ? ['-i'] : []), '--json', '--limit', '1000'], { cwd: root })
          .stdout,
      ).matches.map((m: { path: string; line: number }) => `${m.path}:${m.line}`);
      assert.deepEqual(got.sort(), bruteForce(root, new RegExp(pattern, flags)), pattern);
    }
  });

  it("has ripgrep's options: -i, -w, -g, -t, --path, -C, -l, --vimgrep from a subfolder (which it stays under)", () => {
    const cased = runCli(['grep', '-F', 'C.REQ.PARAM('], { cwd: root });
    assert.deepEqual(cased.stdout.trim().split('\n'), [
      'app/views.py:2:    # C.REQ.PARAM( in a comment, upper case',
    ]);
    const i = runCli(['grep', '-i', '-l', '-F', 'c.req.param('], { cwd: root });
    assert.deepEqual(i.stdout.trim().split('\n'), ['app/views.py', 'docs/guide.md', 'src/router/index.ts']);
    const w = runCli(['grep', '-w', '-l', 'param'], { cwd: root });
    assert.ok(!w.stdout.includes('paramless') && w.stdout.includes('app/views.py'));
    const py = runCli(['grep', '-t', 'py', '-l', 'param'], { cwd: root });
    assert.equal(py.stdout.trim(), 'app/views.py');
    const ts = runCli(['grep', '-t', 'ts', '-g', '!*.test.ts', '-l', 'param'], { cwd: root });
    assert.equal(ts.stdout.trim(), 'src/router/index.ts');
    const under = runCli(['grep', '--path', 'src/helper', '-l', 'split'], { cwd: root });
    assert.equal(under.stdout.trim(), 'src/helper/cookie.ts');
    const ctx = runCli(['grep', '-C', '1', 'c\\.req\\.param\\("'], { cwd: root });
    assert.deepEqual(ctx.stdout.trim().split('\n'), [
      "src/router/index.ts-2-  const id = c.req.param('id');",
      'src/router/index.ts:3:  const name = c.req.param("name");',
      'src/router/index.ts-4-  return id + name;',
    ]);
    // from a subfolder, as ripgrep: only what is under it, unless --project-wide (or a path) says more
    const here = runCli(['grep', '--vimgrep', 'param\\('], { cwd: join(root, 'src', 'router') });
    assert.deepEqual(here.stdout.trim().split('\n'), [
      "index.ts:2:20:  const id = c.req.param('id');",
      'index.ts:3:22:  const name = c.req.param("name");',
    ]);
    const up = runCli(['grep', '-l', 'param\\(', '../../app'], { cwd: join(root, 'src', 'router') });
    assert.equal(up.stdout.trim(), '../../app/views.py');
    // paths as an editor standing in src/router can open them; --json stays root-relative
    const vim = runCli(['grep', '--vimgrep', '--project-wide', 'param\\('], {
      cwd: join(root, 'src', 'router'),
    });
    assert.deepEqual(vim.stdout.trim().split('\n'), [
      '../../app/views.py:1:5:def param(request):',
      "../../docs/guide.md:3:12:Call c.req.param('id') to read a path parameter.",
      "index.ts:2:20:  const id = c.req.param('id');",
      'index.ts:3:22:  const name = c.req.param("name");',
    ]);
    const json = JSON.parse(runCli(['grep', 'Trie', '--json'], { cwd: join(root, 'src', 'router') }).stdout);
    assert.equal(json.matches[0].path, 'src/router/trie.ts');
  });

  it("-l lists every file with a match: a limit on lines does not cut the list at one file's lines", () => {
    const want = [...new Set(bruteForce(root, /param/).map((hit) => hit.slice(0, hit.lastIndexOf(':'))))];
    assert.ok(want.length >= 4 && want.includes('src/router/index.ts'));
    // src/router/index.ts alone has two matching lines: a limit of one line stopped the list there
    const l = runCli(['grep', '-l', '--limit', '1', 'param'], { cwd: root });
    assert.equal(l.code, 0, l.stderr);
    assert.deepEqual(l.stdout.trim().split('\n'), want);
    assert.doesNotMatch(l.stderr, /more matches than shown/);
    const j = JSON.parse(runCli(['grep', '-l', 'param', '--json'], { cwd: root }).stdout);
    assert.deepEqual(j.paths, want);
    assert.deepEqual(j.matches, []);
    assert.equal(j.truncated, false);
  });

  it('exits 1 on no match, 2 on a bad pattern or filter, and never hangs on a hostile pattern', () => {
    const none = runCli(['grep', 'no_such_identifier_anywhere'], { cwd: root });
    assert.equal(none.code, 1);
    assert.equal(none.stdout, '');
    const bad = runCli(['grep', 'param('], { cwd: root });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^quarry: not a regular expression RE2 accepts .*pass -F/m);
    const back = runCli(['grep', '(a)\\1'], { cwd: root });
    assert.equal(back.code, 2);
    const type = runCli(['grep', '-t', 'cobol', 'x'], { cwd: root });
    assert.equal(type.code, 2);
    assert.match(type.stderr, /unknown file type "cobol"/);
    const nowhere = runCli(['grep', '--path', 'no/such/dir', 'param'], { cwd: root });
    assert.equal(nowhere.code, 2);
    assert.match(nowhere.stderr, /no indexed file matches the filter/);
    // catastrophic for a backtracking engine; linear for RE2
    const hostile = runCli(['grep', '(\\w+\\s?)+\\$'], { cwd: root });
    assert.equal(hostile.code, 1, hostile.stderr);
  });

  it('search takes a pasted code fragment as evidence: its verbatim occurrences come first', () => {
    for (const code of [
      "c.req.param('id')",
      'c.req.param(',
      'std::vector<int>',
      'user.id == other.id',
      'x->next',
    ])
      assert.equal(codeFragment(code), code, code);
    for (const words of [
      'Fix crash in foo.bar() when the list is empty',
      'where are retries handled?',
      'v2.0',
      'setup.py',
      'retry',
    ])
      assert.equal(codeFragment(words), null, words);
    const r = runCli(['search', 'c.req.param(', '--mode', 'lexical', '--json', '-k', '3'], { cwd: root });
    assert.equal(r.code, 0, r.stderr);
    const paths = JSON.parse(r.stdout).results.map((x: { path: string }) => x.path);
    // the code that holds the text verbatim first, and the guide that quotes it among the first three, above the
    // test that only mentions param (views.py defines param, and holds the text in upper case)
    assert.equal(paths[0], 'src/router/index.ts');
    assert.ok(paths.slice(0, 3).includes('docs/guide.md'), paths.join(' '));
    assert.ok(!paths.slice(0, 3).includes('test/router.test.ts'), paths.join(' '));
  });

  it('redacts secrets in matched lines, on the CLI, over HTTP and over MCP, with the same options', async () => {
    const cli = runCli(['grep', '-F', 'GITHUB_TOKEN'], { cwd: root });
    assert.equal(cli.code, 0, cli.stderr);
    assert.ok(!cli.stdout.includes(GH) && cli.stdout.includes('REDACTED'), cli.stdout);

    const served = await startServer({ root, watch: false });
    try {
      const post = (b: unknown) =>
        fetch(new URL('/api/grep', served.url), {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin: served.url.replace(/\/$/, '') },
          body: JSON.stringify(b),
        });
      const res = await post({ pattern: 'c.req.param(', fixed: true, types: ['ts'] });
      assert.equal(res.status, 200);
      const body = (await res.json()) as { matches: Array<{ path: string; line: number }> };
      assert.deepEqual(
        body.matches.map((m) => `${m.path}:${m.line}`),
        ['src/router/index.ts:2', 'src/router/index.ts:3'],
      );
      const secret = await (await post({ pattern: 'GITHUB_TOKEN' })).text();
      assert.ok(!secret.includes(GH) && secret.includes('REDACTED'));
      const bad = await post({ pattern: '(' });
      assert.equal(bad.status, 400);
      assert.match(((await bad.json()) as { error: string }).error, /RE2/);
      assert.equal((await post({ pattern: 'x', context: 99 })).status, 400);
    } finally {
      await served.close();
    }

    const set = openedSet([project]);
    const server = createMcpServer(set);
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(a);
    const client = new Client({ name: 'grep-test', version: '1' });
    await client.connect(b);
    try {
      const call = async (args: Record<string, unknown>) =>
        (await client.callTool({ name: 'grep', arguments: args })) as {
          content: Array<{ text: string }>;
          structuredContent?: unknown;
        };
      const r = await call({ pattern: 'c.req.param(', fixed: true, path: ['src'] });
      assert.equal(
        r.content[0]!.text,
        'src/router/index.ts:2:14:  const id = c.req.param(\'id\');\nsrc/router/index.ts:3:16:  const name = c.req.param("name");\n2 matching lines in 1 file',
      );
      assert.equal(r.structuredContent, undefined, 'the text says it all: no second copy');
      const limited = await call({ pattern: 'param', ignore_case: true, limit: 1 });
      assert.match(limited.content[0]!.text, /more exist: narrow the pattern or raise limit/);
      const secret = await call({ pattern: 'GITHUB_TOKEN' });
      assert.ok(!secret.content[0]!.text.includes(GH));
    } finally {
      await client.close();
      await server.close();
    }
  });
});

describe('quarry grep and files indexed without chunks', () => {
  it('searches a minified file as ripgrep does (column, line cut around the match), and says what it did not search', () => {
    const minified = `${'var a=1;'.repeat(20_000)}function zebraQuokka(){return 42};${'var b=2;'.repeat(20_000)}\n`;
    const key = [
      '-----BEGIN',
      'RSA PRIVATE KEY-----\nMIIEow zebraQuokka\n-----END RSA',
      'PRIVATE KEY-----\n',
    ].join(' ');
    const root = makeTree({
      'lib/bundle.js': minified,
      'src/plain.ts': 'export const zebraQuokka = 1;\n',
      'data/blob.dat': Buffer.concat([
        Buffer.from('zebraQuokka'),
        Buffer.alloc(64),
        Buffer.from('zebraQuokka'),
      ]),
      'config/id_key.txt': key,
    });
    try {
      const env = { QUARRY_EMBED: 'none', NO_COLOR: '1' };
      assert.equal(runCli(['index', root, '--quiet'], { env }).code, 0);
      const r = runCli(['grep', '-F', 'zebraQuokka', '--root', root], { env, cwd: root });
      assert.equal(r.code, 0, r.stderr);
      const lines = r.stdout.trim().split('\n');
      const min = lines.find((l) => l.startsWith('lib/bundle.js:1:'));
      assert.ok(min, `the minified file is searched: ${r.stdout.slice(0, 300)}`);
      assert.ok(min.length < 700, 'its line is cut around the match');
      assert.match(min, /function zebraQuokka/);
      const vim = runCli(['grep', '-F', 'zebraQuokka', '--vimgrep', '--root', root], { env, cwd: root });
      assert.match(vim.stdout, new RegExp(`^lib/bundle\\.js:1:${8 * 20_000 + 10}:`, 'm'), 'its real column');
      assert.ok(lines.some((l) => l.startsWith('src/plain.ts:1:')));
      assert.ok(!lines.some((l) => l.startsWith('data/blob.dat') || l.startsWith('config/id_key.txt')));
      // a grep that found lines does not list what it passed by, unless asked (--verbose); one that found none does
      assert.doesNotMatch(r.stderr, /not searched/);
      const told = runCli(['grep', '-F', 'zebraQuokka', '--verbose', '--root', root], { env, cwd: root });
      assert.match(told.stderr, /1 binary file not searched \(-a\/--text searches it\)/);
      assert.match(told.stderr, /1 file holding a private key not searched/);
      const none = runCli(['grep', '-F', 'MIIEow zebraQuokka', '--root', root], { env, cwd: root });
      assert.equal(none.code, 1);
      assert.match(none.stderr, /1 binary file not searched \(-a\/--text searches it\)/);
      assert.match(none.stderr, /1 file holding a private key not searched/);
      const all = runCli(['grep', '-F', '-a', 'zebraQuokka', '--root', root], { env, cwd: root });
      assert.match(all.stdout, /^data\/blob\.dat:1:/m);
      assert.doesNotMatch(all.stdout, /id_key/);
      const json = JSON.parse(
        runCli(['grep', '-F', 'zebraQuokka', '--json', '--root', root], { env, cwd: root }).stdout,
      );
      assert.deepEqual(json.notSearched, { binary: 1, secret: 1 });
    } finally {
      removeTree(root);
    }
  });
});
