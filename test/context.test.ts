import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ask } from '../src/answer/ask.ts';
import { routeQuestion } from '../src/answer/router.ts';
import { assembleContext, completeDefinitions, mergeRanges, renderBlock } from '../src/context/assemble.ts';
import { buildRepoMap, questionMentions } from '../src/context/repomap.ts';
import type { QuarryError } from '../src/errors.ts';
import { openLlm } from '../src/llm/provider.ts';
import { contextWindow, countTokens, outputBudget, safetyMargin } from '../src/llm/tokens.ts';
import { indexProject, type LocalProject as Project } from '../src/project/local/index.ts';
import type { SymbolHit } from '../src/store/types.ts';
import { makeTree, openLexical, removeTree } from './helpers.ts';
import { type LlmServer, startLlmServer } from './llm-server.ts';

/** `n` lines that each mention the word, so that files of known size all match one query. */
function body(word: string, n: number, prefix: string): string {
  return Array.from({ length: n }, (_, i) => `${prefix}_${i} = "${word} value ${i}"`).join('\n');
}

const FILES: Record<string, string> = {
  // huge, and the best match for "turbine"
  'big/turbine_core.py': `${body('turbine turbine turbine', 900, 'core')}\n`,
  'pkg/turbine_small.py': `def spin_turbine():\n    return "turbine"\n`,
  'pkg/turbine_other.py': `def stop_turbine():\n    return "turbine stop"\n`,
  'pkg/turbine_third.py': `def check_turbine():\n    return "turbine check"\n`,
  // two definitions a few lines apart: with 3 lines of context their chunks touch and merge
  'pkg/gearbox.py': [
    'def gearbox_ratio(a, b):',
    '    """gearbox ratio of two wheels"""',
    '    return a / b',
    '',
    '',
    '',
    '',
    'def gearbox_torque(t, r):',
    '    """gearbox torque through the ratio"""',
    '    return t * r',
    '',
  ].join('\n'),
  // the repository map: util.py's helper is used by three files, lonely.py's by none
  'lib/util.py': 'def shared_helper_function(x):\n    return x + 1\n',
  'lib/a.py':
    'from util import shared_helper_function\n\ndef alpha():\n    return shared_helper_function(1)\n',
  'lib/b.py':
    'from util import shared_helper_function\n\ndef beta():\n    return shared_helper_function(2)\n',
  'lib/c.py':
    'from util import shared_helper_function\n\ndef gamma():\n    return shared_helper_function(3)\n',
  'lib/lonely.py': 'def lonely_function():\n    return 0\n',
  'docs/guide.md': '# Guide\n\nThe turbine spins.\n',
  'cmd/main.go':
    'package main\n\nvar Version = "1.0"\nvar debug bool\n\nconst MaxRetries = 3\n\nfunc main() {\n\tlocal := 1\n\t_ = local\n}\n',
};

