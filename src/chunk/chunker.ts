import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Language, Node, Parser, Query, QueryCapture } from 'web-tree-sitter';
import type { ChunkOptions } from '../config/config.ts';
import { fixGrammar, grammarAbi } from './grammar-fixes.ts';
import { GRAMMAR_SPECS, type SymbolKind } from './specs.ts';
import { grammarUnsupported, tuneWasmCompiler } from './wasm-flags.ts';

/** One piece of a file as indexed: a definition, merged small neighbours, or a line window. */
export interface Chunk {
  /** 1-based, inclusive. */
  startLine: number;
  endLine: number;
  /** The chunk's main definition, if any. */
  symbol: string | null;
  kind: SymbolKind | null;
  /** The definition that encloses this chunk (a class for its methods). */
  container: string | null;
  /** Every definition that starts inside the chunk. */
  symbols: string[];
  text: string;
}

/** A definition found in a file. */
export interface SymbolDef {
  name: string;
  kind: SymbolKind;
  startLine: number;
  endLine: number;
  container: string | null;
  /** A top-level variable or constant found by its declaration (not a chunk boundary, not a search signal). */
  declared?: true;
}

export interface ChunkedFile {
  chunks: Chunk[];
  symbols: SymbolDef[];
  /** 'tree-sitter' when definitions were found by parsing, 'lines' for the line-window fallback. */
  method: 'tree-sitter' | 'lines';
  /** Names the file's code uses (identifier nodes), with the lines they are on; empty without a parse. */
  refs: NameRefs[];
  /**
   * tree-sitter's WebAssembly memory may be broken after this file (a parse cancelled at its deadline, or a
   * `RuntimeError` while reading the tree; a reset then failed with "memory access out of bounds" on a 100,581-file
   * run): it was chunked by lines, and a parse worker that saw it is replaced (`indexing/pool.ts`).
   */
  suspect?: boolean;
  /**
   * The parse failed for a reason other than its deadline (the grammar called a function this tree-sitter runtime
   * lacks, say): a grammar that keeps doing so is given up for the rest of the run (`indexing/pool.ts`).
   */
  parseError?: boolean;
}

/** Where a file uses one name. */
export interface NameRefs {
  name: string;
  /** 1-based, ascending, each once. */
  lines: number[];
}

/** Identifier node types whose text is a name the code uses (leaf nodes; a grammar has some of them). */
const REF_TYPES =
  /^(identifier|type_identifier|field_identifier|property_identifier|simple_identifier|constant|name|scoped_identifier_name|shorthand_property_identifier|package_identifier|namespace_identifier)$/;
/** Lines kept per name per file: enough to show where, bounded for names used everywhere. */
const MAX_REF_LINES = 50;

interface Def {
  start: number; // 0-based rows
  end: number;
  name: string;
  kind: SymbolKind;
  children: Def[];
  /** The type a method is declared on outside any body (a Go receiver): its container instead of the nesting. */
  owner?: string;
}

interface Unit {
  start: number;
  end: number;
  chars: number;
  symbol: string | null;
  kind: SymbolKind | null;
  container: string | null;
  names: string[];
}

const CLASS_LIKE = new Set<SymbolKind>(['class', 'interface', 'struct', 'trait', 'impl', 'object', 'enum']);
const ATTACHED_BEFORE = /comment|decorator|attribute|annotation/;
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

let initialised: Promise<void> | undefined;
/**
 * A grammar loaded in this thread, with its queries: `both` captures the definitions (`@def`) and the names used
 * (`@ref`) in one walk; where a grammar version cannot compile them together, `query` and `refQuery` do it apart.
 */
