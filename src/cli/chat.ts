import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { ask } from '../answer/ask.ts';
import { applyEdit, proposeEdit, undoEdit } from '../answer/edit.ts';
import { isQuarryError, QuarryError } from '../errors.ts';
import { type LlmProvider, openLlm } from '../llm/provider.ts';
import type { ChatMessage } from '../llm/types.ts';
import type { LocalProject, Project } from '../project/local.ts';
import type { AssembledContext } from '../project/types.ts';
import { startAutoSync } from '../watch/autosync.ts';
import { indexPaths } from '../workspace/root.ts';
import { type CliContext, colorDiff, formatSources, openAnyProject } from './answer-commands.ts';
import { StreamingMarkdown } from './markdown.ts';

const HELP = `Ask anything about the code, or:
  /all [mask]              answer the next question from every indexed file (or those matching the mask)
  /sources                 what was sent with the last answer
  /model [provider:name]   show or switch the model
  /edit <file> <instr…>    edit a file: shows the diff and asks before writing
  /undo                    restore the last file quarry edited
  /diff                    git diff of the working tree
  /map                     the repository map
  /clear                   forget the conversation
  /help                    this help
  /quit                    leave (also Ctrl-D)
  !command                 run a shell command`;

function historyFile(root: string | null): string | null {
  return root ? join(indexPaths(root).dir, 'chat-history') : null;
}

function loadHistory(root: string | null): string[] {
  const f = historyFile(root);
  if (!f || !existsSync(f)) return [];
  // readline wants newest first
  return readFileSync(f, 'utf8').split('\n').filter(Boolean).slice(-500).reverse();
}

/** A status line for the prompt: how far the background embedding has come. */
async function phaseLine(project: Project): Promise<string> {
  try {
    const e = (await project.status()).embedding;
    if (!e?.embedder || !e.files) return '';
    if (e.refined >= e.files) return '';
    if (e.coarse < e.files) return `phase 1 ${Math.floor((100 * e.coarse) / e.files)}%`;
    return `phase 2 ${Math.floor((100 * e.refined) / e.files)}%`;
  } catch {
    return '';
  }
}

export interface ChatOptions {
  model?: string;
  /** Do not start background indexing. */
  index?: boolean;
}