describe('context assembly', () => {
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

  it('files packing: whole files in rank order, skips one that would cross the hard limit and tries the next', async () => {
    const ctx = await assembleContext(project, 'turbine', { packing: 'files', budget: 600, noMap: true });
    const paths = ctx.blocks.map((b) => b.path);
    assert.ok(
      ctx.skipped.some((s) => s.path === 'big/turbine_core.py'),
      'the huge file is skipped',
    );
    assert.ok(!paths.includes('big/turbine_core.py'));
    assert.ok(paths.length >= 2, `smaller files after it still go in: ${paths}`);
    for (const b of ctx.blocks) {
      const whole = readFileSync(join(root, b.path), 'utf8').replace(/\n$/, '');
      assert.equal(b.text, whole, 'whole files');
      assert.equal(b.startLine, 1);
    }
    assert.ok(ctx.tokens.blocks <= 600);
    // in rank order: the files packed keep the order retrieval gave them
    const ranked = ctx.search!.files.map((f) => f.path).filter((p) => paths.includes(p));
    assert.deepEqual(paths, ranked);
  });

  it('files packing stops adding once the soft limit is reached', async () => {
    const ctx = await assembleContext(project, 'turbine', { packing: 'files', budget: 500, noMap: true });
    // with a soft limit of half of what the budget leaves for code (the system prompt and the question come off it
    // first), every block but the last was added while under it
    const soft = ctx.budget.soft;
    assert.ok(soft > 0 && soft < 250, String(soft));
    let used = 0;
    for (const [i, b] of ctx.blocks.entries()) {
      assert.ok(used < soft, `block ${i + 1} added below the soft limit`);
      used += b.tokens;
    }
    assert.ok(ctx.tokens.prompt <= 500, `the whole prompt within the budget: ${ctx.tokens.prompt}`);
  });

  it('chunks packing: chunks widened by context lines, merged when they touch, labelled for citation', async () => {
    const ctx = await assembleContext(project, 'gearbox ratio torque', {
      packing: 'chunks',
      budget: 2000,
      noMap: true,
    });
    const gear = ctx.blocks.filter((b) => b.path === 'pkg/gearbox.py');
    assert.equal(gear.length, 1, 'the two definitions become one block');
    assert.equal(gear[0]!.startLine, 1);
    assert.equal(gear[0]!.endLine, 10);
    assert.equal(gear[0]!.text, FILES['pkg/gearbox.py']!.split('\n').slice(0, 10).join('\n'));
    // citations: [n] path:start-end, numbered in order, each in the prompt
    ctx.blocks.forEach((b, i) => {
      assert.equal(b.n, i + 1);
      assert.ok(ctx.user.includes(`[${b.n}] ${b.path}:${b.startLine}-${b.endLine}\n`));
      assert.equal(b.tokens, countTokens(renderBlock(b)));
    });
    assert.deepEqual(
      mergeRanges([
        [10, 12],
        [1, 4],
        [5, 6],
        [20, 30],
      ]),
      [
        [1, 6],
        [10, 12],
        [20, 30],
      ],
    );
  });

  it('a follow-up is retrieved with the questions before it, while the prompt asks the follow-up', async () => {
    const q = 'and how does the other one work?';
    const alone = await assembleContext(project, q, { budget: 1500 });
    const followUp = await assembleContext(project, q, {
      budget: 1500,
      previous: ['how is the gearbox ratio computed?'],
    });
    const paths = (c: typeof alone) => c.blocks.map((b) => b.path);
    assert.ok(!paths(alone).includes('pkg/gearbox.py'), `by its own words: ${paths(alone).join(', ')}`);
    assert.equal(paths(followUp)[0], 'pkg/gearbox.py', paths(followUp).join(', '));
    assert.match(followUp.user, /Question: and how does the other one work\?$/);
    assert.doesNotMatch(followUp.user, /Question: how is the gearbox/);
  });

  it('puts a file the question names first, whole, and caps it at its share of the budget', async () => {
    const ctx = await assembleContext(project, 'what does pkg/turbine_other.py return', {
      budget: 4000,
      noMap: true,
    });
    assert.equal(ctx.blocks[0]!.path, 'pkg/turbine_other.py');
    assert.equal(ctx.blocks[0]!.reason, 'named');
    assert.equal(ctx.blocks.filter((b) => b.path === 'pkg/turbine_other.py').length, 1, 'not sent twice');
    const big = await assembleContext(project, 'explain big/turbine_core.py', { budget: 2000, noMap: true });
    const first = big.blocks[0]!;
    assert.equal(first.path, 'big/turbine_core.py');
    assert.equal(first.truncated, true);
    assert.ok(first.tokens <= 1000 + 40, `capped at half the budget: ${first.tokens}`);
    assert.equal(first.startLine, 1);
  });

  it('/all sends every matching file, and refuses rather than truncate when they do not fit', async () => {
    const md = await assembleContext(project, 'summarise', { all: '*.md', budget: 4000 });
    assert.deepEqual(
      md.blocks.map((b) => [b.path, b.reason]),
      [['docs/guide.md', 'all']],
    );
    await assert.rejects(
      assembleContext(project, 'summarise', { all: true, budget: 2000 }),
      (err: QuarryError) => {
        assert.equal(err.code, 'TOO_BIG');
        assert.match(err.message, /more than the \d+ the budget of 2000 leaves for code: narrow the mask/);
        return true;
      },
    );
    await assert.rejects(assembleContext(project, 'x', { all: 'nothing/**' }), /no indexed file matches/);
  });

  it('keeps the file being edited out of retrieval and puts it first', async () => {
    const text = readFileSync(join(root, 'pkg/turbine_small.py'), 'utf8');
    const ctx = await assembleContext(project, 'turbine', {
      target: { path: 'pkg/turbine_small.py', text },
      exclude: ['pkg/turbine_small.py'],
      budget: 3000,
      noMap: true,
    });
    assert.equal(ctx.blocks[0]!.reason, 'target');
    assert.equal(ctx.blocks.filter((b) => b.path === 'pkg/turbine_small.py').length, 1);
  });

  it('ranks the repository map by references (PageRank) within its own budget', async () => {
    const map = await buildRepoMap(project.store, { budget: 2000 });
    const order = map.entries.map((e) => e.path);
    assert.ok(order.indexOf('lib/util.py') < order.indexOf('lib/lonely.py'));
    assert.equal(order[0], 'lib/util.py');
    assert.ok(map.text.startsWith('lib/util.py:\n1│def shared_helper_function'), map.text);
    // without signatures: `line: kind name`
    const bare = await buildRepoMap(project.store, { budget: 2000, signatures: false });
    assert.ok(bare.text.startsWith('lib/util.py\n  1: function shared_helper_function'));
    const tiny = await buildRepoMap(project.store, { budget: 20 });
    assert.ok(tiny.tokens <= 20);
    assert.ok(tiny.omitted > 0);
    // the map's slice is reserved inside the context budget
    const ctx = await assembleContext(project, 'turbine', { budget: 4000 });
    assert.ok(ctx.map && ctx.map.tokens <= ctx.budget.map);
    assert.ok(ctx.tokens.blocks + ctx.tokens.map <= 4000);
  });

  it('sizes the answer from what the window leaves', () => {
    assert.equal(contextWindow('anthropic:claude-sonnet-4-5'), 200_000);
    assert.equal(contextWindow('ollama:qwen2.5-coder:7b'), 32_768);
    assert.equal(contextWindow('somewhere:unknown'), 8192);
    assert.equal(contextWindow('somewhere:unknown', 65_536), 65_536);
    assert.equal(safetyMargin(8192), 410);
    assert.equal(outputBudget(8192, 6000, 4096), 8192 - 6000 - 410);
    assert.equal(outputBudget(200_000, 6000, 4096), 4096);
    assert.equal(outputBudget(8192, 9000, 4096), 0);
  });
});

