import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { DEFAULT_CONFIG, type QuarryConfig, type UserConfig } from '../src/config/config.ts';
import { setTrust } from '../src/config/trust.ts';
import {
  indexProject,
  openProject,
  type LocalProject as Project,
  searchProject,
} from '../src/project/local/index.ts';
import type { SearchResponse } from '../src/search/search.ts';
import type { FileUpdate } from '../src/store/types.ts';

// tests count what they embed: the user's shared embedding cache would answer from earlier runs (its own test turns
// it on, in a folder of its own)
process.env.QUARRY_SHARED_CACHE ??= 'off';

export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
export const FIXTURES = join(REPO, 'test', 'fixtures');
export const CLI = join(REPO, 'src', 'cli', 'run.ts');
/** tsx by absolute URL: the CLI runs with other working directories, where a bare `tsx` does not resolve. */
const TSX = import.meta.resolve('tsx');

export function testConfig(over: Partial<QuarryConfig> = {}): QuarryConfig {
  return { ...DEFAULT_CONFIG, ...over, chunk: { ...DEFAULT_CONFIG.chunk, ...over.chunk } };
}

/** A temporary folder holding `files` (path → content); removed by the returned cleanup. */
export function makeTree(files: Record<string, string | Buffer>, prefix = 'quarry-test-'): string {
  const root = mkdtempSync(join(tmpdir(), prefix));
  writeFiles(root, files);
  return root;
}

/** A temporary copy of `test/fixtures/polyglot` (same bytes and mtimes), registered in `trees` for cleanup. */
export function copyPolyglot(trees: string[]): string {
  const root = makeTree({});
  trees.push(root);
  cpSync(join(FIXTURES, 'polyglot'), root, { recursive: true, preserveTimestamps: true });
  return root;
}

export function writeFiles(root: string, files: Record<string, string | Buffer>): void {
  for (const [rel, content] of Object.entries(files)) {
    const abs = join(root, rel);
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, content);
  }
}

