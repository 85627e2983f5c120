// quarry eval --git: the repository's own history as a query set, asked against an index of a snapshot built in a
// temporary folder; the practice sets' rules decide which commits make queries
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { commitQuery, isSourceFile } from '../src/eval/commits.ts';
import { gitQueries } from '../src/eval/git.ts';
import { makeTree, removeTree, runCli } from './helpers.ts';

const FILES: Record<string, string> = {
  'src/billing/invoice.py':
    'class Invoice:\n    """An invoice with its lines and taxes."""\n\n    def total(self):\n        return sum(l.amount for l in self.lines)\n',
  'src/billing/tax.py':
    'def vat_rate(country):\n    """The VAT rate of a country."""\n    return RATES[country]\n\nRATES = {"fr": 0.2}\n',
  'src/net/retry.py':
    'def backoff(attempt):\n    """Seconds to wait before retrying an HTTP request."""\n    return min(60, 2 ** attempt)\n',
  'src/net/client.py': 'from .retry import backoff\n\ndef get(url, attempts=3):\n    return fetch(url)\n',
  'src/cli/main.py':
    'import argparse\n\ndef main():\n    parser = argparse.ArgumentParser()\n    return parser\n',
  'tests/test_tax.py': 'def test_vat():\n    assert True\n',
  'README.md': '# shop\n',
};

function git(root: string, ...args: string[]): string {
  return execFileSync('git', ['-C', root, ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@e',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@e',
    },
  });
}

function commit(root: string, files: Record<string, string>, message: string): void {
  for (const [p, text] of Object.entries(files)) writeFileSync(join(root, p), text);
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', message);
}

describe('quarry eval --git', () => {
  let root: string;
  before(() => {
    root = makeTree(FILES);
    git(root, 'init', '-q', '-b', 'main');
    git(root, 'add', '-A');
    git(root, 'commit', '-q', '-m', 'Initial import of the shop');
    // queries: one or two source files changed, a descriptive message
    commit(
      root,
      { 'src/billing/tax.py': `${FILES['src/billing/tax.py']}RATES["de"] = 0.19\n` },
      'Add the German VAT rate to the tax table used by invoices',
    );
    commit(
      root,
      { 'src/net/retry.py': `${FILES['src/net/retry.py']}# capped\n` },
      'Cap the retry backoff for HTTP requests at one minute',
    );
    commit(
      root,
      {
        'src/billing/invoice.py': `${FILES['src/billing/invoice.py']}    # rounded\n`,
        'src/billing/tax.py': `${FILES['src/billing/tax.py']}RATES["es"] = 0.21\n`,
      },
      'Round invoice totals after taxes so that the VAT sums match\n\nThe invoice total now rounds each line after the VAT rate applies.\n\nSigned-off-by: t <t@e>',
    );
    // not queries: a new source file, a sweep, a test-only change, a vague message
    commit(
      root,
      { 'src/net/proxy.py': 'def proxy():\n    pass\n' },
      'Add an HTTP proxy module for outgoing requests of the client',
    );
    commit(root, { 'src/cli/main.py': `${FILES['src/cli/main.py']}\n` }, 'Format the code with black');
    commit(
      root,
      { 'tests/test_tax.py': 'def test_vat():\n    assert 1\n' },
      'Make the VAT test stricter about the rates it checks',
    );
    commit(root, { 'src/net/client.py': `${FILES['src/net/client.py']}# x\n` }, 'fix');
  });
  after(() => removeTree(root));

  it('keeps the commits the practice sets would keep, with the files they changed as gold', () => {
    const { queries, considered, rejected } = gitQueries(root, 7);
    assert.equal(considered, 7);
    assert.deepEqual(
      queries.map((q) => q.gold),
      [['src/billing/tax.py'], ['src/net/retry.py'], ['src/billing/invoice.py', 'src/billing/tax.py']],
    );
    assert.equal(
      queries[2]!.query,
      'Round invoice totals after taxes so that the VAT sums match. The invoice total now rounds each line after the VAT rate applies.',
    );
    assert.equal(rejected['source file added, deleted, renamed or absent at the snapshot'], 1);
    assert.equal(rejected['no source file'], 1);
    assert.equal(rejected['message not descriptive (or a sweep, release, revert)'], 2);
  });

  it('indexes the snapshot elsewhere, asks the queries and prints hit@k and MRR (--json too); the checkout is untouched', () => {
    const r = runCli(['eval', '--git', '--commits', '7', '--json'], { cwd: root });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as {
      snapshot: string;
      considered: number;
      metrics: Record<string, Record<string, { n: number; 'hit@1': number; 'hit@10': number; MRR: number }>>;
    };
    assert.equal(out.snapshot, git(root, 'rev-list', '--max-parents=0', 'HEAD').trim());
    const all = out.metrics.lexical!.ALL!;
    assert.equal(all.n, 3);
    assert.equal(all['hit@10'], 1, 'every gold file is among the first ten of a seven-file repository');
    assert.ok(all.MRR > 0.5, `MRR ${all.MRR}`);
    assert.ok(!existsSync(join(root, '.quarry')), 'no index was written into the checkout');
    assert.equal(git(root, 'status', '--porcelain'), '');
    const text = runCli(['eval', '--git', '--commits', '7'], { cwd: root });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^ALL\s+lexical\s+3\s/m);
    assert.match(text.stderr, /3 of the 7 commits after [0-9a-f]{12} make queries/);
  });

  it('says what to do outside a git checkout, or with no history to ask', () => {
    const plain = makeTree({ 'a.py': 'x = 1\n', '.quarry/.keep': '' });
    try {
      const r = runCli(['eval', '--git'], { cwd: plain });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /eval --git needs a git checkout with history/);
    } finally {
      removeTree(plain);
    }
    const none = runCli(['eval'], { cwd: root });
    assert.equal(none.code, 2);
    assert.match(none.stderr, /pass --git/);
  });

  it('ports the practice sets’ rules: source files and messages', () => {
    assert.ok(isSourceFile('src/net/retry.py'));
    for (const p of [
      'tests/test_tax.py',
      'docs/conf.py',
      'setup.py',
      'src/x.test.ts',
      'vendor/a.go',
      'a.d.ts',
      'README.md',
    ])
      assert.ok(!isSourceFile(p), p);
    assert.equal(commitQuery('Bump lodash from 4.17.20 to 4.17.21'), null);
    assert.equal(commitQuery('Fix typo'), null);
    assert.equal(
      commitQuery('Handle empty headers in the request parser (#123)\n\nFixes #120'),
      'Handle empty headers in the request parser',
    );
  });
});
