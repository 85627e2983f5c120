import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { copyPolyglot, removeTree, runCli } from './helpers.ts';

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
