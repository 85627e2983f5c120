/**
 * The chunker's entry: a file parsed with its grammar (grammars.ts) under a deadline, cut into chunks along its
 * definitions (definitions.ts, units.ts), with the names it uses (references.ts); line windows where it cannot be
 * parsed.
 */
import type { Parser, QueryCapture } from 'web-tree-sitter';
import type { ChunkOptions } from '../config/config.ts';
import { buildDefs, fileSymbols, type TopLevelVariable, variablesIn } from './definitions.ts';
import { dropParser, type LoadedGrammar, loadedGrammar, parserFor } from './grammars.ts';
import { collectRefs } from './references.ts';
import { type ChunkedFile, chunkByLines, chunksOf } from './units.ts';

export type { SymbolDef, TopLevelVariable } from './definitions.ts';
export { compiledGrammar, loadedGrammarNames, treeSitterMemory } from './grammars.ts';
export type { NameRefs } from './references.ts';
export { type Chunk, type ChunkedFile, chunkByLines } from './units.ts';

// `QUARRY_PARSE_TIMEOUT_MS` moves it (a slow machine; the tests, to make parses pass it)
const PARSE_TIMEOUT_MS = Number(process.env.QUARRY_PARSE_TIMEOUT_MS) || 3000;
/**
 * A parse calls its progress callback every 0.1–0.3 ms while it runs (5 ms apart at most, measured on quarry's own
 * sources, a garbage collection included). A gap past this is time the thread did not run (a paused virtual machine,
 * a machine swapping, a process stopped and continued): it counts as this much of the parse's time, not all of it.
 * (An external scanner slow within one call would stretch the deadline as much; none was seen to be.)
 */
const STALL_MS = 200;

/**
 * A parse's deadline as a progress callback (true: cancel): `budgetMs` of the parse's own running time, where a gap
 * between two calls counts at most STALL_MS. By the wall clock alone, a stall of a few seconds during a parse chunked
 * that file by lines: its definitions lost until it changed, and the index unlike one built without the stall.
 */
export function parseDeadline(budgetMs: number, now: () => number = () => performance.now()): () => boolean {
  let last = now();
  let spent = 0;
  return () => {
    const t = now();
    spent += Math.min(t - last, STALL_MS);
    last = t;
    return spent > budgetMs;
  };
}

/**
 * Splits a file into chunks along its definitions (its grammar loaded once, on first use); a file that cannot be
 * parsed (unknown grammar, parser timeout) falls back to line windows.
 */
export async function chunkFile(
  text: string,
  grammar: string | undefined,
  o: ChunkOptions,
): Promise<ChunkedFile> {
  const g = grammar ? await loadedGrammar(grammar) : undefined;
  if (!g?.both && !g?.query) return chunkByLines(text, o);
  const parser = parserFor(g.language);
  let tree: ReturnType<Parser['parse']>;
  try {
    // returning true from the progress callback cancels the parse (setTimeoutMicros is broken in 0.25.10)
    tree = parser.parse(text, null, { progressCallback: parseDeadline(PARSE_TIMEOUT_MS) });
  } catch {
    // not its deadline (that returns no tree): the grammar failed
    dropParser();
    return { ...chunkByLines(text, o), suspect: true, parseError: true };
  }
  if (!tree) {
    // a cancelled (timed-out) parse: web-tree-sitter 0.25.10 may have left its memory broken (the next `reset`
    // failed with "memory access out of bounds" on a 100,581-file run). The parser is left untouched and the caller
    // told: a parse worker is replaced, and the file chunked by lines
    dropParser();
    return { ...chunkByLines(text, o), suspect: true };
  }
  try {
    return chunkTree(tree, text, g, o);
  } catch (err) {
    // tree-sitter's WebAssembly failed on this file: the same, whatever failed
    if (!(err instanceof Error && err.name === 'RuntimeError')) throw err;
    dropParser();
    return { ...chunkByLines(text, o), suspect: true };
  } finally {
    try {
      tree.delete();
    } catch {
      // the tree's memory went with a failed module call
    }
  }
}

function chunkTree(
  tree: NonNullable<ReturnType<Parser['parse']>>,
  text: string,
  g: LoadedGrammar,
  o: ChunkOptions,
): ChunkedFile {
  let defCaptures: QueryCapture[];
  let refCaptures: QueryCapture[] = [];
  if (g.both) {
    defCaptures = [];
    for (const cap of g.both.captures(tree.rootNode))
      if (cap.name === 'ref') refCaptures.push(cap);
      else defCaptures.push(cap);
  } else {
    defCaptures = g.query!.captures(tree.rootNode);
    if (g.refQuery) refCaptures = g.refQuery.captures(tree.rootNode);
  }
  const defs = buildDefs(defCaptures, g.kinds);
  const symbols = fileSymbols(defs, tree.rootNode);
  return {
    chunks: chunksOf(text, defs, o),
    symbols,
    method: 'tree-sitter',
    refs: collectRefs(refCaptures),
  };
}

/**
 * Variables and constants declared at the top level of a file, found by parsing it: Go `var`/`const`, JS/TS
 * `const`/`let`/`var`, Python module assignments, Rust `static`/`const`, C declarations. Empty when the grammar
 * cannot be loaded.
 */
export async function topLevelVariables(
  text: string,
  grammar: string | undefined,
): Promise<TopLevelVariable[]> {
  const g = grammar ? await loadedGrammar(grammar) : undefined;
  if (!g) return [];
  const parser = parserFor(g.language);
  const tree = parser.parse(text);
  if (!tree) return [];
  try {
    return variablesIn(tree.rootNode);
  } finally {
    tree.delete();
  }
}
