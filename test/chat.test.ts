import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BEGIN, END } from '../src/answer/edit.ts';
import { CLI, makeTree, REPO, removeTree, runCli } from './helpers.ts';
import { type LlmServer, startLlmServer } from './llm-server.ts';

const ORIGINAL = 'def rate(x):\n    return x * 1\n';
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]|\u001b[=>]|\r/g;

/** quarry chat in a real pseudo-terminal (util-linux `script` allocates it), driven line by line. */
class Terminal {
  private out = '';
  private readonly child;
  readonly exited: Promise<number | null>;
  constructor(cmd: string, env: NodeJS.ProcessEnv) {
    this.child = spawn('script', ['-qfec', cmd, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout.on('data', (d) => {
      this.out += d.toString().replace(ANSI, '');
    });
    this.child.stderr.on('data', (d) => {
      this.out += d.toString().replace(ANSI, '');
    });
    this.exited = new Promise((r) => this.child.on('close', (code) => r(code)));
  }
  /** Everything shown since `mark`. */
  since(mark: number): string {
    return this.out.slice(mark);
  }
  get mark(): number {
    return this.out.length;
  }
  async waitFor(re: RegExp, from: number, ms = 60_000): Promise<string> {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const seen = this.out.slice(from);
      if (re.test(seen)) return seen;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`timed out waiting for ${re}; the terminal showed:\n${this.out.slice(from)}`);
  }
  type(line: string): void {
    this.child.stdin.write(`${line}\r`);
  }
  /** Keys without Enter (\x03 is Ctrl-C). */
  write(keys: string): void {
    this.child.stdin.write(keys);
  }
  kill(): void {
    this.child.kill('SIGKILL');
  }
}

describe('quarry chat in a pseudo-terminal', () => {
  let root: string;
  let server: LlmServer;
  before(async () => {
    root = makeTree({ 'app/rates.py': ORIGINAL, 'app/notes.md': '# Notes\n\nRates are per second.\n' });
    execFileSync('git', ['init', '-q'], { cwd: root });
    server = await startLlmServer();
    const r = runCli(['index', root, '--quiet']);
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await server.close();
    removeTree(root);
  });

  it('asks, edits with a diff and a confirmation, undoes, runs !ls, and quits at once', async () => {
    const env = {
      ...process.env,
      QUARRY_EMBED: 'none',
      QUARRY_MODEL: 'lmstudio:qwen2.5-coder-7b-instruct',
      QUARRY_LLM_URL: `${server.url}/v1`,
      NO_COLOR: '1',
      TERM: 'xterm',
    };
    const tsx = join(REPO, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs');
    const term = new Terminal(`'${process.execPath}' --import '${tsx}' '${CLI}' --root '${root}' chat`, env);
    try {
      let m = term.mark;
      await term.waitFor(/quarry> $/, m);

      server.reply = () => 'The rate is computed in `rate` [1] app/rates.py:1-2.';
      m = term.mark;
      term.type('where is the rate computed?');
      const answer = await term.waitFor(/app\/rates\.py:1-2\.\n[\s\S]*quarry> $/, m);
      assert.match(answer, /The rate is computed in rate \[1\] app\/rates\.py:1-2\./);

      m = term.mark;
      term.type('/sources');
      await term.waitFor(/\[1\] app\/rates\.py:1-2[\s\S]*quarry> $/, m);

      server.reply = () => `${BEGIN}\n${ORIGINAL.replace('x * 1', 'x * 60')}${END}`;
      m = term.mark;
      term.type('/edit app/rates.py make it per minute');
      const diff = await term.waitFor(/write it\? \[y\/N\] $/, m);
      assert.match(diff, /-\s+return x \* 1\n\+\s+return x \* 60/);
      m = term.mark;
      term.type('y');
      await term.waitFor(/wrote app\/rates\.py[\s\S]*quarry> $/, m);
      assert.equal(readFileSync(join(root, 'app/rates.py'), 'utf8'), ORIGINAL.replace('x * 1', 'x * 60'));

      m = term.mark;
      term.type('/undo');
      await term.waitFor(/restored app\/rates\.py[\s\S]*quarry> $/, m);
      assert.equal(readFileSync(join(root, 'app/rates.py'), 'utf8'), ORIGINAL);

      m = term.mark;
      term.type('!ls app');
      await term.waitFor(/notes\.md\n(.*\n)?rates\.py\n[\s\S]*quarry> $/, m);

      term.type('/quit');
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([
        term.exited,
        new Promise<'slow'>((r) => {
          timer = setTimeout(() => r('slow'), 20_000);
        }),
      ]);
      clearTimeout(timer);
      assert.equal(code, 0, 'quits at once');
    } finally {
      term.kill();
    }
    // history across sessions
    assert.match(
      readFileSync(join(root, '.quarry', 'chat-history'), 'utf8'),
      /where is the rate computed\?\n/,
    );
  });
  it('streams with a spinner, renders markdown blocks, Ctrl-C clears the line then quits; /diff outside git says so', async () => {
    const plain = makeTree({
      'app/auth.py': 'def check_password(user, password):\n    return user.password == password\n',
    });
    try {
      assert.equal(runCli(['index', plain, '--quiet']).code, 0);
      const env = {
        ...process.env,
        QUARRY_EMBED: 'none',
        QUARRY_MODEL: 'lmstudio:qwen2.5-coder-7b-instruct',
        QUARRY_LLM_URL: `${server.url}/v1`,
        FORCE_COLOR: '1',
        NO_COLOR: '',
        TERM: 'xterm',
      };
      const tsx = join(REPO, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs');
      const term = new Terminal(
        `'${process.execPath}' --import '${tsx}' '${CLI}' --root '${plain}' chat`,
        env,
      );
      try {
        let m = term.mark;
        await term.waitFor(/quarry> $/, m);
        server.reply = () =>
          '## Where\n\nThe **password** is checked in `check_password` [1].\n\n```python\nreturn user.password == password\n```\n';
        server.delayMs = 150;
        m = term.mark;
        term.type('how is the password checked?');
        // the spinner shows before the first token, and the first words show before the answer is complete
        await term.waitFor(/thinking…/, m, 30_000);
        const partial = await term.waitFor(/Where/, m);
        assert.doesNotMatch(partial, /quarry> $/, 'the answer streams: its start shows before it ends');
        const answer = await term.waitFor(/return user\.password == password[\s\S]*quarry> $/, m);
        server.delayMs = undefined;
        // rendered: the emphasis and the inline code lose their marks once their block is complete
        assert.match(answer, /The password is checked in check_password \[1\]\./);
        m = term.mark;
        term.type('/diff');
        await term.waitFor(/is not a git checkout: \/diff shows git's changes[\s\S]*quarry> $/, m);

        // Ctrl-C with text typed clears it; the chat stays
        m = term.mark;
        term.write('half a question');
        await term.waitFor(/half a question/, m);
        term.write('\x03');
        term.type('/help');
        const help = await term.waitFor(/\/quit[\s\S]*quarry> $/, m);
        assert.doesNotMatch(help, /unknown command/, 'the typed text was cleared before /help');
        // on an empty line: one Ctrl-C warns, a second leaves
        m = term.mark;
        term.write('\x03');
        await term.waitFor(/Ctrl-C again to leave/, m);
        term.write('\x03');
        const code = await Promise.race([
          term.exited,
          new Promise<'slow'>((r) => setTimeout(() => r('slow'), 20_000)),
        ]);
        assert.equal(code, 0);
      } finally {
        term.kill();
      }
    } finally {
      removeTree(plain);
    }
  });
});
