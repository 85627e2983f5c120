/**
 * Naming definitions: which nodes of a parse define something, each one's name, kind and lines (widened over its
 * comments and decorators), the definition that contains it or the type that owns it, and the file's top-level
 * variables. What the chunks are cut along and what the index's symbols are.
 */
import type { Node, QueryCapture } from 'web-tree-sitter';
import type { SymbolKind } from './specs.ts';

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

/** A definition of a parse, with the definitions nested in it. */
export interface Def {
  start: number; // 0-based rows
  end: number;
  name: string;
  kind: SymbolKind;
  children: Def[];
  /** The type a method is declared on outside any body (a Go receiver): its container instead of the nesting. */
  owner?: string;
}

const CLASS_LIKE = new Set<SymbolKind>(['class', 'interface', 'struct', 'trait', 'impl', 'object', 'enum']);
const ATTACHED_BEFORE = /comment|decorator|attribute|annotation/;

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

/** The definitions of a parse (its `@def` captures), nested: a definition inside another is its child. */
export function buildDefs(captures: QueryCapture[], kinds: Map<string, SymbolKind>): Def[] {
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

/**
 * A parsed file's symbols, in line order: its definitions, with its top-level variables and constants (those no
 * definition of the same name already covers).
 */
export function fileSymbols(defs: Def[], root: Node): SymbolDef[] {
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
  for (const v of variablesIn(root)) {
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
  return symbols;
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

/** The top-level variables and constants of a parsed file. */
export function variablesIn(root: Node): TopLevelVariable[] {
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
