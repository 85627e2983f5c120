/**
 * Turns a mined corpus into training rows for the learned ranker: each tree is indexed (lexically, once, when it has
 * no index yet; its index stays beside it), each query is searched the way quarry searches, and the features of its
 * first candidate files are written with their labels (1 for a file the change touched).
 *
 *   node --import tsx train/dump_features.ts --corpus /work/train-data/corpus.jsonl \
 *     --trees /work/train-data/trees --out /work/train-data/features.jsonl [--top 60] [--repos a/b,c/d] \
 *     [--modes lexical,hybrid] [--symbols 150]
 *
 * Modes: every query is searched lexically, and also in hybrid mode where the tree's vectors are complete (the
 * trees are embedded by train/embed_trees.sh; a tree still being embedded gives lexical rows only).
 * `--symbols N` adds up to N symbol queries per tree, made from the tree's own symbol table: a definition's name, bare
 * or qualified by its container (`flush`, `Session.flush`) → the file that defines it, for names defined in at most
 * two source files; names used in more files than they are defined in come first (the common names whose uses crowd a
 * lexical list), then the rest, evenly spread.
 *
 * `--tests N` adds up to N queries whose answer is a test file: half ask for the tests of a source definition in the
 * words people use (`tests for flush`, `where is Session.flush tested`) → the one or two test files that use it
 * (those named for the defining file first), half name a test itself, as a failing run prints it
 * (`test_flush_expired`) → the test file that defines it. The mined commit gold leaves tests out, so without these
 * the ranker could only learn that a test file never comes first.
 *
 * `--pasted N` adds up to N pasted queries: half a code fragment as people paste one (`c.req.param(`,
 * `self.session.flush(`), half an error message as a log prints it (`ValueError: invalid literal for int()`, from a
 * `raise`/`throw`/`errors.New`/`panic` in the code) → the files that hold it verbatim (at most three, one or two of
 * them source files; a fragment found in more files says nothing about where to look).
 *
 * `--user-config` reads the user's config.toml too (another embedding model: its trees embedded with it first).
 *
 * One output line per query and mode: {id, repo, language, kind, mode, gold, files, X}, X[i] being files[i]'s
 * FEATURE_NAMES vector, files in today's order (so the baseline is their order).
 */
