import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { indexLexically, makeTree, openLexical, removeTree } from './helpers.ts';

describe('a file’s outline', () => {
  const root = makeTree({
    'a.py':
      'import os\nTIMEOUT = 30\nclient = make()\nos.environ.setdefault("X", "1")\n\ndef f():\n    return TIMEOUT\n',
    'b.go': 'package m\n\nvar defaultLogFormatter = func(x int) string { return "" }\nconst N = 3\n',
  });
  after(() => removeTree(root));

  it('lists a top-level variable once, as a definition, when the definitions hold it (issue 65)', async () => {
    await indexLexically(root);
    const p = await openLexical(root);
    try {
      for (const file of ['a.py', 'b.go']) {
        const o = await p.outline(file);
        const defined = new Set(o.symbols.map((s) => `${s.name}:${s.startLine}`));
        assert.ok(o.symbols.length >= 2, JSON.stringify(o.symbols));
        for (const v of o.variables)
          assert.ok(!defined.has(`${v.name}:${v.line}`), `${file}: ${v.name} twice`);
      }
      // read past the end: an error that says how long the file is
      await assert.rejects(
        p.readFile('a.py', { start: 500 }),
        /a\.py has 7 lines: start at a line from 1 to 7/,
      );
    } finally {
      await p.close();
    }
  });
});