describe('a budget that forces choices (regression: 32,099 prompt tokens "within" 32,000; relevant chunks out, tests in)', () => {
  let root: string;
  let project: Project;
  // one long function that answers the question, and small test and benchmark files that mention its words
  const lines = Array.from(
    { length: 120 },
    (_, i) => `    blade_pitch_${i} = compute_blade_pitch(wind, ${i})`,
  );
  before(async () => {
    root = makeTree({
      'src/pitch.py': `def blade_pitch_controller(wind):\n    """blade pitch controller"""\n${lines.join('\n')}\n    return blade_pitch_0\n`,
      'tests/test_pitch.py': 'def test_blade_pitch():\n    assert blade_pitch_controller(3)\n',
      'bench/bench_pitch.py': 'def bench_blade_pitch():\n    blade_pitch_controller(9)\n',
    });
    project = await openLexical(root);
    await indexProject(project);
  });
  after(async () => {
    await project.close();
    removeTree(root);
  });

  it('keeps the whole prompt within the budget, and fills it in rank order (a cut beats a displacement)', async () => {
    for (const budget of [700, 1200, 2500]) {
      const ctx = await assembleContext(project, 'blade pitch controller', { budget, noMap: true });
      assert.ok(ctx.tokens.prompt <= budget, `${ctx.tokens.prompt} prompt tokens within ${budget}`);
      const ranked = ctx.search!.results.map((r) => r.path);
      assert.equal(ranked[0], 'src/pitch.py', 'the source ranks first');
      assert.equal(
        ctx.blocks[0]?.path,
        'src/pitch.py',
        `budget ${budget}: the best chunk goes in, cut if need be`,
      );
      // every result that went in ranks above every result left out
      const inside = (r: { path: string; startLine: number; endLine: number }) =>
        ctx.blocks.some((b) => b.path === r.path && b.startLine <= r.endLine && b.endLine >= r.startLine);
      const results = ctx.search!.results;
      const firstOut = results.findIndex((r) => !inside(r));
      if (firstOut >= 0)
        assert.ok(
          results.slice(firstOut + 1).every((r) => !inside(r) || r.path === results[firstOut]!.path),
          `budget ${budget}: a lower-ranked chunk took room a higher-ranked one needed`,
        );
    }
    const tight = await assembleContext(project, 'blade pitch controller', { budget: 700, noMap: true });
    assert.equal(
      tight.blocks[0]?.truncated,
      true,
      'at 700 tokens the function is cut to the lines around its best line',
    );
    assert.ok(tight.skipped.some((s) => s.path.startsWith('tests/') || s.path.startsWith('bench/')));
  });
});

