import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { copyPolyglot, makeTree, removeTree, runCli } from './helpers.ts';

describe('the answer commands without a model: ask --dry-run, symbols, def, refs, map', () => {
  const trees: string[] = [];
  let root: string;
  before(() => {
    root = copyPolyglot(trees);
    const r = runCli(['index', root, '--quiet']);
    assert.equal(r.code, 0, r.stderr);
  });
  after(() => trees.forEach(removeTree));

  it('ask --dry-run prints the prompt with labelled blocks and its token count, and calls nothing', () => {
    const r = runCli([
      '--root',
      root,
      'ask',
      '--dry-run',
      '--show-sources',
      '--budget',
      '3000',
      'how does the registry register names?',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /--- system ---\nYou are quarry/);
    assert.match(r.stdout, /^\[1\] lib\.rs:\d+-\d+$/m);
    assert.match(r.stdout, /Question: how does the registry register names\?/);
    assert.match(r.stdout, /--- \d+ prompt tokens \(\d+ blocks, budget 3000\) ---/);
    assert.match(r.stdout, /total: \d+ prompt tokens/);
  });

  it('ask --dry-run --json, with the system prompt replaced from the environment', () => {
    const r = runCli(['--root', root, 'ask', '--dry-run', '--json', 'where is checksum computed'], {
      env: { QUARRY_SYSTEM_PROMPT: 'Answer like a pirate.' },
    });
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout);
    assert.equal(j.system, 'Answer like a pirate.');
    assert.ok(j.tokens.prompt > 0);
    assert.ok(j.sources.some((s: { path: string }) => s.path === 'lib.rs'));
  });

  it('ask without a model says how to configure one, or to use --dry-run', () => {
    const r = runCli(['--root', root, 'ask', 'how does the registry work']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /no model configured: pass --model provider:name.*--dry-run/);
  });

  it('ask --all refuses a prompt over the budget instead of truncating it', () => {
    const r = runCli([
      '--root',
      root,
      'ask',
      '--dry-run',
      '--all',
      '--budget',
      '500',
      'summarise everything',
    ]);
    assert.equal(r.code, 7);
    assert.match(r.stderr, /more than the \d+ the budget of 500 leaves for code: narrow the mask/);
  });

  it('symbols, def, refs and map answer from the symbol index', () => {
    const sym = runCli(['--root', root, 'symbols', 'lib.rs', '--json']);
    assert.equal(sym.code, 0, sym.stderr);
    assert.deepEqual(
      JSON.parse(sym.stdout).symbols.map((s: { name: string }) => s.name),
      ['Registry', 'Registry', 'new', 'register', 'Named', 'name', 'checksum'],
    );
    const def = runCli(['--root', root, 'def', 'Registry.register']);
    assert.match(
      def.stdout,
      /Registry\.register is defined in:\n {2}lib\.rs:\d+-\d+ {2}method Registry\.register/,
    );
    const refs = runCli(['--root', root, 'refs', 'Registry', '--json']);
    assert.equal(refs.code, 0, refs.stderr);
    assert.ok(JSON.parse(refs.stdout).references.length > 0);
    // a name nothing uses (checksum is defined, never called) is exit 1 with an empty list, as grep has it
    const unused = runCli(['--root', root, 'refs', 'checksum', '--json']);
    assert.equal(unused.code, 1, unused.stderr);
    assert.deepEqual(JSON.parse(unused.stdout).references, []);
    const map = runCli(['--root', root, 'map', '--tokens', '300']);
    assert.equal(map.code, 0, map.stderr);
    // signature lines, numbered: `path:` then ` 12│fn checksum(…`
    assert.match(map.stdout, /^\S+\.\w+:\n *\d+│\S/);
    const missing = runCli(['--root', root, 'symbols', 'nope.rs']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /nope\.rs is not in the index/);
  });
});

describe('def and refs on a common name: the limit counts what is shown, and a cut list says so', () => {
  const trees: string[] = [];
  let root: string;
  before(() => {
    const files: Record<string, string> = {};
    // 120 files define MAIN (the same name without case, first in path order), 150 define main and call helper;
    // the store matches names without case, so a limit applied before choosing the exact case showed 80 of 150
    for (let i = 0; i < 120; i++)
      files[`a${String(i).padStart(3, '0')}.py`] = `def MAIN():\n    return ${i}\n`;
    for (let i = 0; i < 150; i++)
      files[`b${String(i).padStart(3, '0')}.py`] = `def main():\n    return helper(${i})\n`;
    // a file whose only occurrence of helper is its definition comes first among the files that name it
    files['b.py'] = 'def helper(x):\n    return x\n';
    root = makeTree(files);
    trees.push(root);
    const r = runCli(['index', root, '--quiet']);
    assert.equal(r.code, 0, r.stderr);
  });
  after(() => trees.forEach(removeTree));

  it('def lists every exact definition up to --limit, and says when there are more', () => {
    const all = runCli(['--root', root, 'def', 'main', '--json']);
    assert.equal(all.code, 0, all.stderr);
    const j = JSON.parse(all.stdout);
    assert.equal(j.definitions.length, 150);
    assert.ok(j.definitions.every((d: { name: string }) => d.name === 'main'));
    assert.equal(j.truncated, false);
    const cut = runCli(['--root', root, 'def', 'main', '--limit', '40', '--json']);
    assert.equal(JSON.parse(cut.stdout).definitions.length, 40);
    assert.equal(JSON.parse(cut.stdout).truncated, true);
    const text = runCli(['--root', root, 'def', 'main', '--limit', '40']);
    assert.match(
      text.stdout,
      /^main is defined in \(the first 40; more exist: raise --limit \(now 40\)\):\n/,
    );
    assert.equal(text.stdout.trim().split('\n').length, 41);
    const exact = runCli(['--root', root, 'def', 'main', '--limit', '150']);
    assert.match(exact.stdout, /^main is defined in:\n/);
  });

  it('refs fills --limit with files that use the name, the definition-only file left out, and says when it cut', () => {
    const cut = runCli(['--root', root, 'refs', 'helper', '--limit', '5', '--json']);
    assert.equal(cut.code, 0, cut.stderr);
    const j = JSON.parse(cut.stdout);
    assert.deepEqual(
      j.references.map((r: { path: string }) => r.path),
      ['b000.py', 'b001.py', 'b002.py', 'b003.py', 'b004.py'],
    );
    assert.equal(j.truncated, true);
    const text = runCli(['--root', root, 'refs', 'helper', '--limit', '5']);
    assert.match(
      text.stdout,
      /^helper is used on 5 lines in the first 5 files \(more files use it: raise --limit \(now 5\)\):\n/,
    );
    const all = JSON.parse(runCli(['--root', root, 'refs', 'helper', '--json', '--limit', '150']).stdout);
    assert.equal(all.references.length, 150);
    assert.equal(all.truncated, false);
    const bad = runCli(['--root', root, 'refs', 'helper', '--limit', '0']);
    assert.equal(bad.code, 2);
  });
});
