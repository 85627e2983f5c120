// Property-based fuzzing (fast-check): bad files, odd names, random settings files, queries and command lines.
// Each property holds for every generated case: no crash, no hang past a bound, a refusal is a one-line QuarryError,
// the index stays intact, and a skipped file is listed with its reason. QUARRY_FUZZ_RUNS scales the runs (the
// defaults keep this suite to about a minute; docs/reliability.md records a long run).
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { main } from '../src/cli/main.ts';
import { resolveConfig } from '../src/config/config.ts';
import { isQuarryError } from '../src/errors.ts';
import { indexProject, openProject } from '../src/project/local/index.ts';
import { indexPaths } from '../src/workspace/root.ts';
import { walk } from '../src/workspace/walk.ts';
import { fastestMs, makeTree, removeTree } from './helpers.ts';

const RUNS = Number(process.env.QUARRY_FUZZ_RUNS ?? 1);
const trees: string[] = [];
after(() => {
  for (const t of trees) removeTree(t);
});

const EXTENSIONS = ['.ts', '.py', '.go', '.rs', '.js', '.java', '.c', '.rb', '.md', '.json', '.txt', ''];
const GRAMMAR_NEST: Record<string, (n: number) => string> = {
  '.ts': (n) => `const x = ${'['.repeat(n)}${']'.repeat(n)};\n`,
  '.py': (n) => `x = ${'('.repeat(n)}1${')'.repeat(n)}\n`,
  '.go': (n) => `package m\nvar x = ${'('.repeat(n)}1${')'.repeat(n)}\n`,
  '.rs': (n) => `fn f() { ${'{'.repeat(n)}${'}'.repeat(n)} }\n`,
  '.js': (n) => `f${'('.repeat(n)}${')'.repeat(n)};\n`,
  '.java': (n) => `class A { int x = ${'('.repeat(n)}1${')'.repeat(n)}; }\n`,
  '.c': (n) => `int x = ${'('.repeat(n)}1${')'.repeat(n)};\n`,
  '.rb': (n) => `x = ${'['.repeat(n)}${']'.repeat(n)}\n`,
};

/** Shapes of the secret rules, repeated into one long line: a rule that backtracks takes quadratic time on them. */
const HOSTILE_UNITS = [
  'mysql -p',
  '-p',
  'password=',
  '"password": "',
  'Authorization: Bearer ',
  'postgres://u:',
  'machine x login y password ',
  'pass: ',
  'api_key = ',
  '-----BEGIN PRIVATE KEY-----',
  'AKIA',
  'a:1:b:c:',
  'é AKIAIOSFODNN7ABCDEFG ',
  'ü password = ',
];

/** File contents that have broken tools before: binary, invalid UTF-8, UTF-16, NULs in source, deep nesting… */
const content = fc.oneof(
  fc.uint8Array({ maxLength: 4096 }).map((b) => Buffer.from(b)),
  fc.string({ unit: 'grapheme', maxLength: 2000 }).map((s) => Buffer.from(s)),
  fc
    .string({ maxLength: 500 })
    .map((s) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(s, 'utf16le')])),
  fc.string({ maxLength: 500 }).map((s) => Buffer.from(`def f():\n    return "${s}\u0000"\n`)),
  fc
    .tuple(fc.constantFrom(...Object.keys(GRAMMAR_NEST)), fc.integer({ min: 100, max: 10_000 }))
    .map(([ext, n]) => Buffer.from(GRAMMAR_NEST[ext]!(n))),
  fc.integer({ min: 10_000, max: 200_000 }).map((n) => Buffer.from(`var a=${'1+'.repeat(n)}1;`)),
  // one line that stalled redaction (issue 63): a secret rule's shape repeated, tens of thousands of times
  fc
    .tuple(fc.constantFrom(...HOSTILE_UNITS), fc.integer({ min: 1_000, max: 50_000 }))
    .map(([unit, n]) => Buffer.from(unit.repeat(n))),
  fc.constant(Buffer.alloc(0)),
  fc
    .uint8Array({ minLength: 1, maxLength: 64 })
    .map((b) => Buffer.concat([Buffer.from('export const x = "'), Buffer.from(b), Buffer.from('";\n')])),
);

/** Names: odd Unicode, spaces, leading dashes and dots, newlines (what a file system allows). */
const fileName = fc
  .tuple(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 24 }), fc.constantFrom(...EXTENSIONS))
  .map(([base, ext]) => `${base.replace(/[/\u0000]/g, '_')}${ext}`)
  .filter((n) => n !== '.' && n !== '..' && Buffer.byteLength(n) < 200 && !n.startsWith('.quarry'));