describe('the structure router', () => {
  let root: string;
  let project: Project;
  let server: LlmServer;
  before(async () => {
    root = makeTree(FILES);
    project = await openLexical(root);
    await indexProject(project);
    server = await startLlmServer();
  });
  after(async () => {
    await project.close();
    await server.close();
    removeTree(root);
  });

  it('answers structural questions from the symbol index', async () => {
    const fns = await routeQuestion(project, 'list the functions in lib/a.py');
    assert.ok(fns && 'answer' in fns);
    assert.deepEqual(
      fns.answer.symbols!.map((s) => s.name),
      ['alpha'],
    );
    const globals = await routeQuestion(project, 'list the global variables in cmd/main.go');
    assert.ok(globals && 'answer' in globals);
    assert.deepEqual(
      globals.answer.variables!.map((v) => [v.name, v.line, v.kind]),
      [
        ['Version', 3, 'var'],
        ['debug', 4, 'var'],
        ['MaxRetries', 6, 'const'],
      ],
    );
    const def = await routeQuestion(project, 'where is `shared_helper_function` defined?');
    assert.ok(def && 'answer' in def);
    assert.deepEqual(
      def.answer.symbols!.map((s) => [s.path, s.startLine]),
      [['lib/util.py', 1]],
    );
    const refs = await routeQuestion(project, 'what calls shared_helper_function');
    assert.ok(refs && 'answer' in refs);
    assert.deepEqual(
      refs.answer.references!.map((r) => [r.path, r.lines]),
      [
        ['lib/a.py', [1, 4]],
        ['lib/b.py', [1, 4]],
        ['lib/c.py', [1, 4]],
      ],
    );
    assert.equal(await routeQuestion(project, 'how does the turbine spin'), null, 'not structural');
  });

  it('falls back to retrieval when the file or symbol does not exist, and says so', async () => {
    const miss = await routeQuestion(project, 'list the functions in src/nope.ts');
    assert.deepEqual(miss, { fallback: 'no file src/nope.ts in the index' });
    const llm = await openLlm(
      { ...project.config.llm, baseUrl: `${server.url}/v1`, retries: 0 },
      'lmstudio:qwen2.5-coder-7b-instruct',
    );
    server.reply = (b) =>
      `I found ${JSON.stringify(b).includes('turbine') ? 'turbine code' : 'nothing'} [1].`;
    const res = await ask(project, 'where is spin_turbine_nowhere defined', { llm, budget: 3000 });
    assert.match(
      res.fallback!,
      /no definition named spin_turbine_nowhere in the index: answering from retrieval/,
    );
    let answer = '';
    for await (const p of res.stream!) answer += p;
    assert.equal(answer, 'I found turbine code [1].');
    assert.ok(res.context!.blocks.length > 0);
    assert.ok(res.maxOutputTokens! > 0 && res.maxOutputTokens! <= project.config.llm.maxOutputTokens);
  });
});

describe('context where relevance falls off', () => {
  it('stops adding retrieved code below context.min_relevance of the best result, room or not; 0 fills the budget', async () => {
    const root = makeTree({
      'src/ledger.ts':
        'export function reconcileLedger(entries: Entry[]) {\n  // reconcile ledger entries against the bank statement balance\n  return balance(entries);\n}\n',
      ...Object.fromEntries(
        Array.from({ length: 12 }, (_, i) => [
          `src/misc${i}.ts`,
          `export function helper${i}() {\n  // unrelated helper that mentions a statement once\n  return ${i};\n}\n`,
        ]),
      ),
    });
    const { openProject } = await import('../src/project/local/index.ts');
    try {
      const paths = async (minRelevance: number) => {
        const p = await openProject({
          root,
          create: true,
          userConfig: false,
          overrides: { embed: { provider: 'none' }, context: { minRelevance } },
        });
        await indexProject(p);
        const ctx = await assembleContext(p, 'reconcile ledger entries against the bank statement balance', {
          budget: 8000,
          noMap: true,
        });
        await p.close();
        return new Set(ctx.blocks.map((b) => b.path));
      };
      const filled = await paths(0);
      const cut = await paths(0.25);
      assert.ok(filled.has('src/ledger.ts') && cut.has('src/ledger.ts'));
      assert.ok(filled.size > 6, `with 0, the budget takes the word matches too (${filled.size} files)`);
      assert.deepEqual([...cut], ['src/ledger.ts']);
    } finally {
      removeTree(root);
    }
  });
});

