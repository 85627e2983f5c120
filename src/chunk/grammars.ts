/**
 * tree-sitter's runtime in this thread: web-tree-sitter (imported with the first grammar), each grammar loaded once
 * with its queries, and the one parser every parse shares. These are the chunker's singletons; a parse worker holds
 * its own.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Language, Parser, Query } from 'web-tree-sitter';
import { fixGrammar, grammarAbi } from './grammar-fixes.ts';
import { refPattern as refPatternOf } from './references.ts';
import { GRAMMAR_SPECS, type SymbolKind } from './specs.ts';
import { grammarUnsupported, tuneWasmCompiler } from './wasm-flags.ts';

let initialised: Promise<void> | undefined;
/**
 * A grammar loaded in this thread, with its queries: `both` captures the definitions (`@def`) and the names used
 * (`@ref`) in one walk; where a grammar version cannot compile them together, `query` and `refQuery` do it apart.
 */
export interface LoadedGrammar {
  language: Language;
  query: Query | null;
  refQuery: Query | null;
  both: Query | null;
  kinds: Map<string, SymbolKind>;
}
const grammars = new Map<string, Promise<LoadedGrammar>>();
/** The thread's one parser, made after the first grammar has loaded; dropped after a parse that may have broken it. */
let parser: Parser | undefined;
let loading: Promise<unknown> = Promise.resolve();

/**
 * Grammars whose tree-sitter-wasms 0.1.13 build does not run on web-tree-sitter 0.25: taken from the grammar's own npm
 * package, which ships a WebAssembly build for this runtime. tree-sitter-wasms' bash imports `isalpha`, which the
 * 0.25 runtime does not export, so every bash parse threw, and each one cost a parse worker.
 */
const OWN_PACKAGE_WASM: Record<string, string> = { bash: 'tree-sitter-bash/tree-sitter-bash.wasm' };

/**
 * A grammar's WebAssembly build: `QUARRY_GRAMMAR_DIR/tree-sitter-<name>.wasm` when that folder has one (a newer build
 * of a grammar, for this web-tree-sitter), else the grammar's own package's, else tree-sitter-wasms'.
 */
const wasmFiles = new Map<string, string>();
function wasmFile(grammar: string): string {
  const key = `${process.env.QUARRY_GRAMMAR_DIR ?? ''}\0${grammar}`;
  let file = wasmFiles.get(key);
  if (!file) {
    file = findWasm(grammar);
    wasmFiles.set(key, file);
  }
  return file;
}

function findWasm(grammar: string): string {
  const dir = process.env.QUARRY_GRAMMAR_DIR;
  const mine = dir ? join(dir, `tree-sitter-${grammar}.wasm`) : undefined;
  if (mine && existsSync(mine)) return mine;
  const require = createRequire(import.meta.url);
  const own = OWN_PACKAGE_WASM[grammar];
  if (own) return require.resolve(own);
  return join(
    dirname(require.resolve('tree-sitter-wasms/package.json')),
    'out',
    `tree-sitter-${grammar}.wasm`,
  );
}

/**
 * web-tree-sitter, imported with the first grammar: a command that never parses (a search, a status) does not load
 * it. Every Parser and Query is made after a grammar has loaded, so they find it here.
 */
let treeSitter: typeof import('web-tree-sitter') | undefined;

/** Emscripten's module object for tree-sitter's runtime: it keeps the WebAssembly memory's current view (`HEAP8`). */
const runtime: { HEAP8?: Int8Array } = {};

/**
 * The bytes of tree-sitter's WebAssembly memory in this thread (0 before the first grammar). It only grows: a large
 * file's parse leaves it at its high-water mark for the rest of the thread's life.
 */
export function treeSitterMemory(): number {
  return runtime.HEAP8?.length ?? 0;
}

