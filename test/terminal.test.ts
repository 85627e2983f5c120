// Terminal widths come from string-width (regression: a long CJK line left a duplicated raw line after chat's
// markdown redraw, its width counted with String.length).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import stringWidth from 'string-width';
import { rowsOf, StreamingMarkdown } from '../src/cli/markdown.ts';
import { fitWidth } from '../src/cli/progress.ts';

describe('terminal widths', () => {
  it('counts the rows a line takes as the terminal draws it: wide characters two columns, colour codes none', () => {
    const cjk = '漢'.repeat(50); // 50 characters, 100 columns
    assert.equal(rowsOf(cjk, 80), 2, 'String.length said 1 row: the redraw moved up one row too few');
    assert.equal(rowsOf('a'.repeat(80), 80), 1);
    assert.equal(rowsOf('\x1b[31mred\x1b[0m', 80), 1);
    assert.equal(rowsOf(`${'😀'.repeat(41)}\nx`, 80), 3);
  });

  it('cuts a progress label to the columns left, by display width', () => {
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
