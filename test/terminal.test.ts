// Terminal widths come from string-width (regression: a long CJK line left a duplicated raw line after chat's
// markdown redraw, its width counted with String.length).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pc from 'picocolors';
import stringWidth from 'string-width';
import { BEGIN, END } from '../src/answer/edit.ts';
import { safePath, visible } from '../src/cli/format.ts';
import { rowsOf, StreamingMarkdown } from '../src/cli/markdown.ts';
import { fitWidth, loadStringWidth, Progress } from '../src/cli/progress.ts';
import { CLI, makeTree, REPO, removeTree, runCli, runCliAsync } from './helpers.ts';
import { type LlmServer, startLlmServer } from './llm-server.ts';

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

  it('draws the progress line in one row of 80 columns: the label and the rate give way, never the bar', async () => {
    let line = '';
    const write = (s: string) => {
      line = s;
      return true;
    };
    const stream = { isTTY: true, columns: 80, write };
    const progress = await Progress.open(stream as never, pc.createColors(false));
    const drawn = () => line.replace('\r\x1b[2K', '');
    progress.update('vectors 2/2 (chunks)', 1234567, 2345678, 12345, 74_040_000, 'texts/s');
    assert.ok(stringWidth(drawn()) < 80, drawn());
    assert.match(drawn(), /^vectors [^█░]+… █{13}░{11} 1234567\/2345678 files · ETA 1234m00s$/);
    progress.update('indexing', 12, 100, 5, 9000);
    assert.match(drawn(), /^indexing █{3}░{21} 12\/100 files · 5 files\/s · ETA 9\.0s$/);
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

/** A character a terminal acts on instead of showing (format.ts `visible` escapes them): tab and line ends aside. */
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** What a model repeats from a file it read: a clipboard write, a screen clear, a window title, bidi controls. */
const HOSTILE =
  'Read this: \x1b]52;c;ZWNobyBwd25lZA==\x07 then \x1b[2J and \x1b]0;title\x07 and \u202eevil\u202c \u2066x\u2069 \u200f\u061c 漢字 😀 done.\n';

function assertSafe(text: string, what: string): void {
  const at = RAW.exec(text);
  assert.equal(
    at,
    null,
    `${what} printed a raw ${JSON.stringify(at?.[0])}: ${JSON.stringify(text.slice(0, 400))}`,
  );
}

describe('terminal-safe text of several lines, and in pieces', () => {
  it('keeps line ends and tabs, escapes a lone carriage return, bidi marks and isolates', () => {
    assert.equal(visible('a\nb\r\nc\td', { lines: true }), 'a\nb\r\nc\td');
    assert.equal(visible('over\rwrite', { lines: true }), 'over\\rwrite');
    assert.equal(visible('a\nb'), 'a\\nb', 'one line: the line end is escaped');
    assert.equal(
      visible('\u200e\u200f\u061c\u2066\u2067\u2068\u2069\u202a\u202e'),
      '\\u{200e}\\u{200f}\\u{61c}\\u{2066}\\u{2067}\\u{2068}\\u{2069}\\u{202a}\\u{202e}',
    );
    assert.equal(visible('漢字 😀 é', { lines: true }), '漢字 😀 é', 'printable characters pass unchanged');
  });

  it('StreamingMarkdown shows a streamed answer escaped, an escape sequence cut between two pieces included', () => {
    for (const isTTY of [true, false]) {
      let out = '';
      const stream = {
        isTTY,
        columns: 80,
        rows: 24,
        write: (s: string) => {
          out += s;
          return true;
        },
      };
      const md = new StreamingMarkdown(stream as never, { color: false });
      for (const piece of Array.from(`${HOSTILE}\nsecond paragraph \x1b`)) md.push(piece);
      md.push('[2J end\n\n');
      md.end();
      // what quarry itself writes to redraw on a terminal: carriage return, cursor up, clear down
      const own = out.replace(/\r|\x1b\[\d*A|\x1b\[J/g, '');
      assertSafe(own, `StreamingMarkdown (isTTY ${isTTY})`);
      assert.ok(own.includes('\\x1b]52;c;ZWNobyBwd25lZA==\\x07'), own);
      assert.ok(own.includes('\\x1b[2J end'), 'the ESC of a sequence cut in two is escaped');
      assert.ok(own.includes('漢字 😀'), 'multi-byte characters arrive whole');
    }
  });
});

describe('ask, chat, edit and errors print no raw control character (a model server on 127.0.0.1)', () => {
  const evilName = 'src/evil\x1b]0;pwned\x07\u202e.ts';
  let root: string;
  let server: LlmServer;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    root = makeTree({
      [evilName]: `export function clipboardWriter() {\n  return "\x1b]52;c;ZWNobyBwd25lZA==\x07 \x1b[2J \u202e marker";\n}\n`,
      'src/plain.ts': 'export const plain = 1;\n',
    });
    server = await startLlmServer();
    env = {
      QUARRY_EMBED: 'none',
      NO_COLOR: '1',
      QUARRY_MODEL: 'lmstudio:qwen2.5-coder-7b-instruct',
      QUARRY_LLM_URL: `${server.url}/v1`,
    };
    const r = await runCliAsync(['index', root, '--quiet'], { env });
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await server.close();
    removeTree(root);
  });

  it('ask --dry-run escapes file names and their text; --json keeps them', async () => {
    const args = ['--root', root, 'ask', '--dry-run', '--show-sources', 'clipboardWriter marker'];
    const r = await runCliAsync(args, { env });
    assert.equal(r.code, 0, r.stderr);
    assertSafe(r.stdout, 'ask --dry-run');
    assert.ok(r.stdout.includes('\\x1b]52;c;ZWNobyBwd25lZA==\\x07'), "the file's text is there, escaped");
    assert.match(r.stdout, /^\[\d+\] "src\/evil\\x1b\]0;pwned\\x07\\u\{202e\}\.ts":\d+-\d+/m);
    const json = await runCliAsync([...args, '--json'], { env });
    const j = JSON.parse(json.stdout) as { user: string; sources: Array<{ path: string }> };
    assert.ok(j.user.includes('\x1b]52;c;ZWNobyBwd25lZA==\x07'), '--json keeps the raw text');
    assert.ok(j.sources.some((s) => s.path === evilName));
  });

  it("ask's streamed answer is escaped piece by piece, a sequence cut between pieces included; --json keeps it", async () => {
    server.reply = () => HOSTILE;
    server.split = (text) => Array.from(text); // one character a piece: every escape sequence arrives cut
    try {
      const r = await runCliAsync(['--root', root, 'ask', 'what does clipboardWriter return?'], { env });
      assert.equal(r.code, 0, r.stderr);
      assertSafe(r.stdout, 'ask');
      assert.ok(r.stdout.includes('\\x1b]52;c;ZWNobyBwd25lZA==\\x07 then \\x1b[2J and \\x1b]0;title\\x07'));
      assert.ok(r.stdout.includes('\\u{202e}evil\\u{202c}'));
      assert.ok(r.stdout.includes('漢字 😀 done.'));
      const json = await runCliAsync(['--root', root, 'ask', '--json', 'what does it return?'], { env });
      assert.equal((JSON.parse(json.stdout) as { answer: string }).answer, HOSTILE);
    } finally {
      server.split = undefined;
    }
  });

  it("chat's answer is escaped (chat off a terminal, its input piped)", async () => {
    server.reply = () => HOSTILE;
    const tsx = join(REPO, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs');
    const child = spawn(process.execPath, ['--import', tsx, CLI, '--root', root, 'chat', '--no-index'], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    child.stdin.end('what does clipboardWriter return?\n/quit\n');
    const code = await new Promise((r) => child.on('close', r));
    assert.equal(code, 0, out);
    assert.ok(out.includes('\\x1b]52;c;ZWNobyBwd25lZA==\\x07'), out);
    assertSafe(out, 'chat');
  });

  it("edit's diff is escaped: the model wrote the text it shows", async () => {
    server.reply = () => `${BEGIN}\nexport const plain = "\x1b]52;c;ZWNobyBwd25lZA==\x07\u202e";\n${END}\n`;
    const edit = await runCliAsync(['--root', root, 'edit', 'src/plain.ts', 'make it a string'], { env });
    assert.equal(edit.code, 0, edit.stderr);
    assertSafe(edit.stdout, 'edit');
    assert.match(edit.stdout, /^\+export const plain = "\\x1b\]52;c;ZWNobyBwd25lZA==\\x07\\u\{202e\}";$/m);
  });

  it('an error that echoes an argument shows its control characters escaped', async () => {
    const sym = await runCliAsync(['--root', root, 'symbols', 'no\x1b[2Jsuch\u202e.py'], { env });
    assert.notEqual(sym.code, 0);
    assertSafe(sym.stderr, 'symbols');
    assert.ok(sym.stderr.includes('no\\x1b[2Jsuch\\u{202e}.py'), sym.stderr);
    const unknown = await runCliAsync(['bogus\x1b]0;title\x07'], { env });
    assert.equal(unknown.code, 2);
    assertSafe(unknown.stderr, 'an unknown command');
    assert.match(unknown.stderr, /unknown command 'bogus\\x1b\]0;title\\x07'/);
  });
});