async function loadGrammar(grammar: string, file: string): Promise<LoadedGrammar> {
  if (grammarUnsupported(grammar))
    throw new Error(`the ${grammar} grammar cannot run on V8 ${process.versions.v8}`);
  tuneWasmCompiler();
  initialised ??= import('web-tree-sitter').then(async (module) => {
    await module.Parser.init(runtime);
    treeSitter = module;
  });
  await initialised;
  const { Language, Query, LANGUAGE_VERSION, MIN_COMPATIBLE_VERSION } = treeSitter!;
  const bytes = new Uint8Array(await readFile(file));
  // refused before it loads: loading a grammar of another ABI reads its tables wrongly (chunk/grammar-fixes.ts)
  const abi = grammarAbi(grammar, bytes);
  if (abi !== undefined && (abi < MIN_COMPATIBLE_VERSION || abi > LANGUAGE_VERSION))
    throw new Error(
      `the ${grammar} grammar is built for tree-sitter's ABI ${abi}; this runtime takes ${MIN_COMPATIBLE_VERSION} to ${LANGUAGE_VERSION}`,
    );
  // the module's bytes, mended where a grammar build has a known fault (chunk/grammar-fixes.ts)
  const language = await Language.load(fixGrammar(grammar, bytes));
  const spec = GRAMMAR_SPECS[grammar] ?? { defs: {} };
  const kinds = new Map<string, SymbolKind>();
  const patterns: string[] = [];
  for (const [type, kind] of Object.entries(spec.defs)) {
    if (language.idForNodeType(type, true) == null) continue;
    kinds.set(type, kind);
    patterns.push(`(${type}) @def`);
  }
  const refPattern = refPatternOf(language);
  const compiled = (source: string): Query | null => {
    try {
      return new Query(language, source);
    } catch {
      return null; // a pattern this grammar version cannot express
    }
  };
  // The definitions' patterns and the names' in one query: a query's captures walk every node of the tree, so one
  // query walks it once; its captures are told apart by name. Compiling a query costs more the larger the grammar
  // (each parse worker compiles its own), so the whole query is tried first: it compiles only if every pattern does.
  // Otherwise each extra pattern is tried on its own, and the query again with those that compile.
  const extras = spec.extraPatterns ?? [];
  const joined = (defs: string[]) =>
    defs.length && refPattern ? compiled([...defs, refPattern].join('\n')) : null;
  let both = joined([...patterns, ...extras]);
  if (!both) {
    const whole = patterns.length + extras.length;
    for (const extra of extras) {
      const q = compiled(extra);
      if (!q) continue;
      q.delete();
      patterns.push(extra);
    }
    // the same patterns as the whole query's would fail again
    if (patterns.length < whole) both = joined(patterns);
  }
  if (both) return { language, query: null, refQuery: null, both, kinds };
  // apart: the definitions' query, and the names' where its pattern compiles
  const query = patterns.length ? new Query(language, patterns.join('\n')) : null;
  const refQuery = refPattern ? compiled(refPattern) : null;
  return { language, query, refQuery, both: null, kinds };
}

/** The grammars this thread has loaded (by name), in the order they loaded. */
export function loadedGrammarNames(): string[] {
  return [...loadedNames];
}
const loadedNames = new Set<string>();

/**
 * A grammar's WebAssembly compiled, from the same bytes a parse worker loads. V8 shares one compiled module, with the
 * code it optimised, among the threads of a process while any of them holds it: the pool holds each grammar its
 * workers loaded, so a worker that replaces one (after a parse reached its deadline) does not compile the grammar's
 * lexer again (for Swift's, seconds of V8's optimising compiler and its memory).
 */
export async function compiledGrammar(grammar: string): Promise<object> {
  const file = wasmFile(grammar);
  // Node's WebAssembly global (the project's types leave out the DOM's declarations of it)
  const wasm = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<object> } })
    .WebAssembly;
  return wasm.compile(fixGrammar(grammar, new Uint8Array(await readFile(file))));
}

/** Loads (once) the tree-sitter runtime and a grammar; resolves to undefined if the grammar cannot be loaded. */
export function loadedGrammar(grammar: string): Promise<LoadedGrammar | undefined> {
  // by the file it loads from: QUARRY_GRAMMAR_DIR may change what a name means
  const file = wasmFile(grammar);
  let g = grammars.get(file);
  if (!g) {
    // one load at a time: concurrent Language.load calls leave some grammars finding no definitions
    g = loading.then(async () => {
      const loaded = await loadGrammar(grammar, file);
      loadedNames.add(grammar);
      return loaded;
    });
    loading = g.then(
      () => undefined,
      () => undefined,
    );
    grammars.set(file, g);
  }
  return g.catch(() => undefined);
}

/** The thread's parser (made on first use, once a grammar has loaded), set to parse `language`. */
export function parserFor(language: Language): Parser {
  parser ??= new treeSitter!.Parser();
  parser.setLanguage(language);
  return parser;
}

/** Forgets the thread's parser after a parse that failed: the next parse makes a new one. */
export function dropParser(): void {
  parser = undefined;
}
