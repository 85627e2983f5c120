import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { createInterface, type Interface } from 'node:readline';
import { isQuarryError, QuarryError } from '../errors.ts';
import {
  applyEdit,
  ask,
  type ChatMessage,
  type LlmProvider,
  openLlm,
  proposeEdit,
  undoEdit,
} from '../host/answers.ts';
import { projectDataFile } from '../host/checkout.ts';
import { type AutoSync, startAutoSync } from '../host/serve.ts';
import type { LocalProject, Project } from '../project/local/index.ts';
import type { AssembledContext } from '../project/types.ts';
import type { CliContext, Colors } from './context.ts';
import { colorDiff, formatSources, safePath, visible } from './format.ts';
import { StreamingMarkdown } from './markdown.ts';
import { openAnyProject } from './open.ts';

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
  return root ? projectDataFile(root, 'chat-history') : null;
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

/** A slash command: handles its argument (and its words); false leaves the chat. */
type SlashCommand = (arg: string, rest: string[]) => Promise<boolean> | boolean;

/** One chat: the conversation, the model, the last context sent, and a handler per slash command. */
class ChatSession {
  private llm: LlmProvider | undefined;
  private modelSpec: string | undefined;
  private readonly conversation: ChatMessage[] = [];
  private lastContext: AssembledContext | undefined;
  private allMask: string | true | undefined;
  busy: AbortController | undefined;
  private windowNoted = false;
  readonly c: Colors;
  readonly rl: Interface;
  private readonly slash: Record<string, SlashCommand>;

  constructor(
    private readonly cli: CliContext,
    readonly project: Project,
    // edits, !commands, /diff and history need the checkout; a remote project answers questions only
    private readonly local: LocalProject | null,
    model: string | undefined,
  ) {
    this.c = cli.colors(cli.io.stdout);
    this.modelSpec = model;
    this.rl = createInterface({
      input: process.stdin,
      output: cli.io.stdout,
      terminal: Boolean(cli.io.stdout.isTTY && process.stdin.isTTY),
      history: loadHistory(local?.root ?? null),
      historySize: 500,
    });
    const quit = () => false;
    this.slash = {
      quit,
      exit: quit,
      q: quit,
      help: () => this.say(HELP),
      clear: () => this.clear(),
      all: (arg) => this.all(arg),
      sources: () =>
        this.say(this.lastContext ? formatSources(this.lastContext) : this.c.dim('nothing sent yet')),
      model: (arg) => this.switchModel(arg),
      map: () => this.map(),
      diff: () => this.diff(),
      undo: () => this.undo(),
      edit: (_arg, rest) => this.edit(rest),
    };
  }

  /** Writes a line; true, so that a slash command can end with it. */
  say(s: string): true {
    this.cli.io.stdout.write(s.endsWith('\n') ? s : `${s}\n`);
    return true;
  }

  fail(err: unknown): void {
    const message = isQuarryError(err) ? err.message : (err as Error).message.split('\n')[0]!;
    this.say(`${this.c.red('quarry:')} ${visible(message, { lines: true })}`);
  }

  private needLocal(what: string): LocalProject {
    if (!this.local)
      throw new QuarryError('BAD_INPUT', `${what} needs the checkout: run chat there, without --remote`);
    return this.local;
  }

  private async model(): Promise<LlmProvider> {
    if (!this.modelSpec)
      throw new QuarryError(
        'BAD_CONFIG',
        'no model yet: /model provider:name (e.g. ollama:qwen2.5-coder), or set QUARRY_MODEL; /sources shows what a question retrieves',
      );
    this.llm ??= await openLlm(this.project.config.llm, this.modelSpec);
    return this.llm;
  }

  private confirm(q: string): Promise<boolean> {
    return new Promise<boolean>((r) => this.rl.question(q, (a) => r(/^y(es)?$/i.test(a.trim()))));
  }

