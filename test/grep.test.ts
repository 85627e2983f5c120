// `quarry search` by grep's conventions, and the commands that explain an index: files, doctor, reset, completion.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { copyPolyglot, indexLexically, removeTree, runCli, writeFiles } from './helpers.ts';

const trees: string[] = [];
let root = '';
before(async () => {
  root = copyPolyglot(trees);
  writeFiles(root, {
    '.git/HEAD': 'ref: refs/heads/main\n',
    '.gitignore': 'build/\n',
    'build/out.js': 'export const built = 1;\n',
    '.env': 'API_KEY=abc\n',
    'src/nested/area.ts':
      'export function circleArea(radius: number): number {\n  return Math.PI * radius * radius;\n}\n',
  });
  await indexLexically(root);
});
after(() => {
  for (const t of trees) removeTree(t);
});

describe('search by grep conventions', () => {
  test('filters do not swallow the query, repeat or take commas, and paths work from anywhere', () => {
    const a = runCli(['search', '--lang', 'typescript', 'circle', 'area'], { cwd: root });
    assert.equal(a.code, 0, a.stderr);
    assert.match(a.stdout, /shapes\.ts|area\.ts/);
    const b = runCli(['search', '--lang', 'python,typescript', '--path', 'src', 'radius'], { cwd: root });
    assert.equal(b.code, 0, b.stderr);
    for (const line of b.stdout.split('\n').filter((l) => /^\d+\./.test(l)))
      assert.match(line, /src\/nested\/area\.ts/);
    // absolute, and relative to a folder below the root
    const abs = runCli(['search', '--path', join(root, 'src', 'nested'), 'radius'], { cwd: root });
    assert.equal(abs.code, 0, abs.stderr);
    assert.match(abs.stdout, /src\/nested\/area\.ts/);
    const fromBelow = runCli(['search', '--path', 'nested', 'radius'], { cwd: join(root, 'src') });
    assert.equal(fromBelow.code, 0, fromBelow.stderr);
    // printed from where the user stands (an editor opened in src/ follows it); --json stays root-relative
    assert.match(fromBelow.stdout, /^1\. nested\/area\.ts:/m);
    const vim = runCli(['search', '--vimgrep', '--path', 'nested', 'radius'], { cwd: join(root, 'src') });
    assert.match(vim.stdout, /^nested\/area\.ts:\d+:\d+:/);
    const json = runCli(['search', '--json', '--path', 'nested', 'radius'], { cwd: join(root, 'src') });
    assert.equal(JSON.parse(json.stdout).results[0].path, 'src/nested/area.ts');
    const outside = runCli(['search', '--path', '/etc', 'radius'], { cwd: root });
    assert.equal(outside.code, 2);
    assert.match(outside.stderr, /\/etc is outside the project/);
  });

  test('no match exits 1 with nothing on stdout; a match exits 0', () => {
    const none = runCli(['search', 'zzqxvflurb'], { cwd: root });
    assert.equal(none.code, 1, none.stderr);
    assert.equal(none.stdout, '');
    assert.match(none.stderr, /no matches/);
    const json = runCli(['search', '--json', 'zzqxvflurb'], { cwd: root });
    assert.equal(json.code, 1);
    assert.deepEqual(JSON.parse(json.stdout).results, []);
  });

  test('line numbers on snippets and in JSON; scores never rise down the list', () => {
    const r = runCli(['search', '--json', '-k', '8', 'area'], { cwd: root });
    assert.equal(r.code, 0, r.stderr);
    const { results } = JSON.parse(r.stdout) as {
      results: Array<{
        path: string;
        startLine: number;
        endLine: number;
        snippetLine: number;
        line: number;
        column: number;
        score: number;
        snippet: string;
      }>;
    };
    assert.ok(results.length >= 2);
    for (const [i, x] of results.entries()) {
      assert.ok(x.snippetLine >= x.startLine && x.snippetLine <= x.endLine, JSON.stringify(x));
      assert.ok(x.line >= x.snippetLine && x.line <= x.endLine, JSON.stringify(x));
      if (i) assert.ok(x.score <= results[i - 1]!.score, `score rose at ${i}: ${JSON.stringify(results)}`);
      // the line named holds the word where the column says
      const text = x.snippet.split('\n')[x.line - x.snippetLine]!;
      assert.equal(
        text.slice(x.column - 1, x.column + 3).toLowerCase(),
        'area',
        `${x.path}:${x.line}:${x.column} ${text}`,
      );
    }
    const text = runCli(['search', '-k', '1', 'totalArea'], { cwd: root });
    assert.match(text.stdout, /^\s+\d+: .*totalArea/m);
  });

  test('--vimgrep prints path:line:column:text; -C shows lines around the match; --color always marks it', () => {
    const v = runCli(['search', '--vimgrep', '-k', '3', 'parse_config'], { cwd: root });
    assert.equal(v.code, 0, v.stderr);
    const first = v.stdout.split('\n')[0]!;
    const m = /^(.+?):(\d+):(\d+):(.*)$/.exec(first);
    assert.ok(m, first);
    assert.equal(m[1], 'config_loader.py');
    assert.match(m[4]!, /parse_config/);
    const c = runCli(['search', '-C', '1', '-k', '1', 'parse_config'], { cwd: root });
    const numbered = c.stdout.split('\n').filter((l) => /^\s+\d+[:│]/.test(l));
    // one line either side of the match (fewer at the file's ends), the match marked with ':'
    assert.ok(numbered.length >= 2 && numbered.length <= 3, c.stdout);
    assert.match(numbered.find((l) => /^\s+\d+:/.test(l)) ?? '', /parse_config/);
    const colored = runCli(['search', '--color', 'always', '-k', '1', 'parse_config'], { cwd: root });
    assert.match(colored.stdout, /\x1b\[1m\x1b\[31mparse_config/);
    const plain = runCli(['search', '--color', 'never', '-k', '1', 'parse_config'], { cwd: root });
    assert.doesNotMatch(plain.stdout, /\x1b\[/);
  });
});

describe('commands that explain an index', () => {
  test('files lists what is indexed, and with --all why each other path is left out', () => {
    const list = runCli(['files'], { cwd: root });
    assert.equal(list.code, 0, list.stderr);
    const paths = list.stdout.trim().split('\n');
    assert.ok(paths.includes('shapes.ts') && paths.includes('src/nested/area.ts'), list.stdout);
    assert.ok(!paths.includes('.env') && !paths.some((p) => p.startsWith('build/')));
    const all = runCli(['files', '--all'], { cwd: root });
    assert.match(all.stdout, /skip\s+\.env\s+a secret-looking name/);
    assert.match(all.stdout, /ignore\s+build\/\s+by \.gitignore/);
    const json = JSON.parse(runCli(['files', '--json'], { cwd: root }).stdout);
    assert.ok(json.skipped.some((s: { path: string }) => s.path === '.env'));
    assert.ok(
      json.ignored.some(
        (s: { path: string; reason: string }) => s.path === 'build/' && /\.gitignore/.test(s.reason),
      ),
    );
  });

  test('index names the files it left out', () => {
    const r = runCli(['index', '--no-embed', '--quiet'], { cwd: root });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /1 left out, a secret-looking name .*: \.env/);
  });

  test('doctor checks the install and the project; --json for scripts', () => {
    const r = runCli(['doctor', '--json'], { cwd: root });
    const report = JSON.parse(r.stdout) as {
      ok: boolean;
      checks: Array<{ name: string; ok: boolean | string }>;
    };
    const names = report.checks.map((c) => c.name);
    for (const n of [
      'node',
      'better-sqlite3',
      'onnxruntime-node',
      'tree-sitter grammars',
      'tokenizer',
      'index',
    ])
      assert.ok(names.includes(n), names.join(', '));
    assert.equal(report.checks.find((c) => c.name === 'index')!.ok, true);
    assert.equal(r.code, report.ok ? 0 : 6);
  });

  test('reset asks for --yes off a terminal, then deletes the index, and index builds it again', () => {
    const dir = copyPolyglot(trees);
    mkdirSync(join(dir, '.git'));
    writeFileSync(join(dir, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    assert.equal(runCli(['index', '--no-embed', '--quiet'], { cwd: dir }).code, 0);
    const refused = runCli(['reset'], { cwd: dir });
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /pass --yes/);
    assert.ok(existsSync(join(dir, '.quarry', 'index.db')));
    const r = runCli(['reset', '--yes'], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(existsSync(join(dir, '.quarry', 'index.db')), false);
    assert.equal(runCli(['search', 'area'], { cwd: dir }).code, 3);
    assert.equal(runCli(['index', '--no-embed', '--quiet'], { cwd: dir }).code, 0);
    assert.equal(runCli(['search', 'area'], { cwd: dir }).code, 0);
  });

  test('completion scripts for bash, zsh and fish name every command', () => {
    for (const shell of ['bash', 'zsh', 'fish']) {
      const r = runCli(['completion', shell]);
      assert.equal(r.code, 0, r.stderr);
      for (const cmd of ['index', 'search', 'serve', 'mcp', 'doctor', 'files'])
        assert.match(r.stdout, new RegExp(`\\b${cmd}\\b`));
    }
    assert.equal(runCli(['completion', 'tcsh']).code, 2);
  });
});