interface LoadedGrammar {
  language: Language;
  query: Query | null;
  refQuery: Query | null;
  both: Query | null;
  kinds: Map<string, SymbolKind>;
}
const grammars = new Map<string, Promise<LoadedGrammar>>();
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
  const refTypes: string[] = [];
  for (let id = 0; id < language.nodeTypeCount; id++) {
    const type = language.nodeTypeForId(id);
    if (type && language.nodeTypeIsNamed(id) && REF_TYPES.test(type) && !refTypes.includes(type))
      refTypes.push(type);
  }
  const refPattern = refTypes.length ? `[${refTypes.map((t) => `(${t})`).join(' ')}] @ref` : undefined;
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
function loadedGrammar(grammar: string): Promise<LoadedGrammar | undefined> {
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

function declaratorName(node: Node): string | undefined {
  let cur: Node | null = node;
  for (let i = 0; cur && i < 8; i++) {
    const next: Node | null = cur.childForFieldName('declarator');
    if (!next) break;
    cur = next;
  }
  if (!cur || cur === node) return undefined;
  if (/identifier|name|operator/.test(cur.type)) return cur.text;
  const inner = cur.namedChildren.find((c) => c && /identifier|name/.test(c.type));
  return inner?.text;
}

/** A Go method's receiver type: `RouterGroup` of `func (group *RouterGroup) Group(…)`, `List` of `func (l *List[T])`. */
function receiverType(node: Node): string | undefined {
  if (node.type !== 'method_declaration') return undefined;
  const param = node
    .childForFieldName('receiver')
    ?.namedChildren.find((c) => c?.type === 'parameter_declaration');
  let type = param?.childForFieldName('type') ?? null;
  for (let i = 0; type && i < 4 && type.type !== 'type_identifier'; i++)
    type =
      type.type === 'generic_type'
        ? type.childForFieldName('type')
        : (type.namedChildren.find((c) => c && /type/.test(c.type)) ?? null);
  return type?.type === 'type_identifier' ? type.text : undefined;
}

function defName(node: Node): string | undefined {
  switch (node.type) {
    case 'var_declaration': {
      // Go: `var defaultLogFormatter = func(…) string {…}`
      const spec = node.namedChildren.find((c) => c?.type === 'var_spec');
      return spec?.childForFieldName('name')?.text;
    }
    case 'lexical_declaration':
    case 'variable_declaration': {
      const d = node.namedChildren.find((c) => c?.type === 'variable_declarator');
      return d?.childForFieldName('name')?.text;
    }
    case 'field_definition': // a JavaScript class field: `fetch = (request) => …`
      return (node.childForFieldName('property') ?? node.childForFieldName('name'))?.text;
    case 'expression_statement': {
      // `Reply.prototype.send = function …`: the method's name (its class is in the text: `Reply.prototype`);
      // Python's `double = lambda x: x * 2`: the name
      const left = node.firstNamedChild?.childForFieldName('left');
      if (left?.type === 'identifier') return left.text;
      return left?.type === 'member_expression' ? left.childForFieldName('property')?.text : undefined;
    }
    case 'method_definition': {
      const own = node.childForFieldName('name')?.text;
      return (own && ACCESSOR_KEYS.has(own) && describedProperty(node)) || own;
    }
    case 'impl_item': {
      const type = node.childForFieldName('type')?.text;
      const trait = node.childForFieldName('trait')?.text;
      return type && trait ? `${trait} for ${type}` : type;
    }
    case 'type_declaration': {
      const spec = node.namedChildren.find((c) => c && /type_spec|type_alias/.test(c.type));
      return spec?.childForFieldName('name')?.text;
    }
    case 'function_definition':
    case 'type_definition': {
      const viaName = node.childForFieldName('name');
      if (viaName) return viaName.text;
      return declaratorName(node);
    }
    default: {
      const viaName = node.childForFieldName('name');
      if (viaName) return viaName.text;
      const child = node.namedChildren.find(
        (c) => c && /^(identifier|simple_identifier|type_identifier|constant|name|word)$/.test(c.type),
      );
      return child?.text;
    }
  }
}

/** Keys of a property descriptor that hold functions: `get () {…}` in one is an accessor of the described property. */
const ACCESSOR_KEYS = new Set(['get', 'set', 'value']);

/**
 * The property a descriptor's `get`/`set`/`value` method defines: `statusCode` in
 * `Object.defineProperties(X.prototype, { statusCode: { get () {…} } })`, `server` in
 * `Object.defineProperty(X.prototype, 'server', { get () {…} })`. Undefined for any other object's method.
 */
function describedProperty(method: Node): string | undefined {
  const object = method.parent;
  if (object?.type !== 'object') return undefined;
  const holder = object.parent;
  if (holder?.type === 'pair') {
    // the pair's own object must be an argument of Object.defineProperties (or another descriptor map)
    const key = holder.childForFieldName('key');
    const args = holder.parent?.parent;
    if (
      args?.type !== 'arguments' ||
      !/\.defineProperties$/.test(args.parent?.childForFieldName('function')?.text ?? '')
    )
      return undefined;
    return key?.text.replace(/^['"`]|['"`]$/g, '');
  }
  if (
    holder?.type === 'arguments' &&
    /\.defineProperty$/.test(holder.parent?.childForFieldName('function')?.text ?? '')
  ) {
    const name = holder.namedChildren[1];
    return name?.type === 'string' ? name.text.slice(1, -1) : undefined;
  }
  return undefined;
}

/** Rows of `node` widened over the export/decorator wrapper and the comments directly above it. */
function attachedRange(node: Node): [number, number] {
  let outer = node;
  while (
    outer.parent &&
    /^(export_statement|decorated_definition|template_declaration|ambient_declaration)$/.test(
      outer.parent.type,
    )
  )
    outer = outer.parent;
  let start = outer.startPosition.row;
  let prev = outer.previousNamedSibling;
  while (prev && ATTACHED_BEFORE.test(prev.type) && prev.endPosition.row >= start - 1) {
    start = prev.startPosition.row;
    prev = prev.previousNamedSibling;
  }
  let end = outer.endPosition.row;
  // a node that ends at column 0 of a row ends on the previous row
  if (outer.endPosition.column === 0 && end > start) end -= 1;
  return [start, end];
}

function buildDefs(captures: QueryCapture[], kinds: Map<string, SymbolKind>): Def[] {
  const flat: Def[] = [];
  const seen = new Set<number>();
  for (const cap of captures) {
    const node = cap.node;
    if (seen.has(node.id)) continue;
    seen.add(node.id);
    // `struct buffer *b` names a type; only a specifier with a body defines one
    if (node.type.endsWith('_specifier') && !node.childForFieldName('body')) continue;
    const name = defName(node)?.replace(/\s+/g, ' ').slice(0, 120);
    if (!name) continue;
    const [start, end] = attachedRange(node);
    const kind =
      node.type === 'expression_statement'
        ? node.firstNamedChild?.childForFieldName('left')?.type === 'member_expression'
          ? 'method'
          : 'function'
        : (kinds.get(node.type) ?? 'function');
    const owner = receiverType(node);
    flat.push({ start, end, name, kind, children: [], ...(owner ? { owner } : {}) });
  }
  flat.sort((a, b) => a.start - b.start || b.end - a.end);
  const top: Def[] = [];
  const stack: Def[] = [];
  for (const d of flat) {
    while (stack.length && stack[stack.length - 1]!.end < d.start) stack.pop();
    const parent = stack[stack.length - 1];
    if (parent && d.end <= parent.end) {
      if (d.kind === 'function' && CLASS_LIKE.has(parent.kind)) d.kind = 'method';
      parent.children.push(d);
    } else if (parent) {
      continue; // overlaps its neighbour without nesting (a shared line): keep the first
    } else top.push(d);
    stack.push(d);
  }
  return top;
}

class LineText {
  readonly lines: string[];
  private readonly prefix: number[];
  constructor(text: string) {
    this.lines = text.split(/\r?\n/);
    this.prefix = new Array(this.lines.length + 1);
    this.prefix[0] = 0;
    for (let i = 0; i < this.lines.length; i++)
      this.prefix[i + 1] = this.prefix[i]! + this.lines[i]!.length + 1;
  }
  chars(start: number, end: number): number {
    return this.prefix[end + 1]! - this.prefix[start]!;
  }
  blank(start: number, end: number): boolean {
    for (let i = start; i <= end; i++) if (this.lines[i]!.trim() !== '') return false;
    return true;
  }
  slice(start: number, end: number): string {
    return this.lines.slice(start, end + 1).join('\n');
  }
}

/** Windows over rows [start, end] of at most `maxChars` characters and `maxLines` lines. */
function windows(
  lt: LineText,
  start: number,
  end: number,
  maxChars: number,
  maxLines: number,
  overlap: number,
): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  let s = start;
  while (s <= end) {
    let e = s;
    while (e < end && e - s + 1 < maxLines && lt.chars(s, e + 1) <= maxChars) e++;
    out.push([s, e]);
    if (e >= end) break;
    s = Math.max(s + 1, e + 1 - overlap);
  }
  return out;
}

function trimBlank(lt: LineText, start: number, end: number): [number, number] | undefined {
  while (start <= end && lt.lines[start]!.trim() === '') start++;
  while (end >= start && lt.lines[end]!.trim() === '') end--;
  return start <= end ? [start, end] : undefined;
}

function unitsFor(
  lt: LineText,
  defs: Def[],
  from: number,
  to: number,
  container: string | null,
  o: ChunkOptions,
) {
  const units: Unit[] = [];
  const plain = (
    s: number,
    e: number,
    symbol: string | null,
    kind: SymbolKind | null,
    names: string[],
    owner: string | null = container,
  ) => {
    const t = trimBlank(lt, s, e);
    if (!t) return;
    for (const [ws, we] of windows(lt, t[0], t[1], o.maxChars, Number.MAX_SAFE_INTEGER, 0))
      units.push({
        start: ws,
        end: we,
        chars: lt.chars(ws, we),
        symbol,
        kind,
        container: owner,
        names: ws === t[0] ? names : [],
      });
  };
  let cursor = from;
  for (const d of defs) {
    const s = Math.max(d.start, cursor);
    const e = Math.min(d.end, to);
    if (s > e) continue;
    if (s > cursor) plain(cursor, s - 1, null, null, []);
    const firstChild = d.children.find((c) => c.start > s);
    const own = d.owner ?? container;
    if (lt.chars(s, e) <= o.maxChars || !firstChild) {
      plain(s, e, d.name, d.kind, [d.name], own);
    } else {
      plain(s, firstChild.start - 1, d.name, d.kind, [d.name], own);
      units.push(...unitsFor(lt, d.children, firstChild.start, e, d.name, o));
    }
    cursor = e + 1;
  }
  if (cursor <= to) plain(cursor, to, null, null, []);
  return units;
}

function mergeUnits(lt: LineText, units: Unit[], o: ChunkOptions): Chunk[] {
  const chunks: Chunk[] = [];
  let group: Unit[] = [];
  const flush = () => {
    if (!group.length) return;
    const start = group[0]!.start;
    const end = group[group.length - 1]!.end;
    // a class header merged with its first methods still reads as the class; otherwise the largest definition
    let main = group.find((u) => u.symbol && group.some((v) => v !== u && v.container === u.symbol));
    if (!main) for (const u of group) if (u.symbol && (!main || u.chars > main.chars)) main = u;
    chunks.push({
      startLine: start + 1,
      endLine: end + 1,
      symbol: main?.symbol ?? null,
      kind: main?.kind ?? null,
      container: main ? main.container : (group[0]!.container ?? null),
      symbols: [...new Set(group.flatMap((u) => u.names))],
      text: lt.slice(start, end),
    });
    group = [];
  };
  for (const u of units) {
    if (group.length) {
      const size = lt.chars(group[0]!.start, u.end);
      if (size > o.targetChars) flush();
    }
    group.push(u);
  }
  flush();
  return chunks;
}

function collectSymbols(defs: Def[], container: string | null, out: SymbolDef[]): void {
  for (const d of defs) {
    out.push({
      name: d.name,
      kind: d.kind,
      startLine: d.start + 1,
      endLine: d.end + 1,
      container: d.owner ?? container,
    });
    collectSymbols(d.children, d.name, out);
  }
}

/** Line windows with overlap: the fallback for text files and files that fail to parse. */
export function chunkByLines(text: string, o: ChunkOptions): ChunkedFile {
  const lt = new LineText(text);
  const t = trimBlank(lt, 0, lt.lines.length - 1);
  const chunks: Chunk[] = [];
  if (t) {
    for (const [s, e] of windows(lt, t[0], t[1], o.maxChars, o.windowLines, o.overlapLines)) {
      const tt = trimBlank(lt, s, e);
      if (!tt) continue;
      chunks.push({
        startLine: tt[0] + 1,
        endLine: tt[1] + 1,
        symbol: null,
        kind: null,
        container: null,
        symbols: [],
        text: lt.slice(tt[0], tt[1]),
      });
    }
  }
  return { chunks, symbols: [], method: 'lines', refs: [] };
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
  parser ??= new treeSitter!.Parser();
  parser.setLanguage(g.language);
  let tree: ReturnType<Parser['parse']>;
  try {
    // returning true from the progress callback cancels the parse (setTimeoutMicros is broken in 0.25.10)
    tree = parser.parse(text, null, { progressCallback: parseDeadline(PARSE_TIMEOUT_MS) });
  } catch {
    // not its deadline (that returns no tree): the grammar failed
    parser = undefined;
    return { ...chunkByLines(text, o), suspect: true, parseError: true };
  }
  if (!tree) {
    // a cancelled (timed-out) parse: web-tree-sitter 0.25.10 may have left its memory broken (the next `reset`
    // failed with "memory access out of bounds" on a 100,581-file run). The parser is left untouched and the caller
    // told: a parse worker is replaced, and the file chunked by lines
    parser = undefined;
    return { ...chunkByLines(text, o), suspect: true };
  }
  try {
    return chunkTree(tree, text, g, o);
  } catch (err) {
    // tree-sitter's WebAssembly failed on this file: the same, whatever failed
    if (!(err instanceof Error && err.name === 'RuntimeError')) throw err;
    parser = undefined;
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
  const lt = new LineText(text);
  const units = unitsFor(lt, defs, 0, lt.lines.length - 1, null, o);
  const symbols: SymbolDef[] = [];
  collectSymbols(defs, null, symbols);
  // top-level variables and constants are symbols too (what ctags or an LSP's document symbols list), but not
  // chunk boundaries: `export const DEFAULT_TIMEOUT_MS = 30_000` stays in the chunk around it
  const defined = new Set(symbols.map((s) => `${s.name}:${s.startLine}`));
  // each name's line spans so far, so that a generated file's thousands of constants are not each checked against
  // every symbol before them
  const spans = new Map<string, Array<[number, number]>>();
  const addSpan = (name: string, start: number, end: number) => {
    const list = spans.get(name);
    if (list) list.push([start, end]);
    else spans.set(name, [[start, end]]);
  };
  for (const s of symbols) addSpan(s.name, s.startLine, s.endLine);
  for (const v of variablesIn(tree.rootNode)) {
    if (
      defined.has(`${v.name}:${v.line}`) ||
      spans.get(v.name)?.some(([start, end]) => start <= v.line && v.line <= end)
    )
      continue;
    addSpan(v.name, v.line, v.line);
    symbols.push({
      name: v.name,
      kind: /^(const|static)$/.test(v.kind) || /^[A-Z][A-Z0-9_]{2,}$/.test(v.name) ? 'constant' : 'variable',
      startLine: v.line,
      endLine: v.line,
      container: null,
      declared: true,
    });
  }
  symbols.sort((a, b) => a.startLine - b.startLine || b.endLine - a.endLine);
  return {
    chunks: mergeUnits(lt, units, o),
    symbols,
    method: 'tree-sitter',
    refs: collectRefs(refCaptures),
  };
}

function collectRefs(captures: QueryCapture[]): NameRefs[] {
  const byName = new Map<string, number[]>();
  for (const { node } of captures) {
    const name = node.text;
    if (name.length < 2 || name.length > 100 || node.childCount > 0) continue;
    const line = node.startPosition.row + 1;
    let lines = byName.get(name);
    if (!lines) {
      lines = [];
      byName.set(name, lines);
    }
    if (lines[lines.length - 1] !== line && lines.length < MAX_REF_LINES) lines.push(line);
  }
  return [...byName].map(([name, lines]) => ({ name, lines }));
}

/** A top-level variable or constant of a file (what "the global variables in cmd/main.go" asks for). */
export interface TopLevelVariable {
  name: string;
  line: number;
  /** The declaration's keyword or node type: `var`, `const`, `let`, `static`, `assignment`. */
  kind: string;
}

const DECL_TYPES =
  /^(var_declaration|const_declaration|lexical_declaration|variable_declaration|static_item|const_item|expression_statement|assignment|declaration|short_var_declaration|property_declaration)$/;
const NAME_FIELDS = ['name', 'left', 'declarator', 'pattern'];

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
  parser ??= new treeSitter!.Parser();
  parser.setLanguage(g.language);
  const tree = parser.parse(text);
  if (!tree) return [];
  try {
    return variablesIn(tree.rootNode);
  } finally {
    tree.delete();
  }
}

/** The top-level variables and constants of a parsed file. */
function variablesIn(root: Node): TopLevelVariable[] {
  const out: TopLevelVariable[] = [];
  const nameOf = (n: Node): string | null => {
    if (/identifier$|^name$|^constant$/.test(n.type)) return n.text;
    if (n.type === 'pointer_declarator' || n.type === 'init_declarator' || n.type === 'array_declarator')
      return declaratorName(n) ?? null;
    return null;
  };
  const visit = (n: Node, keyword: string, depth: number) => {
    if (depth > 4) return;
    for (const field of NAME_FIELDS) {
      const f = n.childForFieldName(field);
      if (!f) continue;
      const name = nameOf(f) ?? (f.type.endsWith('declarator') ? declaratorName(f) : undefined);
      if (name) {
        out.push({ name, line: f.startPosition.row + 1, kind: keyword });
        return;
      }
    }
    for (const c of n.namedChildren)
      if (c && !/function|class|lambda|arrow|call/.test(c.type)) visit(c, keyword, depth + 1);
  };
  for (const top of root.namedChildren) {
    let node = top;
    if (node && node.type === 'export_statement')
      node = node.namedChildren.find((c) => c && DECL_TYPES.test(c.type)) ?? node;
    if (!node || !DECL_TYPES.test(node.type)) continue;
    if (node.type === 'declaration' && node.descendantsOfType('function_declarator').length) continue;
    const keyword =
      node.firstChild && !node.firstChild.isNamed
        ? node.firstChild.type
        : node.type.replace(/_(declaration|item|statement)$/, '');
    visit(node, keyword, 0);
  }
  return out;
}
