import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  indexProject,
  openProject,
  type LocalProject as Project,
  searchProject,
} from '../src/project/local/index.ts';
import { resultJson, resultLabel } from '../src/search/modes.ts';
import { analyzeQuery, frameFunctions } from '../src/search/query.ts';
import { fileRole, testedBasename } from '../src/workspace/roles.ts';
import { makeTree, openLexical, removeTree, runCli, searchLexically } from './helpers.ts';

/** Several files share the words of each query, so only the hint can pick the right one. */
const FILES: Record<string, string> = {
  'pkg/registry.py': 'def lookup(name):\n    """Find a handler by name."""\n    return HANDLERS.get(name)\n',
  'pkg/handlers.py':
    'def lookup(name):\n    """Find a handler by name in the handler table."""\n    return TABLE[name]\n',
  'src/router/trie-router.ts':
    'export function add(path: string) {\n  // insert a route into the tree\n  return path;\n}\n',
  'src/router/linear-router.ts':
    'export function add(path: string) {\n  // insert a route into the list of routes, route by route\n  return path;\n}\n',
  'src/server/index.ts': 'export function start() {\n  // start listening for requests\n}\n',
  'src/client/index.ts': 'export function start() {\n  // start sending requests, requests, requests\n}\n',
  'src/config.ts':
    'export function parseConfigFile(text: string) {\n  return JSON.parse(text);\n}\nexport function other() {\n  return 1;\n}\n',
  'src/loader.ts':
    'export function load(file: string) {\n  // parse the config file text\n  return parseConfigFile(read(file));\n}\n',
  'docs/config.md': '# Config file\n\nHow to parse the config file: parse config file parse config file.\n',
  'test/config.test.ts': 'test("parse config file", () => parseConfigFile("{}"));\n',
};