/** The terminal workspace: ask, edit with undo, run commands; auto-sync runs meanwhile and never holds exit. */
export async function runChat(cli: CliContext, options: ChatOptions): Promise<void> {
  const { io } = cli;
  const project = await openAnyProject(cli.globals());
  // edits, !commands, /diff and history need the checkout; a remote project answers questions only
  const local = project.remote ? null : (project as LocalProject);
  const needLocal = (what: string): LocalProject => {
    if (!local)
      throw new QuarryError('BAD_INPUT', `${what} needs the checkout: run chat there, without --remote`);
    return local;
  };
  const c = cli.colors(io.stdout);
  // auto-sync: saved files are re-indexed as you chat, and embedding runs on low-priority workers meanwhile
  const sync =
    options.index !== false && local && local.location === local.root
      ? await startAutoSync(local, { onError: () => {} }).catch(() => undefined)
      : undefined;
  if (sync) void sync.syncNow().catch(() => undefined);
  let llm: LlmProvider | undefined;
  let modelSpec = options.model ?? project.config.llm.model;
  const conversation: ChatMessage[] = [];
  let lastContext: AssembledContext | undefined;
  let allMask: string | true | undefined;
  let busy: AbortController | undefined;
  let windowNoted = false;

  const rl: Interface = createInterface({
    input: process.stdin,
    output: io.stdout,
    terminal: Boolean(io.stdout.isTTY && process.stdin.isTTY),
    history: loadHistory(local?.root ?? null),
    historySize: 500,
  });
  const say = (s: string) => io.stdout.write(s.endsWith('\n') ? s : `${s}\n`);
  const fail = (err: unknown) => {
    if (isQuarryError(err)) say(`${c.red('error:')} ${err.message}`);
    else say(`${c.red('error:')} ${(err as Error).message.split('\n')[0]}`);
  };
  const model = async () => {
    if (!modelSpec)
      throw new QuarryError(
        'BAD_CONFIG',
        'no model yet: /model provider:name (e.g. ollama:qwen2.5-coder), or set QUARRY_MODEL; /sources shows what a question retrieves',
      );
    llm ??= await openLlm(project.config.llm, modelSpec);
    return llm;
  };
  const confirm = (q: string) =>
    new Promise<boolean>((r) => rl.question(q, (a) => r(/^y(es)?$/i.test(a.trim()))));

  const prompt = async () => {
    const phase = await phaseLine(project);
    rl.setPrompt(
      `${c.bold('quarry')}${phase ? c.dim(` [${phase}]`) : ''}${allMask ? c.yellow(' /all') : ''}${c.bold('>')} `,
    );
    rl.prompt();
  };

  const handle = async (line: string): Promise<boolean> => {
    const input = line.trim();
    if (!input) return true;
    const hf = historyFile(local?.root ?? null);
    if (hf) appendFileSync(hf, `${input.replace(/\n/g, ' ')}\n`);
    if (input.startsWith('!')) {
      const r = spawnSync(input.slice(1), {
        shell: true,
        cwd: local?.root ?? process.cwd(),
        stdio: ['ignore', 'pipe', 'pipe'],
        encoding: 'utf8',
      });
      io.stdout.write(r.stdout ?? '');
      if (r.stderr) io.stdout.write(c.red(r.stderr));
      if (r.status) say(c.dim(`(exit ${r.status})`));
      return true;
    }
    if (input.startsWith('/')) {
      const [cmd, ...rest] = input.slice(1).split(/\s+/);
      const arg = rest.join(' ');
      switch (cmd) {
        case 'quit':
        case 'exit':
        case 'q':
          return false;
        case 'help':
          say(HELP);
          return true;
        case 'clear':
          conversation.length = 0;
          say(c.dim('conversation cleared'));
          return true;
        case 'all':
          allMask = arg || true;
          say(c.dim(`the next question gets every indexed file${arg ? ` matching ${arg}` : ''}`));
          return true;
        case 'sources':
          say(lastContext ? formatSources(lastContext) : c.dim('nothing sent yet'));
          return true;
        case 'model':
          if (!arg)
            say(
              modelSpec
                ? `model: ${modelSpec}`
                : 'no model: /model provider:name (e.g. ollama:qwen2.5-coder)',
            );
          else {
            const next = await openLlm(project.config.llm, arg);
            llm = next;
            modelSpec = arg;
            say(c.dim(`model: ${arg}`));
          }
          return true;
        case 'map': {
          const map = await project.repoMap({ budget: 1500 });
          say(map.text || 'no definitions in the index');
          return true;
        }
        case 'diff': {
          const cwd = needLocal('/diff').root;
          const inside = spawnSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd, encoding: 'utf8' });
          if (inside.status !== 0 || inside.stdout.trim() !== 'true') {
            say(`${cwd} is not a git checkout: /diff shows git's changes; /undo restores quarry's last edit`);
            return true;
          }
          const r = spawnSync('git', ['diff'], { cwd, encoding: 'utf8' });
          say(
            r.status === 0
              ? colorDiff(r.stdout || '(no changes)\n', c)
              : c.red(r.stderr || 'not a git repository'),
          );
          return true;
        }
        case 'undo': {
          const snap = undoEdit(needLocal('/undo'));
          say(`restored ${snap.path}`);
          return true;
        }
        case 'edit': {
          const [file, ...words] = rest;
          if (!file || !words.length) {
            say('usage: /edit <file> <instruction>');
            return true;
          }
          const instruction = words.join(' ');
          say(c.dim(`editing ${file}…`));
          const edit = await proposeEdit(needLocal('/edit'), file, instruction, { llm: await model() });
          if (!edit.changed) {
            say('the model changed nothing');
            return true;
          }
          io.stdout.write(colorDiff(edit.diff, c));
          if (await confirm('write it? [y/N] ')) {
            const { snapshot } = applyEdit(needLocal('/edit'), edit, instruction, { force: true });
            say(`wrote ${edit.path} (snapshot ${snapshot.id}; /undo restores it)`);
          } else say(c.dim('not written'));
          return true;
        }
        default:
          say(`unknown command /${cmd}: /help lists them`);
          return true;
      }
    }
    // a question: a spinner while it is retrieved and the model thinks, then the answer as it streams
    busy = new AbortController();
    const md = new StreamingMarkdown(io.stdout, { color: c.isColorSupported });
    md.waiting('searching');
    const res = await ask(project, input, {
      llm: await model(),
      history: conversation.slice(-6),
      // a follow-up is retrieved together with the questions before it
      previous: conversation
        .filter((m) => m.role === 'user')
        .slice(-2)
        .map((m) => m.content),
      signal: busy.signal,
      ...(allMask ? { all: allMask } : {}),
    }).finally(() => md.idle());
    allMask = undefined;
    if (res.routed) {
      say(res.routed.text);
      say(c.dim('(from the symbol index)'));
      return true;
    }
    if (res.fallback) say(c.yellow(`note: ${res.fallback}`));
    if (res.note && !windowNoted) {
      say(c.yellow(`note: ${res.note}`));
      windowNoted = true; // once per session, not every turn
    }
    lastContext = res.context;
    let answer = '';
    md.waiting('thinking');
    try {
      for await (const piece of res.stream!) {
        answer += piece;
        md.push(piece);
      }
    } finally {
      md.end();
    }
    conversation.push({ role: 'user', content: input }, { role: 'assistant', content: answer });
    return true;
  };

  say(c.dim(`quarry chat in ${project.location} — /help for commands, Ctrl-D to leave`));
  await prompt();
  // lines are handled one at a time, in order
  let chain = Promise.resolve(true);
  let closed = false;
  await new Promise<void>((done) => {
    // Ctrl-C: stops an answer; else clears what is typed; on an empty line, a second one within 2 s leaves
    let lastInterrupt = 0;
    rl.on('SIGINT', () => {
      if (busy && !busy.signal.aborted) {
        busy.abort();
        return;
      }
      if (rl.line) {
        rl.write(null, { ctrl: true, name: 'e' });
        rl.write(null, { ctrl: true, name: 'u' });
        lastInterrupt = 0;
        return;
      }
      if (Date.now() - lastInterrupt < 2000) {
        rl.close();
        return;
      }
      lastInterrupt = Date.now();
      io.stdout.write(`\n${c.dim('(Ctrl-C again to leave, or Ctrl-D)')}\n`);
      rl.prompt();
    });
    rl.on('line', (line) => {
      chain = chain.then(async (go) => {
        if (!go) return false;
        try {
          const more = await handle(line);
          if (!more) {
            rl.close();
            return false;
          }
        } catch (err) {
          fail(err);
        } finally {
          busy = undefined;
        }
        if (!closed) await prompt();
        return true;
      });
    });
    rl.on('close', () => {
      closed = true;
      // finish the line in hand (a pasted script ends with EOF), then leave: background indexing is a separate process
      void chain.finally(done);
    });
  });
  // leaving never waits for embedding: it is aborted at its next slice and resumes on the next run
  await sync?.stop();
  await project.close();
}
