// Terminal widths come from string-width (regression: a long CJK line left a duplicated raw line after chat's
// markdown redraw, its width counted with String.length).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import stringWidth from 'string-width';
import { safePath, visible } from '../src/cli/format.ts';
import { rowsOf, StreamingMarkdown } from '../src/cli/markdown.ts';
import { fitWidth, loadStringWidth } from '../src/cli/progress.ts';
import { makeTree, removeTree, runCli } from './helpers.ts';

describe('terminal widths', () => {
  it('counts the rows a line takes as the terminal draws it: wide characters two columns, colour codes none', () => {
    const cjk = '漢'.repeat(50); // 50 characters, 100 columns
    assert.equal(rowsOf(cjk, 80), 2, 'String.length said 1 row: the redraw moved up one row too few');
    assert.equal(rowsOf('a'.repeat(80), 80), 1);
    assert.equal(rowsOf('\x1b[31mred\x1b[0m', 80), 1);
    assert.equal(rowsOf(`${'😀'.repeat(41)}\nx`, 80), 3);
  });

  it('cuts a progress label to the columns left, by display width', async () => {
    await loadStringWidth();
    assert.equal(fitWidth('indexing src', 40), 'indexing src');
    const cut = fitWidth('索引'.repeat(20), 11);
    assert.ok(stringWidth(cut) <= 11, cut);
    assert.ok(cut.endsWith('…'));
  });

  it('redraws a streamed CJK paragraph over exactly the rows it took', () => {
    let out = '';
    const write = (s: string) => {
      out += s;
      return true;
    };
    const stream = { isTTY: true, columns: 40, rows: 24, write };
    const md = new StreamingMarkdown(stream as never, { color: false });
    const para = '这是一个很长的中文段落，用来检查重绘时行数的计算是否正确。'.repeat(2);
    md.push(`${para}\n\n`);
    md.end();
    // the cursor went up over the rows the raw text took at 40 columns: the paragraph's (its display width / 40,
    // rounded up: twice what String.length gives) and the two line ends after it
    const up = Number(/\x1b\[(\d+)A/.exec(out)?.[1] ?? 0) + 1;
    assert.equal(up, Math.ceil(stringWidth(para) / 40) + 2);
    assert.ok(Math.ceil(stringWidth(para) / 40) > Math.ceil(para.length / 40));
  });
});

describe('terminal-safe output', () => {
  it('escapes control characters and bidi overrides, and quotes unsafe paths', () => {
    assert.equal(visible('a\x1b[2Jb\x07\u202ec'), 'a\\x1b[2Jb\\x07\\u{202e}c');
    assert.equal(visible('tab\tstays'), 'tab\tstays');
    assert.equal(safePath('src/a.ts'), 'src/a.ts');
    assert.equal(safePath('src/a\nb.ts'), '"src/a\\nb.ts"');
    assert.equal(safePath('say "hi".ts'), '"say \\"hi\\".ts"');
  });

  it('search, grep, files and def print no raw control character from a file name or its text; --json keeps the data', () => {
    const evilName = 'src/evil\x1b]0;pwned\x07.ts';
    const splitName = 'src/two\nlines.ts';
    const root = makeTree({
      [evilName]:
        'export function clipboardWriter() {\n  return "\x1b]52;c;ZWNobyBwd25lZA==\x07 marker";\n}\n',
      [splitName]: 'export const other = "marker";\n',
      'src/plain.ts': 'export const plain = 1;\n',
    });
    try {
      const env = { QUARRY_EMBED: 'none', NO_COLOR: '1' };
      assert.equal(runCli(['index', root, '--quiet'], { env }).code, 0);
      const runs = [
        ['search', 'marker', '--root', root],
        ['search', 'marker', '--files', '--root', root],
        ['search', 'marker', '--vimgrep', '--root', root],
        ['grep', 'marker', '--root', root],
        ['grep', '-l', 'marker', '--root', root],
        ['files', '--root', root],
        ['def', 'clipboardWriter', '--root', root],
      ];
      for (const args of runs) {
        const r = runCli(args, { env, cwd: root });
        assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
        assert.ok(
          !/[\x00-\x08\x0b-\x1f\x7f]/.test(r.stdout),
          `${args.join(' ')} printed a raw control character`,
        );
        // a file name with a newline stays on one line, quoted
        for (const line of r.stdout.split('\n'))
          assert.ok(!/^lines\.ts/.test(line), `${args.join(' ')}: split name`);
      }
      const grep = runCli(['grep', 'marker', '--root', root], { env, cwd: root });
      assert.match(grep.stdout, /"src\/evil\\x1b\]0;pwned\\x07\.ts":2:.*\\x1b\]52;c;/);
      assert.match(grep.stdout, /"src\/two\\nlines\.ts":1:/);
      const json = JSON.parse(
        runCli(['search', 'marker', '--json', '--root', root], { env, cwd: root }).stdout,
      ) as {
        results: Array<{ path: string }>;
      };
      assert.ok(json.results.some((r) => r.path === evilName));
      assert.ok(json.results.some((r) => r.path === splitName));
    } finally {
      removeTree(root);
    }
  });
});