describe('search', () => {
  let root: string;
  let project: Project;
  before(async () => {
    root = makeTree(FILES);
    project = await openLexical(root);
    await indexProject(project);
  });
  after(async () => {
    await project.close();
    removeTree(root);
  });

  const topFile = async (q: string) => (await searchProject(project, q)).files[0]?.path;

  it('lifts a file named in the query, as a basename, a stem or a path fragment', async () => {
    assert.equal(await topFile('how does registry.py find a handler by name'), 'pkg/registry.py');
    assert.equal(await topFile('insert a route in trie-router'), 'src/router/trie-router.ts');
    assert.equal(await topFile('where does src/server start listening for requests'), 'src/server/index.ts');
  });

  it('orders the chunk list by the file ranking, with either ranker, each file led by its best chunk', async () => {
    for (const ranker of ['rrf', 'learned'] as const) {
      const p = await openProject({
        root,
        userConfig: false,
        overrides: { embed: { provider: 'none' }, search: { ranker } },
      });
      try {
        for (const q of ['parse config file', 'start requests', 'insert a route', 'find a handler by name']) {
          const res = await searchProject(p, q, { topK: 10 });
          const firstSeen = [...new Set(res.results.map((r) => r.path))];
          const ranked = res.files.map((f) => f.path).filter((path) => firstSeen.includes(path));
          assert.equal(res.results[0]?.path, res.files[0]?.path, `${ranker}: ${q}`);
          assert.deepEqual(firstSeen.slice(0, ranked.length), ranked, `${ranker}: ${q}`);
          // printed scores never rise down the list
          for (let i = 1; i < res.results.length; i++)
            assert.ok(res.results[i]!.score <= res.results[i - 1]!.score);
        }
      } finally {
        await p.close();
      }
    }
  });

  it('leads the chunk list with the first file even when a prior put it there (the tested source over its test)', async () => {
    const tree = makeTree({
      'src/pool.ts': 'export function acquire() {\n  // take a connection\n  return next();\n}\n',
      'test/pool.test.ts':
        'test("pool timeout", () => {\n  // connection pool timeout: the connection pool waits, then the pool times out\n});\n',
    });
    const p = await openProject({
      root: tree,
      create: true,
      userConfig: false,
      overrides: { embed: { provider: 'none' }, search: { testLift: 1.5 } },
    });
    try {
      await indexProject(p);
      const res = await searchProject(p, 'connection pool timeout');
      assert.equal(res.files[0]?.path, 'src/pool.ts');
      assert.equal(res.results[0]?.path, 'src/pool.ts');
      assert.equal(res.results[1]?.path, 'test/pool.test.ts');
    } finally {
      await p.close();
      removeTree(tree);
    }
  });

  it('lifts the definition of an identifier the query names', async () => {
    const res = await searchProject(project, 'who calls parseConfigFile');
    assert.equal(res.results[0]?.path, 'src/config.ts');
    assert.equal(res.results[0]?.symbol, 'parseConfigFile');
    assert.ok(res.results[0]!.signals.symbolHint > 0);
  });

  it('labels a shown chunk by its outermost definition with its container, never by one nested in it', async () => {
    const helpers = Array.from({ length: 6 }, (_, i) => [
      `    def helper_${i}(self, value):`,
      ...Array.from(
        { length: 8 },
        (_, j) => `        value = value + ${j}  # step ${j} of the helper computation number ${i}`,
      ),
      '        return value',
      '',
    ]).flat();
    const py = [
      'class DigestAuth:',
      '    """Digest access authentication."""',
      ...helpers,
      '    def _build_auth_header(self, request, challenge):',
      '        def digest(data):',
      '            return hash_func(data).hexdigest().encode()',
      '',
      ...Array.from({ length: 6 }, (_, j) => `        part_${j} = digest(b"auth header part ${j}")`),
      '        return b"Digest " + part_0',
      '',
    ].join('\n');
    const netrc = [
      'class NetRCAuth:',
      '    def __init__(self, file):',
      '        self.file = file',
      '',
      '    def _build_auth_header(self, username, password):',
      '        return "Basic " + username + password',
      '',
    ].join('\n');
    const root = makeTree({ 'auth.py': py, 'netrc.py': netrc });
    after(() => removeTree(root));
    const res = await searchLexically(root, 'digest auth header');
    const labels = res.results.map((r) => `${r.startLine} ${resultLabel(r)} ${r.kind}`);
    const build = res.results.find((r) => r.symbol === '_build_auth_header' && r.container === 'DigestAuth');
    assert.ok(build, labels.join('; '));
    assert.ok(
      !res.results.some((r) => r.symbol === 'digest'),
      `the nested digest() names no chunk: ${labels.join('; ')}`,
    );
    // the whole class in one chunk: the class, not the method the query names
    const whole = res.results.find((r) => r.path === 'netrc.py');
    assert.equal(whole && resultLabel(whole), 'NetRCAuth', labels.join('; '));
    assert.equal(resultJson(build).label, 'DigestAuth._build_auth_header');
  });

  it('puts the definition a bare name asks for first in every mode, above its own short members', async () => {
    const doc = Array.from(
      { length: 60 },
      (_, i) => `    pooling of connections, retries number ${i}, proxies, certificates and limits`,
    );
    const py = [
      '"""Transports for the async client: AsyncHTTPTransport."""',
      ...Array.from({ length: 40 }, (_, i) => `from ._pool import Pool${i}`),
      '__all__ = ["AsyncHTTPTransport"]',
      '',
      '',
      'class AsyncHTTPTransport:',
      '    """',
      ...doc,
      '    """',
      '',
      '    async def aclose(self):',
      '        await self._pool.aclose()',
      '',
      ...Array.from({ length: 5 }, (_, i) => [
        `    def handle_${i}(self, request):`,
        ...Array.from({ length: 20 }, (_, j) => `        request = self._pool.step_${j}(request, ${i})`),
        '        return request',
        '',
      ]).flat(),
    ].join('\n');
    const root = makeTree({
      'quarry.toml': '[embed]\nprovider = "static"\n',
      'transport.py': py,
      'client.py': 'from transport import AsyncHTTPTransport\n\nclient = AsyncHTTPTransport()\n',
    });
    after(() => removeTree(root));
    const p = await openProject({ root, create: true, userConfig: false });
    try {
      await indexProject(p);
      for (const mode of ['lexical', 'hybrid', 'dense'] as const) {
        const res = await searchProject(p, 'AsyncHTTPTransport', { mode });
        const first = res.results[0];
        assert.equal(
          first && `${first.path}:${resultLabel(first)}`,
          'transport.py:AsyncHTTPTransport',
          `${mode}: ${res.results.map((r) => `${r.path}:${r.startLine} ${resultLabel(r)}`).join('; ')}`,
        );
      }
    } finally {
      await p.close();
    }
  });

  it('ranks implementation above docs and tests that say the same words', async () => {
    const res = await searchProject(project, 'parse config file');
    const paths = res.files.map((f) => f.path);
    assert.ok(paths.indexOf('src/config.ts') < paths.indexOf('docs/config.md'));
    assert.ok(paths.indexOf('src/config.ts') < paths.indexOf('test/config.test.ts'));
  });

  it('filters by path prefix and language, and bounds results with topK', async () => {
    const res = await searchProject(project, 'start requests', { filter: { pathPrefixes: ['src/client/'] } });
    assert.deepEqual([...new Set(res.results.map((r) => r.path))], ['src/client/index.ts']);
    const py = await searchProject(project, 'lookup handler name', {
      filter: { languages: ['python'] },
      topK: 1,
    });
    assert.equal(py.results.length, 1);
    assert.match(py.results[0]!.path, /\.py$/);
  });

  it('spreads the top results over files nearly as good (MMR), and keeps the plain order with λ = 1', async () => {
    const many = Array.from(
      { length: 8 },
      (_, i) => `export function retry${i}() {\n${'  // retry the request with backoff\n'.repeat(30)}}\n`,
    ).join('\n');
    const tree = makeTree({
      'src/retry.ts': many,
      'src/other.ts': 'export function backoff() {\n  // retry the request with backoff\n}\n',
    });
    // MMR over the hand-set scores (rrf), whose spread between files this test knows
    const p = await openProject({
      root: tree,
      create: true,
      userConfig: false,
      overrides: { embed: { provider: 'none' }, search: { ranker: 'rrf' } },
    });
    try {
      await indexProject(p);
      const spread = await searchProject(p, 'retry the request with backoff', { topK: 3 });
      assert.ok(spread.results.slice(0, 3).some((r) => r.path === 'src/other.ts'));
      const plain = await openProject({
        root: tree,
        userConfig: false,
        overrides: { embed: { provider: 'none' }, search: { ranker: 'rrf', mmrLambda: 1 } },
      });
      const res = await searchProject(plain, 'retry the request with backoff', { topK: 3 });
      assert.deepEqual([...new Set(res.results.map((r) => r.path))], ['src/retry.ts']);
      await plain.close();
    } finally {
      await p.close();
      removeTree(tree);
    }
  });

  it('makes a snippet around the matching lines', async () => {
    const res = await searchProject(project, 'parseConfigFile JSON');
    assert.match(res.results[0]!.snippet, /JSON\.parse/);
  });

  it('classifies files by role from their path', () => {
    assert.equal(fileRole('src/a.ts'), 'code');
    assert.equal(fileRole('src/a.test.ts'), 'test');
    assert.equal(fileRole('pkg/foo_test.go'), 'test');
    assert.equal(fileRole('tests/test_x.py'), 'test');
    assert.equal(fileRole('README.md'), 'docs');
    assert.equal(fileRole('CHANGELOG'), 'docs');
    assert.equal(fileRole('config/app.yaml'), 'data');
  });
});