  async prompt(): Promise<void> {
    const { c } = this;
    const phase = await phaseLine(this.project);
    this.rl.setPrompt(
      `${c.bold('quarry')}${phase ? c.dim(` [${phase}]`) : ''}${this.allMask ? c.yellow(' /all') : ''}${c.bold('>')} `,
    );
    this.rl.prompt();
  }

  /** One line typed: a !command, a /command or a question; false when the chat is over. */
  async handle(line: string): Promise<boolean> {
    const input = line.trim();
    if (!input) return true;
    const hf = historyFile(this.local?.root ?? null);
    if (hf) appendFileSync(hf, `${input.replace(/\n/g, ' ')}\n`);
    if (input.startsWith('!')) return this.shell(input.slice(1));
    if (input.startsWith('/')) {
      const [cmd, ...rest] = input.slice(1).split(/\s+/);
      const run = Object.hasOwn(this.slash, cmd!) ? this.slash[cmd!] : undefined;
      if (!run) return this.say(`unknown command /${cmd}: /help lists them`);
      return run(rest.join(' '), rest);
    }
    return this.question(input);
  }

  private shell(command: string): true {
    const r = spawnSync(command, {
      shell: true,
      cwd: this.local?.root ?? process.cwd(),
      stdio: ['ignore', 'pipe', 'pipe'],
      encoding: 'utf8',
    });
    this.cli.io.stdout.write(r.stdout ?? '');
    if (r.stderr) this.cli.io.stdout.write(this.c.red(r.stderr));
    if (r.status) this.say(this.c.dim(`(exit ${r.status})`));
    return true;
  }

  private clear(): true {
    this.conversation.length = 0;
    return this.say(this.c.dim('conversation cleared'));
  }

  private all(arg: string): true {
    this.allMask = arg || true;
    return this.say(this.c.dim(`the next question gets every indexed file${arg ? ` matching ${arg}` : ''}`));
  }

  private async switchModel(arg: string): Promise<true> {
    if (!arg)
      return this.say(
        this.modelSpec
          ? `model: ${this.modelSpec}`
          : 'no model: /model provider:name (e.g. ollama:qwen2.5-coder)',
      );
    const next = await openLlm(this.project.config.llm, arg);
    this.llm = next;
    this.modelSpec = arg;
    return this.say(this.c.dim(`model: ${arg}`));
  }

  private async map(): Promise<true> {
    const map = await this.project.repoMap({ budget: 1500 });
    return this.say(map.text ? visible(map.text, { lines: true }) : 'no definitions in the index');
  }

  private diff(): true {
    const cwd = this.needLocal('/diff').root;
    const inside = spawnSync('git', ['rev-parse', '--is-inside-work-tree'], { cwd, encoding: 'utf8' });
    if (inside.status !== 0 || inside.stdout.trim() !== 'true')
      return this.say(
        `${cwd} is not a git checkout: /diff shows git's changes; /undo restores quarry's last edit`,
      );
    const r = spawnSync('git', ['diff'], { cwd, encoding: 'utf8' });
    return this.say(
      r.status === 0
        ? colorDiff(r.stdout || '(no changes)\n', this.c)
        : this.c.red(visible(r.stderr, { lines: true }) || 'not a git repository'),
    );
  }

  private undo(): true {
    const snap = undoEdit(this.needLocal('/undo'));
    return this.say(`restored ${safePath(snap.path)}`);
  }

  private async edit([file, ...words]: string[]): Promise<true> {
    if (!file || !words.length) return this.say('usage: /edit <file> <instruction>');
    const instruction = words.join(' ');
    this.say(this.c.dim(`editing ${file}…`));
    const edit = await proposeEdit(this.needLocal('/edit'), file, instruction, { llm: await this.model() });
    if (!edit.changed) return this.say('the model changed nothing');
    this.cli.io.stdout.write(colorDiff(edit.diff, this.c));
    if (await this.confirm('write it? [y/N] ')) {
      const { snapshot } = applyEdit(this.needLocal('/edit'), edit, instruction, { force: true });
      this.say(`wrote ${safePath(edit.path)} (snapshot ${snapshot.id}; /undo restores it)`);
    } else this.say(this.c.dim('not written'));
    return true;
  }

