import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chunkFile } from '../chunk/chunker.ts';
import { REDACTION_VERSION, redactSecrets } from '../chunk/redact.ts';
import { codeTokenText, pathTokenText } from '../chunk/tokens.ts';
import type { QuarryConfig } from '../config/config.ts';
import { trigramTerms } from '../store/trigram-terms.ts';
import { type AnyUpdate, encodeRefs, type FileUpdate } from '../store/types.ts';
import { containsPrivateKey } from '../workspace/ignore/rules.ts';
import { detectLanguage, grammarFor, languageOf } from '../workspace/languages.ts';

export interface FileTask {
  path: string;
  size: number;
  mtimeMs: number;
  /** The hash the index holds for this path; when the content still has it, chunking is skipped. */
  knownHash?: string;
  /** Keep the file's text in the update (for stores that serve files, `Store.content`, or index it by trigram). */
  keepText?: boolean;
  /** With `keepText`: give the text's trigram terms in its place (a trigram index that keeps no text). */
  trigramsOnly?: boolean;
  /** Chunk by lines, without a parser (a retry after tree-sitter's WebAssembly failed on this file). */
  plain?: boolean;
  /** Grammars given up for this run (each failed on several files): their files are chunked by lines. */
  noGrammars?: string[];
  /** The index lost this file's text (a rebuilt trigram table): an unchanged file still returns its text. */
  refillText?: boolean;
  /**
   * A large run's first pass: a file that has a grammar is chunked by line windows (method 'quick'), with no parse,
   * no symbols and no references, so that it is searchable at once; the second pass parses it.
   */
  quick?: boolean;
  /** With `quick`: keep the file's text in the first pass too (a store that serves files; a trigram index waits). */
  quickText?: boolean;
  /** The index holds this content by line windows only (method 'quick'): chunk it, though its hash is unchanged. */
  reparse?: boolean;
  /** The second pass of a file this run's first pass already counted as added or updated. */
  counted?: boolean;
}

/** What became of a file; a parse worker's update comes packed (store/packed.ts, `FileOutcome<AnyUpdate>`). */
export type FileOutcome<U extends AnyUpdate = FileUpdate> =
  | {
      status: 'indexed';
      update: U;
      skipReason?: 'binary' | 'minified' | 'secret';
      /** Chunked by lines after tree-sitter failed on it; the worker's parser is not to be trusted again. */
      suspect?: boolean;
      /** The grammar that failed on it, other than by its deadline. */
      failedGrammar?: string;
    }
  | { status: 'unchanged'; path: string; size: number; mtimeMs: number; text?: string; trigrams?: string }
  | { status: 'gone'; path: string }
  | { status: 'unreadable'; path: string; detail: string };

const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: false });

/** Binary by content: a NUL byte, or mostly control characters, in the first 8 KiB. */
export function looksBinary(buf: Uint8Array): boolean {
  const n = Math.min(buf.length, 8192);
  let control = 0;
  for (let i = 0; i < n; i++) {
    const b = buf[i]!;
    if (b === 0) return true;
    if (b < 7 || (b > 13 && b < 32 && b !== 27)) control++;
  }
  return n > 0 && control / n > 0.1;
}

/** Minified or generated on one line: long lines that no person wrote. */
export function looksMinified(text: string): boolean {
  if (text.length < 4096) return false;
  let lines = 1;
  let longest = 0;
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) {
    longest = Math.max(longest, i - start);
    start = i + 1;
    lines++;
  }
  longest = Math.max(longest, text.length - start);
  return longest > 2000 && text.length / lines > 300;
}

/** UTF-16 with a byte-order mark (Windows tools write it), or null. */
function utf16Of(buf: Uint8Array): 'utf-16le' | 'utf-16be' | null {
  if (buf.length >= 2 && buf[0] === 0xff && buf[1] === 0xfe) return 'utf-16le';
  if (buf.length >= 2 && buf[0] === 0xfe && buf[1] === 0xff) return 'utf-16be';
  return null;
}

/** A file's text: UTF-8, or UTF-16 when it starts with a byte-order mark. */
export function decodeText(buf: Uint8Array): string {
  const utf16 = utf16Of(buf);
  return utf16 ? new TextDecoder(utf16).decode(buf) : decoder.decode(buf);
}

/** What a file's bytes say: left without chunks (binary, minified, holding a private key), or its text. */
export function contentVerdict(
  buf: Uint8Array,
  config: Pick<QuarryConfig, 'includeSecrets'>,
): { skip: 'binary' | 'minified' | 'secret' } | { skip: null; text: string } {
  // UTF-16 is text though every other byte is NUL: judged on its decoded text
  const utf16 = utf16Of(buf) !== null;
  if (!utf16 && looksBinary(buf)) return { skip: 'binary' };
  const text = decodeText(buf);
  if (utf16 && looksBinary(new TextEncoder().encode(text))) return { skip: 'binary' };
  if (looksMinified(text)) return { skip: 'minified' };
  if (!config.includeSecrets && containsPrivateKey(text)) return { skip: 'secret' };
  return { skip: null, text };
}

function skipped(
  task: FileTask,
  hash: string,
  language: string,
  reason: 'binary' | 'minified' | 'secret',
): FileOutcome {
  return {
    status: 'indexed',
    skipReason: reason,
    update: {
      file: { path: task.path, size: task.size, mtimeMs: task.mtimeMs, hash, language, method: 'skipped' },
      chunks: [],
      symbols: [],
      tokens: { path: '', symbols: '', body: '' },
    },
  };
}