describe('tests → source (search.test_lift)', () => {
  it('names the file each convention tests', () => {
    assert.equal(testedBasename('tests/test_widget.py'), 'widget.py');
    assert.equal(testedBasename('pkg/widget_test.py'), 'widget.py');
    assert.equal(testedBasename('server/conn_test.go'), 'conn.go');
    assert.equal(testedBasename('src/a/parse.test.ts'), 'parse.ts');
    assert.equal(testedBasename('src/a/View.spec.tsx'), 'View.tsx');
    assert.equal(testedBasename('spec/user_spec.rb'), 'user.rb');
    assert.equal(testedBasename('src/test/java/FooTest.java'), 'Foo.java');
    assert.equal(testedBasename('src/widget.py'), undefined);
  });

  it('puts the tested file above its test unless the question is about tests: by the lift in rrf (off by default), by itself in the learned order', async () => {
    const root = makeTree({
      'pkg/widget.py': 'def frobnicate(x):\n    return x\n',
      'tests/test_widget.py':
        'from pkg.widget import frobnicate\n\ndef test_frobnicate_rounds_widget_values():\n    assert frobnicate(1) == 1  # rounds widget values\n',
      'pkg/other.py': 'def other():\n    return "rounds values"\n',
    });
    try {
      // the lift is a part of the hand-set order (rrf)
      const order = async (q: string, lift?: number) =>
        (
          await searchLexically(root, q, { ranker: 'rrf', ...(lift !== undefined ? { testLift: lift } : {}) })
        ).files.map((f) => f.path);
      const q = 'frobnicate rounds widget values';
      assert.deepEqual((await order(q)).slice(0, 2), ['tests/test_widget.py', 'pkg/widget.py']);
      assert.deepEqual((await order(q, 1.05)).slice(0, 2), ['pkg/widget.py', 'tests/test_widget.py']);
      assert.deepEqual((await order(`the test for ${q}`, 1.05))[0], 'tests/test_widget.py');
      // the learned order (the default) does the same by itself: it was trained on queries for sources and for tests
      const learned = async (query: string) => (await searchLexically(root, query)).files.map((f) => f.path);
      assert.deepEqual((await learned(q)).slice(0, 2), ['pkg/widget.py', 'tests/test_widget.py']);
      assert.deepEqual((await learned(`the test for ${q}`))[0], 'tests/test_widget.py');
    } finally {
      removeTree(root);
    }
  });
});