describe('context around the code that answers', () => {
  it('completes the functions the chosen ranges are part of, in rank order, with the room left', () => {
    const lines = Array.from({ length: 300 }, (_, i) => `line ${i + 1}`);
    const sym = (name: string, startLine: number, endLine: number, kind: SymbolHit['kind'] = 'function') =>
      ({ name, kind, startLine, endLine, path: 'a.go', container: null, chunkId: null }) as SymbolHit;
    const symbols = new Map([
      [
        'a.go',
        [
          sym('Router', 1, 290, 'struct'), // a type around everything: never sent whole for one range
          sym('handleHTTPRequest', 10, 120), // the first window ranked; getValue's call is at its end
          sym('huge', 130, 290), // 161 lines: within the rule, not within the room left after the first
        ],
      ],
    ]);
    const cost = (_p: string, rs: Array<[number, number]>) => rs.reduce((s, [a, b]) => s + (b - a + 1), 0);
    const ranges = new Map<string, Array<[number, number]>>([
      [
        'a.go',
        [
          [10, 40],
          [140, 150],
        ],
      ],
    ]);
    const fileLines = new Map([['a.go', lines]]);
    const added = completeDefinitions(ranges, fileLines, symbols, 100, cost);
    assert.deepEqual(ranges.get('a.go'), [
      [10, 120],
      [140, 150],
    ]);
    assert.equal(added, 80, 'the rest of handleHTTPRequest; huge does not fit in the 20 lines left');
  });
});

describe('the repository map as signatures (Aider-style), personalised by the question', () => {
  let root: string;
  let project: Project;
  before(async () => {
    root = makeTree({
      'src/store.ts':
        'export class Store {\n  private db = 0;\n\n  constructor() {}\n\n  acquireWriter(timeoutMs: number): boolean {\n    return timeoutMs > this.db;\n  }\n\n  release(): void {}\n}\n',
      'src/engine.ts':
        "import { Store } from './store';\nexport function runEngine(s: Store): boolean {\n  return s.acquireWriter(5);\n}\n",
      'src/rarely.ts': 'export function seldomUsedHelper(x: number): number {\n  return x;\n}\n',
      'test/store.test.ts':
        "import { Store } from '../src/store';\nexport const EXPECTED_ROWS = 3;\nexport function makeStore(): Store {\n  return new Store();\n}\n",
      // definitions whose first line is the doc comment joined to them, and a template line above the name
      'include/traits.h':
        '#include <string>\n\n// Specifies whether S is a string type.\n// It should be a constexpr function.\ntemplate <typename S>\nstruct is_string : std::false_type {};\n\n/** A compile-time format string. */\ntemplate <typename Char> class format_string {\n  int size_;\n};\n\nvoid use(is_string<int> a, format_string<char> b);\n',
    });
    project = await openLexical(root);
    await indexProject(project);
  });
  after(async () => {
    await project.close();
    removeTree(root);
  });

  it('shows each definition line with its enclosing class, and leaves test constants out', async () => {
    const map = await buildRepoMap(project.store, { budget: 2000, defsPerFile: 12 });
    assert.ok(
      map.text.includes(
        'src/store.ts:\n 1│export class Store {\n  ⋮\n 4│  constructor() {}\n  ⋮\n 6│  acquireWriter(timeoutMs: number): boolean {',
      ),
      map.text,
    );
    assert.doesNotMatch(map.text, /EXPECTED_ROWS/);
    assert.match(map.text, /makeStore\(\): Store/);
    // the line that names the definition, not the doc comment above it (regression: `// Specifies whether…`)
    assert.match(map.text, /^6│struct is_string : std::false_type \{\};$/m);
    assert.match(map.text, /^9│template <typename Char> class format_string \{$/m);
    assert.doesNotMatch(map.text, /│(?:\/\/|\/\*\*)/);
  });

  it('keeps the graph it read until the index changes, and reads the change', async () => {
    const graph = project.store.references!.compactGraph!;
    const first = await graph();
    assert.equal(await graph(), first, 'read once while nothing changed');
    assert.ok(first.names.includes('seldomUsedHelper'));
    writeFileSync(
      join(root, 'src/later.ts'),
      'export function addedLaterHelper(): number {\n  return 1;\n}\n',
    );
    await indexProject(project);
    const next = await graph();
    assert.notEqual(next, first);
    assert.ok(next.names.includes('addedLaterHelper') && next.paths.includes('src/later.ts'));
    const map = await buildRepoMap(project.store, { budget: 2000, mentions: ['addedLaterHelper'] });
    assert.equal(map.entries[0]?.path, 'src/later.ts');
  });

  it('leans towards what the question names', async () => {
    const plain = await buildRepoMap(project.store, { budget: 2000 });
    const asked = await buildRepoMap(project.store, {
      budget: 2000,
      mentions: questionMentions('where is seldomUsedHelper called?'),
    });
    const at = (m: typeof plain) => m.entries.findIndex((e) => e.path === 'src/rarely.ts');
    assert.ok(at(asked) === 0 && at(plain) > 0, `${at(plain)} → ${at(asked)}`);
    assert.deepEqual(questionMentions('fix Session.flush in src/store.ts'), [
      'fix',
      'Session',
      'flush',
      'src',
      'store',
    ]);
  });
});