describe('fuzzing', () => {
  it('indexes any files it is given: no crash, no hang, an intact index, every skipped file listed', async (t) => {
    const root = makeTree({});
    trees.push(root);
    let files = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.tuple(fileName, content), {
          minLength: 12,
          maxLength: 30,
          selector: ([n]) => n.toLowerCase(),
        }),
        async (entries) => {
          for (const e of readdirSync(root)) rmSync(join(root, e), { recursive: true, force: true });
          mkdirSync(join(root, '.git'));
          writeFileSync(join(root, '.git', 'HEAD'), 'ref: refs/heads/main\n');
          for (const [name, body] of entries) writeFileSync(join(root, name), body);
          files += entries.length;
          const project = await openProject({
            root,
            create: true,
            env: { QUARRY_EMBED: 'none' },
            userConfig: false,
          });
          try {
            const started = performance.now();
            const report = await indexProject(project, { embed: false, workers: 0 });
            assert.ok(performance.now() - started < 60_000, 'indexing took over a minute');
            // every generated file is indexed, or skipped with a reason, or left out by a named ignore rule
            const indexed = new Set((await project.store.listFiles()).map((f) => f.path));
            const skipped = new Set(report.skipped.map((s) => s.path));
            const ignored = new Set<string>();
            walk(root, project.config, { onIgnore: (i) => ignored.add(i.path) });
            for (const [name] of entries)
              assert.ok(
                indexed.has(name) || skipped.has(name) || ignored.has(name),
                `${JSON.stringify(name)} is neither indexed, nor skipped, nor ignored by a rule`,
              );
            for (const s of report.skipped) assert.ok(s.reason, `${s.path} skipped without a reason`);
            // a query made of the files' own words works
            for (const q of entries.slice(0, 3).map(([n]) => n)) {
              try {
                await project.search(q, { mode: 'lexical' });
              } catch (err) {
                assert.ok(isQuarryError(err), `search ${JSON.stringify(q)} threw ${(err as Error).stack}`);
              }
            }
          } finally {
            await project.close();
          }
          const db = new Database(indexPaths(root).db, { readonly: true });
          try {
            assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
          } finally {
            db.close();
          }
        },
      ),
      {
        numRuns: 80 * RUNS,
        seed: Number(process.env.QUARRY_FUZZ_SEED ?? 42),
        // the counterexample's buffers are long: say what failed first, in one line
        reporter: (out) => {
          if (out.failed)
            throw new Error(
              `fuzz failed (seed ${out.seed}, path ${out.counterexamplePath}): ${String((out.errorInstance as Error)?.message ?? out.errorInstance).slice(0, 500)}; files: ${JSON.stringify((out.counterexample?.[0] as Array<[string, Buffer]>)?.map(([n, b]) => [n, b.length]))}`,
            );
        },
      },
    );
    // the bar: at least a thousand bad files per run of the suite
    assert.ok(files >= 1000 * RUNS, `only ${files} files generated`);
    t.diagnostic(`${files} generated files indexed`);
  });

  it('redacts any text in time linear in its length, keeping its lines', async () => {
    const { redactSecrets } = await import('../src/chunk/redact.ts');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.oneof(fc.constantFrom(...HOSTILE_UNITS), fc.string({ maxLength: 12 })), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.integer({ min: 1, max: 20 }),
        async (units, times) => {
          const unit = units.join('');
          const small = unit.repeat(times * 50);
          const large = unit.repeat(times * 500);
          const a = await redactSecrets(small);
          const b = await redactSecrets(large);
          assert.equal(a.text.split('\n').length, small.split('\n').length);
          assert.equal(b.text.split('\n').length, large.split('\n').length);
          const smallMs = await fastestMs(() => redactSecrets(small));
          const largeMs = await fastestMs(() => redactSecrets(large));
          // 10x the text: linear takes ~10x; the rule this replaced took ~100x (a floor keeps tiny inputs out)
          assert.ok(
            largeMs < Math.max(200, 40 * smallMs),
            `${JSON.stringify(unit).slice(0, 60)}: ${smallMs.toFixed(0)} ms, then ${largeMs.toFixed(0)} ms`,
          );
        },
      ),
      { numRuns: 20 * RUNS },
    );
  });

  it('reads any settings file: either settings, or one line that names the setting', async () => {
    const root = makeTree({});
    trees.push(root);
    const value = fc.oneof(
      fc.string({ maxLength: 20 }),
      fc.integer(),
      fc.double(),
      fc.boolean(),
      fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
    );
    const key = fc.constantFrom(
      'top_k',
      'packing',
      'budget',
      'model',
      'provider',
      'driver',
      'url',
      'max_chars',
      'mmr_lambda',
      '__proto__',
      'constructor',
      'x',
      'include_secrets',
      'ignore',
      'workers',
      'redact_secrets',
    );
    const section = fc.constantFrom(
      'search',
      'context',
      'llm',
      'embed',
      'store',
      'chunk',
      '__proto__',
      'nope',
    );
    await fc.assert(
      fc.property(fc.array(fc.tuple(fc.option(section), key, value), { maxLength: 8 }), (rows) => {
        const lines: string[] = [];
        const bySection = new Map<string | null, string[]>();
        for (const [s, k, v] of rows)
          bySection.set(s, [...(bySection.get(s) ?? []), `${k} = ${JSON.stringify(v)}`]);
        for (const l of bySection.get(null) ?? []) lines.push(l);
        for (const [s, ls] of bySection) if (s !== null) lines.push(`[${s}]`, ...ls);
        writeFileSync(join(root, 'quarry.toml'), `${lines.join('\n')}\n`);
        try {
          resolveConfig({ root, userConfig: false, env: {} });
        } catch (err) {
          assert.ok(isQuarryError(err), `not a QuarryError: ${(err as Error).stack}`);
          assert.equal(err.code, 'BAD_CONFIG');
          assert.equal(err.message.split('\n').length, 1, err.message);
        }
        assert.equal(({} as Record<string, unknown>).polluted, undefined);
      }),
      { numRuns: 300 * RUNS, seed: 7 },
    );
  });

  it('answers any command line with an exit code and, on a refusal, one line', async () => {
    const root = makeTree({
      'a.ts': 'export function alpha() { return 1; }\n',
      '.git/HEAD': 'ref: refs/heads/main\n',
    });
    trees.push(root);
    const project = await openProject({
      root,
      create: true,
      env: { QUARRY_EMBED: 'none' },
      userConfig: false,
    });
    await indexProject(project, { embed: false, workers: 0 });
    await project.close();
    const word = fc.oneof(
      fc.constantFrom(
        'search',
        'status',
        'symbols',
        'def',
        'refs',
        'map',
        'files',
        'index',
        'repos',
        'model',
        'history',
        'eval',
        '--json',
        '--files',
        '-k',
        '--top-k',
        '--mode',
        'lexical',
        'dense',
        'hybrid',
        '--path',
        '--lang',
        '--color',
        'always',
        '--vimgrep',
        '-C',
        '--root',
        '--store',
        '--repo',
        '--remote',
        '-x',
        '--',
        '0',
        '-1',
        '99999',
        'alpha',
        'a.ts',
        '/etc/passwd',
        '../..',
        '*',
        '"',
        'NEAR(',
        'AND',
        '\u0000',
        '--no-embed',
        '--quiet',
      ),
      fc.string({ maxLength: 12 }),
    );
    const cwd = process.cwd();
    process.chdir(root);
    const saved = { QUARRY_EMBED: process.env.QUARRY_EMBED };
    process.env.QUARRY_EMBED = 'none';
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(word, { minLength: 1, maxLength: 6 }), async (argv) => {
          // nothing that waits for input or serves forever
          if (argv.some((a) => /^(serve|mcp|watch|chat|reset|edit|undo|ask|token)$/.test(a))) return;
          let out = '';
          let err = '';
          const sink = (append: (s: string) => void) =>
            ({
              write: (s: string) => {
                append(String(s));
                return true;
              },
              isTTY: false,
              columns: 80,
            }) as unknown as NodeJS.WriteStream;
          const code = await Promise.race([
            main(argv, {
              stdout: sink((s) => {
                out += s;
              }),
              stderr: sink((s) => {
                err += s;
              }),
            }),
            new Promise<'hang'>((r) => setTimeout(() => r('hang'), 30_000).unref()),
          ]);
          assert.notEqual(code, 'hang', `quarry ${JSON.stringify(argv)} hung`);
          assert.notEqual(code, 70, `quarry ${JSON.stringify(argv)}: internal error: ${err}`);
          // every error is one line (commander's may add its "(Did you mean …?)" suggestion)
          if (code !== 0 && code !== 1 && !err.includes('Usage:'))
            assert.equal(
              err
                .trim()
                .split('\n')
                .filter((l) => !/^\(Did you mean /.test(l)).length,
              1,
              `quarry ${JSON.stringify(argv)} said more than one line:\n${err}`,
            );
          void out;
        }),
        { numRuns: 150 * RUNS, seed: 11 },
      );
    } finally {
      process.chdir(cwd);
      if (saved.QUARRY_EMBED === undefined) delete process.env.QUARRY_EMBED;
      else process.env.QUARRY_EMBED = saved.QUARRY_EMBED;
    }
  });
});