import { appendFileSync, createReadStream, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { indexProject, indexStatus, openProject, searchProject } from '../src/project/local/index.ts';
import { codeFragment } from '../src/search/query.ts';
import type { SearchMode } from '../src/search/search.ts';
import type { ReferenceGraph } from '../src/store/types.ts';
import { FEATURE_NAMES } from '../src/search/features.ts';
import { indexPaths, isDirectory } from '../src/workspace/root.ts';
import { fileRole, testedBasename } from '../src/workspace/roles.ts';

const { values: args } = parseArgs({
  options: {
    corpus: { type: 'string' },
    trees: { type: 'string' },
    out: { type: 'string' },
    top: { type: 'string', default: '60' },
    repos: { type: 'string' },
    layout: { type: 'string', default: 'plain' }, // plain: trees/<owner>+<name>; sha: trees/<owner>+<name>@<sha12>
    modes: { type: 'string', default: 'lexical,hybrid' },
    symbols: { type: 'string', default: '0' },
    tests: { type: 'string', default: '0' },
    pasted: { type: 'string', default: '0' },
    'user-config': { type: 'boolean', default: false },
    'max-commit': { type: 'string', default: '100000' },
    'max-docstring': { type: 'string', default: '100000' },
  },
});
if (!args.corpus || !args.trees || !args.out) {
  console.error(
    'usage: dump_features.ts --corpus FILE --trees DIR --out FILE [--top N] [--repos a/b,…] [--layout plain|sha] [--modes lexical,hybrid] [--symbols N]',
  );
  process.exit(2);
}
const top = Number(args.top);
const modes = args.modes.split(',') as SearchMode[];
const symbolsPerTree = Number(args.symbols);
const testsPerTree = Number(args.tests);
const pastedPerTree = Number(args.pasted);
const only = args.repos ? new Set(args.repos.split(',')) : undefined;

interface Row {
  id: string;
  repo: string;
  snapshot: string;
  query: string;
  gold: string[];
  kind?: string;
  language?: string;
}
const byTree = new Map<string, Row[]>();
const lines = createInterface({ input: createReadStream(args.corpus) });
for await (const line of lines) {
  if (!line.trim()) continue;
  const r = JSON.parse(line) as Row;
  if (only && !only.has(r.repo)) continue;
  const dir = r.repo.replace('/', '+') + (args.layout === 'sha' ? `@${r.snapshot.slice(0, 12)}` : '');
  byTree.set(dir, [...(byTree.get(dir) ?? []), r]);
}

/** Up to `k` commit and docstring queries per tree, evenly spaced (deterministic); other kinds all. */
function capped(rows: Row[]): Row[] {
  const out: Row[] = rows.filter((r) => !['commit', 'docstring'].includes(r.kind ?? 'commit'));
  for (const kind of ['commit', 'docstring']) {
    const of = rows.filter((r) => (r.kind ?? 'commit') === kind);
    const k = Number(args[kind === 'commit' ? 'max-commit' : 'max-docstring']);
    if (of.length <= k) out.push(...of);
    else for (let i = 0; i < k; i++) out.push(of[Math.floor(((i + 0.5) * of.length) / k)]!);
  }
  return out;
}

const evenly = <T>(xs: T[], k: number): T[] =>
  xs.length <= k ? xs : Array.from({ length: k }, (_, i) => xs[Math.floor(((i + 0.5) * xs.length) / k)]!);

const KINDS = new Set(['function', 'method', 'class', 'interface', 'struct', 'enum', 'trait', 'type', 'macro']);

type Definition = ReferenceGraph['defs'][number];

/** Source definitions worth asking for: a function, type or macro of 4+ characters, not a test, main or constructor. */
const sourceDefinitions = (all: Definition[]) =>
  all.filter(
    (d) => KINDS.has(d.kind) && d.name.length >= 4 && fileRole(d.path) === 'code' && !/^(test|main|new|init)/i.test(d.name),
  );

/** The files that define each name. */
function definersOf(defs: Definition[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const d of defs) out.set(d.name, (out.get(d.name) ?? new Set()).add(d.path));
  return out;
}

/** Symbol queries from a tree's own definitions (see the header). */
async function symbolQueries(project: Awaited<ReturnType<typeof openProject>>, base: Row, k: number): Promise<Row[]> {
  if (k <= 0) return [];
  const defs = sourceDefinitions(await project.store.allDefinitions());
  const definers = definersOf(defs);
  const names = [...definers.entries()].filter(([, paths]) => paths.size <= 2).map(([name]) => name);
  const uses = new Map<string, number>();
  if (project.store.references)
    for (const r of await project.store.references.useCounts(names))
      if (!definers.get(r.name)?.has(r.path)) uses.set(r.name, (uses.get(r.name) ?? 0) + 1);
  const sorted = names.sort();
  const common = sorted.filter((n) => (uses.get(n) ?? 0) > (definers.get(n)?.size ?? 0));
  const rare = sorted.filter((n) => !common.includes(n));
  const chosen = [...evenly(common, Math.ceil(k / 2)), ...evenly(rare, Math.floor(k / 2))];
  return chosen.map((name, i) => {
    const def = defs.find((d) => d.name === name)!;
    // every other query qualified by its container, as people write a method (`Session.flush`)
    const query = def.container && i % 2 ? `${def.container}.${name}` : name;
    return {
      ...base,
      id: `${base.repo}#sym-${i}`,
      query,
      gold: [...definers.get(name)!],
      kind: (uses.get(name) ?? 0) > (definers.get(name)?.size ?? 0) ? 'symbol-common' : 'symbol',
    };
  });
}

const TEST_PHRASES = [
  (n: string) => `tests for ${n}`,
  (n: string) => `where is ${n} tested`,
  (n: string) => `${n} tests`,
  (n: string) => `the test for ${n}`,
  (n: string) => `unit tests of ${n}`,
];
const TEST_NAME = /^test|^Test|_test$|Tests?$|Spec$/;

/** Queries whose answer is a test file (see the header). */
async function testQueries(project: Awaited<ReturnType<typeof openProject>>, base: Row, k: number): Promise<Row[]> {
  if (k <= 0 || !project.store.references) return [];
  const all = await project.store.allDefinitions();
  // the tests of a source definition: names defined in one source file and used by one or two test files
  const defs = sourceDefinitions(all);
  const definers = definersOf(defs);
  const single = [...definers.entries()].filter(([, p]) => p.size === 1).map(([n]) => n);
  const testsOf = new Map<string, Set<string>>();
  for (const r of await project.store.references.useCounts(single))
    if (fileRole(r.path) === 'test') testsOf.set(r.name, (testsOf.get(r.name) ?? new Set()).add(r.path));
  const tested = single.filter((n) => (testsOf.get(n)?.size ?? 0) >= 1 && testsOf.get(n)!.size <= 2).sort();
  const source = (n: string) => basename([...definers.get(n)!][0]!);
  const named = tested.filter((n) => [...testsOf.get(n)!].some((t) => testedBasename(t) === source(n)));
  const other = tested.filter((n) => !named.includes(n));
  const half = Math.ceil(k / 2);
  const forTests = [...evenly(named, Math.ceil((half * 2) / 3)), ...evenly(other, half - Math.min(named.length, Math.ceil((half * 2) / 3)))];
  const rows: Row[] = forTests.map((name, i) => {
    const def = defs.find((d) => d.name === name)!;
    const spelled = def.container && i % 3 === 1 ? `${def.container}.${name}` : name;
    return {
      ...base,
      id: `${base.repo}#tests-${i}`,
      query: TEST_PHRASES[i % TEST_PHRASES.length]!(spelled),
      gold: [...testsOf.get(name)!],
      kind: 'tests',
    };
  });
  // a test by its name: defined in one test file
  const where = definersOf(
    all.filter((d) => fileRole(d.path) === 'test' && d.name.length >= 8 && TEST_NAME.test(d.name)),
  );
  const names = [...where.entries()].filter(([, p]) => p.size === 1).map(([n]) => n).sort();
  evenly(names, k - rows.length).forEach((name, i) => {
    rows.push({ ...base, id: `${base.repo}#testname-${i}`, query: name, gold: [...where.get(name)!], kind: 'symbol-test' });
  });
  return rows;
}

/** A member call as pasted from code: `a.b(`, `self.x.y(`, `c->next(`. */
const MEMBER_CALL = /[A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*)+\(/g;
/** The message of an error the code raises: the string after raise/throw/errors.New/fmt.Errorf/panic. */
const RAISED =
  /\b(?:raise\s+(\w+)|throw\s+new\s+(\w+)|throw\s+(\w+)|errors\.New|fmt\.Errorf|panic!?|(\w*(?:Error|Exception)))\s*\(\s*[frb]?["'`]([^"'`{}%$\\\n]{15,120})["'`]/g;

/** Pasted code fragments and error messages (see the header). */
async function pastedQueries(
  project: Awaited<ReturnType<typeof openProject>>,
  root: string,
  base: Row,
  k: number,
): Promise<Row[]> {
  if (k <= 0) return [];
  const files = (await project.store.listFiles()).filter((f) => f.method !== 'skipped');
  const texts = new Map<string, string>();
  for (const f of files) {
    try {
      texts.set(f.path, readFileSync(join(root, f.path), 'utf8'));
    } catch {
      // gone since it was indexed
    }
  }
  const holders = (s: string) => [...texts.entries()].filter(([, t]) => t.includes(s)).map(([p]) => p);
  const code = [...texts.entries()].filter(([p]) => fileRole(p) === 'code').sort((a, b) => (a[0] < b[0] ? -1 : 1));
  const fragments = new Set<string>();
  // an error message → the query that pastes it
  const errors = new Map<string, string>();
  for (const [, text] of code) {
    for (const m of text.matchAll(MEMBER_CALL)) if (m[0].length >= 8 && codeFragment(m[0])) fragments.add(m[0]);
    for (const m of text.matchAll(RAISED)) {
      const message = m[5]!.trim();
      if (!/[a-z]{3}.*\s.*[a-z]{3}/.test(message) || errors.has(message)) continue;
      const type = m[1] ?? m[2] ?? m[3] ?? m[4] ?? 'Error';
      errors.set(message, `${/Error|Exception/.test(type) ? type : 'Error'}: ${message}`);
    }
  }
  const rows: Row[] = [];
  const take = (pool: Iterable<string>, n: number, kind: string, queryOf: (key: string) => string) => {
    let i = 0;
    for (const key of evenly([...pool].sort(), n * 4)) {
      if (i >= n) break;
      // every file that holds it verbatim is an answer (a guide that quotes the call too), when some are code
      const where = holders(key);
      const code = where.filter((p) => fileRole(p) === 'code');
      if (!code.length || where.length > 3 || code.length > 2) continue;
      rows.push({ ...base, id: `${base.repo}#${kind}-${i}`, query: queryOf(key), gold: where, kind });
      i++;
    }
  };
  take(fragments, Math.ceil(k / 2), 'pasted-code', (f) => f);
  take(errors.keys(), Math.floor(k / 2), 'pasted-error', (m) => errors.get(m)!);
  return rows;
}

writeFileSync(args.out, '');
writeFileSync(`${args.out}.features.json`, JSON.stringify(FEATURE_NAMES));
for (const [dir, all] of byTree) {
  const root = join(args.trees, dir);
  if (!existsSync(root)) {
    console.error(`skip ${dir}: no tree`);
    continue;
  }
  const t0 = performance.now();
  const fresh = !isDirectory(indexPaths(root).dir);
  const project = await openProject({ root, create: true, userConfig: args['user-config'] });
  if (fresh || !(await project.store.activeWriter())) await indexProject(project, { embed: false });
  const status = await indexStatus(project);
  const hybrid = modes.includes('hybrid') && status.embedding.complete === true && !(await project.store.activeWriter());
  const t1 = performance.now();
  const rows = [
    ...capped(all),
    ...(await symbolQueries(project, all[0]!, symbolsPerTree)),
    ...(await testQueries(project, all[0]!, testsPerTree)),
    ...(await pastedQueries(project, root, all[0]!, pastedPerTree)),
  ];
  let out = '';
  for (const mode of modes) {
    if (mode === 'hybrid' && !hybrid) continue;
    for (const r of rows) {
      let features = new Map<string, number[]>();
      const res = await searchProject(project, r.query, {
        mode,
        topFiles: top,
        topK: 10,
        onFeatures: (f) => {
          features = f;
        },
      });
      const files = res.files.map((f) => f.path).filter((p) => features.has(p));
      out += `${JSON.stringify({ id: r.id, repo: r.repo, language: r.language ?? '', kind: r.kind ?? 'commit', mode: res.mode, gold: r.gold, files, X: files.map((p) => features.get(p)) })}\n`;
    }
  }
  appendFileSync(args.out, out);
  await project.close();
  console.error(
    `${dir}: ${rows.length} queries × ${hybrid ? 'lexical+hybrid' : 'lexical'}, index ${((t1 - t0) / 1000).toFixed(1)} s, search ${((performance.now() - t1) / rows.length).toFixed(1)} ms/query`,
  );
}