/**
 * A first pass's line windows (`FileTask.quick`): the parse replaces them within minutes, so they are cut for the
 * writer, which bounds that pass. They do not overlap (overlap only adds words to write), and hold QUICK_WINDOW_SCALE
 * times the lines and characters of a final window: a quarter of the rows and lexical documents to write, and to
 * delete again when the parse replaces them. A first pass's writes over 5,879 files took 2.3-2.6 s against 3.2-3.6 s,
 * and the 100k corpus was searchable in 68.6-69.6 s against 72.3-72.8 (docs/benchmarks.md).
 */
const QUICK_WINDOW_SCALE = 4;
function quickWindows(chunk: QuarryConfig['chunk']): QuarryConfig['chunk'] {
  return {
    ...chunk,
    overlapLines: 0,
    maxChars: chunk.maxChars * QUICK_WINDOW_SCALE,
    windowLines: chunk.windowLines * QUICK_WINDOW_SCALE,
  };
}

/** The text as the task asks for it: the text itself, or its trigram terms (`trigramsOnly`). */
function textOf(task: FileTask, text: string): { text: string } | { trigrams: string } {
  return task.trigramsOnly ? { trigrams: trigramTerms(text) } : { text };
}

/** How an index holds secrets found inside files: redacted (the rule set's version), or as written. */
/**
 * The chunker's revision: raised when the same text would be cut or labelled differently (2: Go methods carry their
 * receiver type, functions bound to names are definitions), so that an index made before re-chunks every file once.
 */
export const CHUNKING_REVISION = 2;

export function redactionOf(config: Pick<QuarryConfig, 'includeSecrets' | 'context'>): string {
  return config.includeSecrets || config.context.redactSecrets === false ? 'off' : REDACTION_VERSION;
}

/**
 * The text as the index may hold it: secrets inside the file replaced, line for line (chunk/redact.ts), before
 * anything is chunked, stored or sent to an embedder. `--include-secrets` (or `context.redact_secrets = false`) keeps
 * the file as written.
 */
async function redacted<V extends ReturnType<typeof contentVerdict>>(
  verdict: V,
  config: QuarryConfig,
  path: string,
): Promise<V> {
  if (verdict.skip !== null || redactionOf(config) === 'off') return verdict;
  return { ...verdict, text: (await redactSecrets(verdict.text, { path })).text };
}

/** Reads, classifies, chunks and tokenises one file. Runs in a worker thread or, as a fallback, in the caller's. */
export async function processFile(root: string, task: FileTask, config: QuarryConfig): Promise<FileOutcome> {
  let buf: Buffer;
  try {
    buf = readFileSync(join(root, task.path));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { status: 'gone', path: task.path };
    return { status: 'unreadable', path: task.path, detail: code ?? String(err) };
  }
  // the file may have changed since the walk: describe what was read
  const size = buf.length;
  const hash = createHash('sha256').update(buf).digest('hex');
  const unchanged = task.knownHash === hash && !task.reparse;
  if (unchanged && !task.refillText)
    return { status: 'unchanged', path: task.path, size, mtimeMs: task.mtimeMs };
  const verdict = await redacted(contentVerdict(buf, config), config, task.path);
  if (unchanged) {
    // the index lost only the text: give it back, nothing is chunked
    const refill = verdict.skip ? {} : textOf(task, verdict.text);
    return { status: 'unchanged', path: task.path, size, mtimeMs: task.mtimeMs, ...refill };
  }
  const t = { ...task, size };
  const lang = detectLanguage(task.path);
  if (verdict.skip) return skipped(t, hash, lang.id, verdict.skip);
  const text = verdict.text;

  const grammar = grammarFor(task.path, text);
  const givenUp = grammar !== undefined && task.noGrammars?.includes(grammar);
  // the first pass of a large run: what a parse would chunk is chunked by lines now, and parsed by the second pass
  const quick = task.quick === true && grammar !== undefined && !task.plain && !givenUp;
  const plain = task.plain || givenUp || quick;
  const chunking = quick ? quickWindows(config.chunk) : config.chunk;
  const chunked = await chunkFile(text, plain ? undefined : grammar, chunking);
  const pathTokens = pathTokenText(task.path);
  const chunks = chunked.chunks.map((c, ordinal) => ({
    ordinal,
    startLine: c.startLine,
    endLine: c.endLine,
    symbol: c.symbol,
    kind: c.kind,
    container: c.container,
    text: c.text,
    tokens: {
      path: pathTokens,
      symbols: codeTokenText([...c.symbols, c.container ?? ''].join(' ')),
      body: codeTokenText(c.text),
    },
  }));
  return {
    status: 'indexed',
    update: {
      file: {
        path: task.path,
        size,
        mtimeMs: task.mtimeMs,
        hash,
        language: languageOf(task.path, grammar),
        method: quick ? 'quick' : chunked.method,
      },
      chunks,
      symbols: chunked.symbols,
      ...(chunked.refs.length ? { refs: encodeRefs(chunked.refs)! } : {}),
      // a trigram index gets the text with the parse: a grep reads the files until its table is complete
      ...(task.keepText && (!task.quick || task.quickText) ? textOf(task, text) : {}),
      // a first pass's file has no whole-file document yet (the store writes none for it)
      tokens: quick
        ? { path: '', symbols: '', body: '' }
        : {
            path: pathTokens,
            // the file's definitions, not every module-level variable: those are in the body text already
            symbols: codeTokenText(
              chunked.symbols
                .filter((s) => !s.declared)
                .map((s) => s.name)
                .join(' '),
            ),
            body: chunks.map((c) => c.tokens.body).join(' '),
          },
    },
    ...(chunked.suspect ? { suspect: true } : {}),
    ...(chunked.parseError && grammar ? { failedGrammar: grammar } : {}),
  };
}
