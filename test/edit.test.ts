import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BEGIN, END, extractFile } from '../src/answer/edit.ts';
import { makeTree, removeTree, runCliAsync } from './helpers.ts';
import { type LlmServer, startLlmServer } from './llm-server.ts';

const cli = (args: string[], env: NodeJS.ProcessEnv) => runCliAsync(args, { env });

// a file with CRLF-free text, a non-ASCII character and no final newline change: undo must give back these bytes
const ORIGINAL = 'def rate(x):\n    # “per second”\n    return x * 1\n\n\ndef other():\n    return 0\n';

describe('quarry edit, undo and history (end to end, against a model server on 127.0.0.1)', () => {
  let root: string;
  let server: LlmServer;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    root = makeTree({ 'app/rates.py': ORIGINAL, 'app/use.py': 'from rates import rate\n\nprint(rate(2))\n' });
    execFileSync('git', ['init', '-q'], { cwd: root });
    execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', 'add', '.'], { cwd: root });
    execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'init'], {
      cwd: root,
    });
    server = await startLlmServer();
    env = { QUARRY_MODEL: 'lmstudio:qwen2.5-coder-7b-instruct', QUARRY_LLM_URL: `${server.url}/v1` };
    const r = await cli(['index', root, '--quiet'], env);
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await server.close();
    removeTree(root);
  });

  /** The fake model edits whatever file it was sent: `x * 1` becomes `x * 60`. */
  const editingModel = (body: Record<string, unknown>) => {
    const user = JSON.stringify(body);
    assert.ok(user.includes('return x * 1'), 'the file went in whole');
    return `${BEGIN}\n${ORIGINAL.replace('x * 1', 'x * 60')}${END}\n`;
  };

  it('prints a diff and writes nothing without --write; the file is excluded from retrieval', async () => {
    server.reply = editingModel;
    const r = await cli(['--root', root, 'edit', 'app/rates.py', 'make the rate per minute'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^--- a\/app\/rates\.py/m);
    assert.match(r.stdout, /^-\s+return x \* 1$/m);
    assert.match(r.stdout, /^\+\s+return x \* 60$/m);
    assert.match(r.stdout, /`quarry apply app\/rates\.py` writes exactly this diff/);
    assert.equal(readFileSync(join(root, 'app/rates.py'), 'utf8'), ORIGINAL);
    const sent = JSON.stringify(server.requests.at(-1)!.body);
    assert.equal(sent.split('app/rates.py:1-7').length - 1, 1, 'the target appears once, as the first block');
    assert.match(sent, /"temperature":0\b/);
  });

  it('writes what was reviewed: --write and apply take the diff shown, never a second answer', async () => {
    // regression: `edit --write` asked the model again, so what landed could differ from the diff that was shown
    server.reply = editingModel;
    const shown = await cli(['--root', root, 'edit', 'app/rates.py', 'rate per minute'], env);
    assert.equal(shown.code, 0, shown.stderr);
    const asked = server.requests.length;
    server.reply = () => `${BEGIN}\n${ORIGINAL.replace('x * 1', 'x * 3600')}${END}\n`; // a second answer would differ
    const w = await cli(['--root', root, 'edit', 'app/rates.py', 'rate per minute', '--write'], env);
    assert.equal(w.code, 0, w.stderr);
    assert.match(w.stdout, /wrote app\/rates\.py \(the diff reviewed before\)/);
    assert.equal(server.requests.length, asked, 'the model was not asked again');
    assert.equal(readFileSync(join(root, 'app/rates.py'), 'utf8'), ORIGINAL.replace('x * 1', 'x * 60'));
    assert.equal((await cli(['--root', root, 'undo'], env)).code, 0);
    // apply: the reviewed diff, and nothing once the file changed under it
    server.reply = editingModel;
    assert.equal((await cli(['--root', root, 'edit', 'app/rates.py', 'rate per minute'], env)).code, 0);
    writeFileSync(join(root, 'app/rates.py'), `${ORIGINAL}# touched\n`);
    const stale = await cli(['--root', root, 'apply', 'app/rates.py'], env);
    assert.equal(stale.code, 9);
    assert.match(
      stale.stderr,
      /^quarry: app\/rates\.py changed since the diff was shown .*run `quarry edit` again$/m,
    );
    writeFileSync(join(root, 'app/rates.py'), ORIGINAL);
    const applied = await cli(['--root', root, 'apply'], env);
    assert.equal(applied.code, 0, applied.stderr);
    assert.equal(readFileSync(join(root, 'app/rates.py'), 'utf8'), ORIGINAL.replace('x * 1', 'x * 60'));
    const again = await cli(['--root', root, 'apply'], env);
    assert.equal(again.code, 2, 'written once: nothing waits any more');
    assert.equal((await cli(['--root', root, 'undo'], env)).code, 0);
    assert.equal(readFileSync(join(root, 'app/rates.py'), 'utf8'), ORIGINAL);
  });

  it('--dry-run prints the prompt with no model at all', async () => {
    const before = server.requests.length;
    const r = await cli(['--root', root, 'edit', 'app/rates.py', 'rate per minute', '--dry-run'], {
      QUARRY_MODEL: '',
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /--- system ---[\s\S]*editing one file[\s\S]*Edit app\/rates\.py: rate per minute/,
    );
    assert.match(r.stdout, /prompt tokens .*no model called/);
    assert.equal(server.requests.length, before);
  });

  it('leaves the file untouched when the model answers without the markers', async () => {
    server.reply = () => `Sure! Here is the file:\n${ORIGINAL.replace('x * 1', 'x * 60')}`;
    const r = await cli(['--root', root, 'edit', 'app/rates.py', 'make it per minute', '--write'], env);
    assert.equal(r.code, 9);
    assert.match(
      r.stderr,
      /did not return the file between <<BEGIN_FILE>> and <<END_FILE>>.*nothing was changed/,
    );
    assert.equal(r.stderr.trim().split('\n').length, 1);
    assert.equal(readFileSync(join(root, 'app/rates.py'), 'utf8'), ORIGINAL);
  });

  it('writes with --write, and undo restores the bytes exactly; history lists both', async () => {
    server.reply = editingModel;
    const w = await cli(['--root', root, 'edit', 'app/rates.py', 'per minute', '--write'], env);
    assert.equal(w.code, 0, w.stderr);
    assert.match(w.stdout, /wrote app\/rates\.py; snapshot \S+/);
    assert.equal(readFileSync(join(root, 'app/rates.py'), 'utf8'), ORIGINAL.replace('x * 1', 'x * 60'));
    const h = await cli(['--root', root, 'history', '--json'], env);
    const hist = JSON.parse(h.stdout) as Array<{ path: string; instruction: string; undone?: string }>;
    assert.equal(hist[0]!.path, 'app/rates.py');
    assert.equal(hist[0]!.instruction, 'per minute');
    assert.equal(hist[0]!.undone, undefined);
    const u = await cli(['--root', root, 'undo'], env);
    assert.equal(u.code, 0, u.stderr);
    assert.ok(
      readFileSync(join(root, 'app/rates.py')).equals(Buffer.from(ORIGINAL, 'utf8')),
      'byte for byte',
    );
    const again = await cli(['--root', root, 'undo'], env);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /nothing to undo/);
  });

  it('edits a file with uncommitted changes only with --force, and undo gives those changes back', async () => {
    const dirty = `${ORIGINAL}# my local note\n`;
    writeFileSync(join(root, 'app/rates.py'), dirty);
    server.reply = () => `${BEGIN}\n${dirty.replace('x * 1', 'x * 60')}${END}`;
    const refused = await cli(['--root', root, 'edit', 'app/rates.py', 'per minute', '--write'], env);
    assert.equal(refused.code, 9);
    assert.match(refused.stderr, /uncommitted changes: commit them first, or pass --force/);
    assert.equal(readFileSync(join(root, 'app/rates.py'), 'utf8'), dirty);
    const forced = await cli(
      ['--root', root, 'edit', 'app/rates.py', 'per minute', '--write', '--force'],
      env,
    );
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /keeps your uncommitted changes/);
    // the user changes the file after the edit: undo refuses rather than lose that
    writeFileSync(join(root, 'app/rates.py'), `${readFileSync(join(root, 'app/rates.py'), 'utf8')}# later\n`);
    const careful = await cli(['--root', root, 'undo', 'app/rates.py'], env);
    assert.equal(careful.code, 9);
    assert.match(careful.stderr, /changed after quarry edited it/);
    const u = await cli(['--root', root, 'undo', 'app/rates.py', '--force'], env);
    assert.equal(u.code, 0, u.stderr);
    assert.equal(readFileSync(join(root, 'app/rates.py'), 'utf8'), dirty);
  });

  it("says --force in edit's hint when apply will need it: a new file git has never seen", async () => {
    // regression: the hint said `quarry apply FILE`, which then refused the untracked file and asked for --force
    writeFileSync(join(root, 'app/fresh.py'), ORIGINAL);
    server.reply = editingModel;
    const shown = await cli(['--root', root, 'edit', 'app/fresh.py', 'rate per minute'], env);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /`quarry apply --force app\/fresh\.py` writes exactly this diff \(--force: /);
    const applied = await cli(['--root', root, 'apply', '--force', 'app/fresh.py'], env);
    assert.equal(applied.code, 0, applied.stderr);
    assert.match(readFileSync(join(root, 'app/fresh.py'), 'utf8'), /x \* 60/);
  });

  it('refuses paths outside the project', async () => {
    const r = await cli(['--root', root, 'edit', '../../etc/passwd', 'x'], env);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /outside the project/);
  });

  it('extracts only what is between the markers, strictly', () => {
    assert.equal(extractFile(`${BEGIN}\nabc\n${END}`), 'abc\n');
    assert.equal(extractFile(`\n${BEGIN}\nabc\n${END}\n\n`), 'abc\n');
    assert.throws(() => extractFile(`abc`), /did not return the file/);
    assert.throws(() => extractFile(`${END}\nabc\n${BEGIN}`), /did not return the file/);
    assert.throws(() => extractFile(`${BEGIN}\na\n${END}\n${BEGIN}\nb\n${END}`), /did not return the file/);
    assert.throws(() => extractFile(`Here you go:\n${BEGIN}\nabc\n${END}`), /outside/);
  });
});