export function removeTree(root: string): void {
  rmSync(root, { recursive: true, force: true });
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Lexical unless a test asks for vectors: embedding with the real model is slow, and lexical tests pin rankings. */
const CLI_ENV = {
  ...process.env,
  NO_COLOR: '1',
  FORCE_COLOR: '',
  XDG_CONFIG_HOME: join(tmpdir(), 'quarry-no-config'),
  QUARRY_EMBED: 'none',
};

/** Runs the CLI from source in a child process (`nodeArgs`: node's own flags, before the script). */
export function runCli(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; nodeArgs?: string[] } = {},
): CliResult {
  const r = spawnSync(process.execPath, [...(options.nodeArgs ?? []), '--import', TSX, CLI, ...args], {
    cwd: options.cwd ?? REPO,
    env: { ...CLI_ENV, ...options.env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

export function spawnCli(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; uid?: number; gid?: number } = {},
) {
  return spawn(process.execPath, ['--import', TSX, CLI, ...args], {
    cwd: options.cwd ?? REPO,
    env: { ...CLI_ENV, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.gid ?? options.uid } : {}),
  });
}

/** Everything an index holds that must not depend on how it was built (row ids, timestamps and mtimes left out). */
export function dumpIndex(dbPath: string): {
  files: unknown[];
  chunks: unknown[];
  symbols: unknown[];
  fts: unknown[];
} {
  const db = new Database(dbPath, { readonly: true });
  try {
    const files = db.prepare(`SELECT path, size, hash, language, method FROM files ORDER BY path`).all();
    const chunks = db
      .prepare(
        `SELECT f.path, c.ordinal, c.start_line, c.end_line, c.symbol, c.kind, c.container, c.text
         FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY f.path, c.ordinal`,
      )
      .all();
    const symbols = db
      .prepare(
        `SELECT f.path, s.name, s.kind, s.start_line, s.end_line, s.container
         FROM symbols s JOIN files f ON f.id = s.file_id ORDER BY f.path, s.start_line, s.name`,
      )
      .all();
    // every chunk has exactly one FTS row and no FTS row is orphaned: compare what the lexical index answers
    const fts = db
      .prepare(
        `SELECT f.path, c.ordinal FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid
         JOIN files f ON f.id = c.file_id WHERE chunks_fts MATCH 'return OR function OR def OR fn'
         ORDER BY f.path, c.ordinal`,
      )
      .all();
    return { files, chunks, symbols, fts };
  } finally {
    db.close();
  }
}

export function ftsRowCount(dbPath: string): { fts: number; chunks: number } {
  const db = new Database(dbPath, { readonly: true });
  try {
    // the contentless table's own docsize shadow table has one row per indexed document
    const fts = db.prepare(`SELECT COUNT(*) FROM chunks_fts_docsize`).pluck().get() as number;
    const chunks = db.prepare(`SELECT COUNT(*) FROM chunks`).pluck().get() as number;
    return { fts, chunks };
  } finally {
    db.close();
  }
}

/** Opens `root` as a lexical-only project (no user config, no embedder), creating its index. */
export function openLexical(root: string): Promise<Project> {
  return openProject({ root, create: true, userConfig: false, overrides: { embed: { provider: 'none' } } });
}

/** Indexes `root` lexically and closes it: for tests that then start a server or a CLI on it. */
export async function indexLexically(root: string): Promise<void> {
  const p = await openLexical(root);
  try {
    await indexProject(p);
  } finally {
    await p.close();
  }
}

/** Indexes `root` lexically with these search settings (camelCase), runs one lexical search, and closes it. */
export async function searchLexically(
  root: string,
  query: string,
  search?: NonNullable<UserConfig['search']>,
): Promise<SearchResponse> {
  const p = await openProject({
    root,
    create: true,
    userConfig: false,
    overrides: { embed: { provider: 'none' }, ...(search ? { search } : {}) },
  });
  try {
    await indexProject(p);
    return await searchProject(p, query, { mode: 'lexical' });
  } finally {
    await p.close();
  }
}

/** Runs the CLI from source as a child process and collects its output (for tests that serve in this process). */
export function runCliAsync(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; uid?: number; gid?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawnCli(args, options);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A tree of `files` TypeScript files, each with a dozen small functions. */
export function bigTree(files: number, trees: string[]): string {
  const content: Record<string, string> = {};
  for (let i = 0; i < files; i++) {
    const fns = Array.from(
      { length: 12 },
      (_, j) =>
        `export function handler${i}x${j}(input: Request${j}): Response${i} {\n  const value = compute${j}(input.field${i});\n  if (value > ${j}) {\n    return respond(value, 'module ${i} step ${j}');\n  }\n  return fallback${j}(input);\n}\n`,
    ).join('\n');
    content[`src/mod${Math.floor(i / 50)}/file${i}.ts`] = `import { respond } from '../respond';\n\n${fns}`;
  }
  const root = makeTree(content);
  trees.push(root);
  return root;
}

/** git in `root`, with an author and committer set (a fresh machine has none configured); stdout as text. */
export function git(root: string, ...args: string[]): string {
  return execFileSync('git', ['-C', root, ...args], {
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'q',
      GIT_AUTHOR_EMAIL: 'q@example.com',
      GIT_COMMITTER_NAME: 'q',
      GIT_COMMITTER_EMAIL: 'q@example.com',
    },
  });
}

/** Waits for an outcome (not a duration): the check is what matters, the bound only stops a hung test. */
export async function until(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never happened: ${what}`);
}

/**
 * The first match of `pattern` in what a child process prints to stdout (`quarry serve`'s "quarry panel: URL",
 * `quarry mcp --http`'s "listening on URL"); rejected if it exits first.
 */
export function waitForOutput(child: ChildProcess, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = pattern.exec(out);
      if (m) resolve(m);
    });
    child.on('exit', (code) =>
      reject(new Error(`${child.spawnargs.slice(3).join(' ')} exited ${code}: ${out}`)),
    );
  });
}

/** A deterministic random source (mulberry32): the same seed gives the same sequence on every machine. */
export function seededRandom(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A file update of one-line chunks, one a text, as the tests write them straight into a store. */
export function lineFile(path: string, texts: string[], tokenPath = path): FileUpdate {
  return {
    file: { path, size: 1, mtimeMs: 1, hash: 'h', language: 'typescript', method: 'tree-sitter' as const },
    chunks: texts.map((text, ordinal) => ({
      ordinal,
      startLine: ordinal + 1,
      endLine: ordinal + 1,
      symbol: null,
      kind: null,
      container: null,
      text,
      tokens: { path: tokenPath, symbols: '', body: text },
    })),
    symbols: [],
    tokens: { path: tokenPath, symbols: '', body: texts.join(' ') },
  };
}

/** Trusts a project's quarry.toml as it is now, for the CLI's config folder and this process's (config/trust.ts). */
export function trustProjectFile(root: string): void {
  const file = join(root, 'quarry.toml');
  setTrust(file, false, { XDG_CONFIG_HOME: CLI_ENV.XDG_CONFIG_HOME });
  setTrust(file, false, process.env);
}

/**
 * The fastest of `runs` timings of `run`, in ms: for a check of how time grows with the input, where a busy machine
 * (the suite runs files two at a time) only ever adds time and one slow run is not the code's cost.
 */
export async function fastestMs(run: () => Promise<unknown>, runs = 3): Promise<number> {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await run();
    best = Math.min(best, performance.now() - t);
  }
  return best;
}
