import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { parseLog, readHistory } from '../src/search/history.ts';
import { makeTree, removeTree, searchLexically, writeFiles } from './helpers.ts';

describe('git priors (search.git_recency, search.git_cochange)', () => {
  it('reads recency and co-change from a log, ignoring sweeps', () => {
    const sweep = Array.from({ length: 40 }, (_, i) => `gen/f${i}.ts`).join('\n');
    const h = parseLog(
      `\0\nsrc/a.ts\nsrc/b.ts\n\0\nsrc/a.ts\nsrc/c.ts\n\0\n${sweep}\nsrc/b.ts\n\0\nsrc/a.ts\nsrc/b.ts\n`,
    );
    assert.equal(h.commits, 4);
    assert.equal(h.recency('src/a.ts'), 1);
    assert.ok(h.recency('src/c.ts') < 1 && h.recency('src/c.ts') > 0.99);
    assert.equal(h.recency('src/none.ts'), 0);
    const n = h.neighbours('src/a.ts');
    assert.ok(Math.abs(n.get('src/b.ts')! - 2 / 3) < 1e-9, 'b changed in 2 of a’s 3 commits');
    assert.ok(Math.abs(n.get('src/c.ts')! - 1 / 3) < 1e-9);
    assert.equal(n.has('gen/f1.ts'), false, 'a 41-file sweep says nothing');
  });

  it('lifts what changed with the best file in a real repository, never past it; nothing without git', async () => {
    const root = makeTree({
      'src/billing.py':
        'def invoice_total(lines):\n    """The invoice total of the lines."""\n    return sum(lines)\n',
      'src/tax.py': 'def rate():\n    """The invoice rate."""\n    return 0.2\n',
      'src/notes.py': 'def memo():\n    """An invoice memo."""\n    return ""\n',
    });
    try {
      const git = (...args: string[]) =>
        execFileSync('git', ['-C', root, '-c', 'user.email=t@t', '-c', 'user.name=t', ...args], {
          stdio: 'pipe',
        });
      assert.equal(await readHistory(root), undefined, 'no .git: no history');
      git('init', '-q');
      git('add', 'src/billing.py', 'src/tax.py', 'src/notes.py');
      git('commit', '-qm', 'start');
      for (let i = 0; i < 3; i++) {
        writeFiles(root, {
          'src/billing.py': `# v${i}\n${'def invoice_total(lines):\n    """The invoice total of the lines."""\n    return sum(lines)\n'}`,
          'src/tax.py': `# v${i}\ndef rate():\n    """The invoice rate."""\n    return 0.2\n`,
        });
        git('commit', '-qam', `change ${i}`);
      }
      const files = async (cochange?: number) =>
        (
          await searchLexically(
            root,
            'invoice total',
            cochange !== undefined ? { gitCochange: cochange } : undefined,
          )
        ).files.map((f) => f.path);
      const off = await files();
      assert.equal(off[0], 'src/billing.py');
      const on = await files(1);
      assert.deepEqual(on.slice(0, 2), ['src/billing.py', 'src/tax.py']);
    } finally {
      removeTree(root);
    }
  });
});