  /** A question: a spinner while it is retrieved and the model thinks, then the answer as it streams. */
  private async question(input: string): Promise<true> {
    const { c } = this;
    this.busy = new AbortController();
    const md = new StreamingMarkdown(this.cli.io.stdout, { color: c.isColorSupported });
    md.waiting('searching');
    const res = await ask(this.project, input, {
      llm: await this.model(),
      history: this.conversation.slice(-6),
      // a follow-up is retrieved together with the questions before it
      previous: this.conversation
        .filter((m) => m.role === 'user')
        .slice(-2)
        .map((m) => m.content),
      signal: this.busy.signal,
      ...(this.allMask ? { all: this.allMask } : {}),
    }).finally(() => md.idle());
    this.allMask = undefined;
    if (res.routed) {
      this.say(visible(res.routed.text, { lines: true }));
      return this.say(c.dim('(from the symbol index)'));
    }
    if (res.fallback) this.say(c.yellow(`note: ${visible(res.fallback)}`));
    if (res.note && !this.windowNoted) {
      this.say(c.yellow(`note: ${visible(res.note)}`));
      this.windowNoted = true; // once per session, not every turn
    }
    this.lastContext = res.context;
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
    this.conversation.push({ role: 'user', content: input }, { role: 'assistant', content: answer });
    return true;
  }
}

/** Ctrl-C: stops an answer; else clears what is typed; on an empty line, a second one within 2 s leaves. */
function onInterrupt(session: ChatSession, io: CliContext['io']): () => void {
  const { rl, c } = session;
  let lastInterrupt = 0;
  return () => {
    if (session.busy && !session.busy.signal.aborted) {
      session.busy.abort();
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
  };
}

/** Reads lines until the chat is left (/quit, Ctrl-D, Ctrl-C twice); lines are handled one at a time, in order. */
function converse(session: ChatSession, io: CliContext['io']): Promise<void> {
  const { rl } = session;
  let chain = Promise.resolve(true);
  let closed = false;
  return new Promise<void>((done) => {
    rl.on('SIGINT', onInterrupt(session, io));
    rl.on('line', (line) => {
      chain = chain.then(async (go) => {
        if (!go) return false;
        try {
          const more = await session.handle(line);
          if (!more) {
            rl.close();
            return false;
          }
        } catch (err) {
          session.fail(err);
        } finally {
          session.busy = undefined;
        }
        if (!closed) await session.prompt();
        return true;
      });
    });
    rl.on('close', () => {
      closed = true;
      // finish the line in hand (a pasted script ends with EOF), then leave: background indexing is a separate process
      void chain.finally(done);
    });
  });
}

/** The terminal workspace: ask, edit with undo, run commands; auto-sync runs meanwhile and never holds exit. */
export async function runChat(cli: CliContext, options: ChatOptions): Promise<void> {
  const project = await openAnyProject(cli.globals());
  // edits, !commands, /diff and history need the checkout; a remote project answers questions only
  const local = project.remote ? null : (project as LocalProject);
  // auto-sync: saved files are re-indexed as you chat, and embedding runs on low-priority workers meanwhile
  const sync: AutoSync | undefined =
    options.index !== false && local && local.location === local.root
      ? await startAutoSync(local, { onError: () => {} }).catch(() => undefined)
      : undefined;
  if (sync) void sync.syncNow().catch(() => undefined);
  const session = new ChatSession(cli, project, local, options.model ?? project.config.llm.model);
  session.say(session.c.dim(`quarry chat in ${project.location} — /help for commands, Ctrl-D to leave`));
  await session.prompt();
  await converse(session, cli.io);
  // leaving never waits for embedding: it is aborted at its next slice and resumes on the next run
  await sync?.stop();
  await project.close();
}