describe('quoted text and pasted errors (search.exact_weight)', () => {
  it('finds the strings a query quotes and the error lines it pastes', () => {
    const q = analyzeQuery(
      `linting fails with "Avoid using aliases in join condition" on a bare table\nTraceback (most recent call last):\n  File "x.py", line 3, in <module>\nRuntimeError: Dropped elements in sequence matching! 'a' != ';'\nit's 'ok' (one 'word' is no literal)`,
    );
    assert.deepEqual(q.literals, [
      'Avoid using aliases in join condition',
      "Dropped elements in sequence matching! 'a' != ';'",
    ]);
  });

  it("reads the functions a stack trace's frames name, in Python, V8 and JVM traces", () => {
    assert.deepEqual(
      frameFunctions(
        'Traceback (most recent call last):\n  File "/usr/lib/x/schema.py", line 12, in _invoke_validators\n    raise\n  File "<stdin>", line 1, in <module>\nTypeError: Error: boom\n    at parseConfig (src/config.ts:3:5)\n    at async Loader.loadAll (src/a.ts:9:1)\n\tat com.acme.Widget.render(Widget.java:42)\n',
      ),
      ['_invoke_validators', 'parseConfig', 'loadAll', 'render'],
    );
    assert.equal(analyzeQuery('  File "a.py", line 3, in load\n').identifiers.get('load'), 1);
  });

  it('puts the file that holds a pasted message, even formatted, above files that share its words', async () => {
    const root = makeTree({
      'src/helpers.py': `def check_match(matched, expected):\n${'    total = compute(matched, expected)\n'.repeat(4)}    if len(matched) != len(expected):\n        raise RuntimeError(\n            "Dropped elements in sequence matching! {!r} != {!r}".format(matched, expected)\n        )\n`,
      'src/sequence.py':
        '# the linter: matching a sequence of elements, none dropped\ndef match_sequence(sequence, elements):\n    """Matching elements in sequence; dropped elements are an error in matching the sequence."""\n    # elements dropped in matching: select the sequence elements\n    return [e for e in elements if e in sequence]\n',
      'src/other.py': 'def unrelated():\n    return 1\n',
    });
    try {
      const files = async (weight?: number) => {
        const r = await searchLexically(
          root,
          "the linter crashes on a sequence:\nRuntimeError: Dropped elements in sequence matching! 'select 1;;' != ';'",
          weight !== undefined ? { exactWeight: weight } : undefined,
        );
        return { files: r.files.map((f) => f.path), top: r.results[0]! };
      };
      const off = await files(0);
      assert.equal(off.files[0], 'src/sequence.py', 'without the signal, shared words win');
      const on = await files();
      assert.equal(on.files[0], 'src/helpers.py');
      assert.ok((on.top.signals.exact ?? 0) > 0, 'the signal is reported');
    } finally {
      removeTree(root);
    }
  });
});

describe('one hop over the references (search.graph_hop)', () => {
  it('lifts the file defining what the best file uses, never past the best file; off by default', async () => {
    const root = makeTree({
      'src/report.py':
        'from src.render import frobnicate_layout\n\ndef make_report(rows):\n    """Build the quarterly report from the rows."""\n    return frobnicate_layout(rows)\n',
      'src/render.py': 'def frobnicate_layout(rows):\n    return [str(r) for r in rows]\n',
      'src/other.py': 'def other_report_helper():\n    """A quarterly note."""\n    return 1\n',
    });
    try {
      const files = async (hop?: number) =>
        (
          await searchLexically(
            root,
            'quarterly report rows',
            hop !== undefined ? { graphHop: hop } : undefined,
          )
        ).files.map((f) => f.path);
      const off = await files();
      assert.equal(off[0], 'src/report.py');
      assert.ok(!off.slice(0, 2).includes('src/render.py'), `render.py is no lexical match: ${off}`);
      const on = await files(0.9);
      assert.deepEqual(on.slice(0, 2), ['src/report.py', 'src/render.py']);
    } finally {
      removeTree(root);
    }
  });
});

describe('result labels', () => {
  it('name the definition the query matched in a merged chunk (regression: schemaVersion shown for acquireWriter)', () => {
    const root = makeTree({
      'src/db.ts':
        'export function schemaVersion(db: number): number {\n  return db + 1;\n}\n\nexport function acquireWriter(db: number): number {\n  return db * 2;\n}\n\nexport function other(): void {}\n',
    });
    try {
      assert.equal(runCli(['index', '--no-embed', '--quiet'], { cwd: root }).code, 0);
      const label = (q: string) =>
        JSON.parse(runCli(['search', '--json', q], { cwd: root }).stdout).results[0];
      const merged = label('acquire writer');
      assert.equal(merged.startLine, 1, 'the three functions are one chunk');
      assert.equal(merged.symbol, 'acquireWriter');
      assert.equal(label('schemaVersion').symbol, 'schemaVersion');
    } finally {
      removeTree(root);
    }
  });
});
