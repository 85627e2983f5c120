// The symbol lists as text (`quarry def`, `refs`, `symbols`, the chat's answers): plain functions with no heavy
// import, so a one-shot symbol command loads neither tree-sitter nor a tokenizer nor an SDK to print its list.
import type { RefHit, SymbolHit } from '../store/types.ts';

export function formatSymbols(path: string, symbols: SymbolHit[]): string {
  if (!symbols.length) return `${path}: no definitions found`;
  return `${path}\n${symbols.map((s) => `  ${s.startLine}-${s.endLine}  ${s.kind} ${s.container ? `${s.container}.` : ''}${s.name}`).join('\n')}`;
}

/** How many of a name's definitions or referring files a list holds unless asked for more. */
export const DEFINITIONS_SHOWN = 200;
export const REFERENCE_FILES_SHOWN = 500;
/** `more`: the list was cut at its limit, and what to do to see the rest (a face's own words: `--limit`, `limit`). */
export function formatDefinitions(name: string, defs: SymbolHit[], more?: string): string {
  const head = more ? `${name} is defined in (the first ${defs.length}; ${more}):` : `${name} is defined in:`;
  return `${head}\n${defs.map((d) => `  ${d.path}:${d.startLine}-${d.endLine}  ${d.kind} ${d.container ? `${d.container}.` : ''}${d.name}`).join('\n')}`;
}

export function formatReferences(name: string, refs: RefHit[], more?: string): string {
  const total = refs.reduce((s, r) => s + r.lines.length, 0);
  const where = `${total} line${total === 1 ? '' : 's'} in ${more ? 'the first ' : ''}${refs.length} file${refs.length === 1 ? '' : 's'}`;
  return `${name} is used on ${where}${more ? ` (${more})` : ''}:\n${refs
    .map((r) => `  ${r.path}: ${r.lines.join(', ')}`)
    .join('\n')}`;
}
