import type { Language, QueryCapture } from 'web-tree-sitter';

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

/**
 * The query pattern that captures (`@ref`) every name the code of `language` uses: its named node types that REF_TYPES
 * matches. Undefined where the grammar has none.
 */
export function refPattern(language: Language): string | undefined {
  const refTypes: string[] = [];
  for (let id = 0; id < language.nodeTypeCount; id++) {
    const type = language.nodeTypeForId(id);
    if (type && language.nodeTypeIsNamed(id) && REF_TYPES.test(type) && !refTypes.includes(type))
      refTypes.push(type);
  }
  return refTypes.length ? `[${refTypes.map((t) => `(${t})`).join(' ')}] @ref` : undefined;
}

/** The names a file uses, from its `@ref` captures: each with its lines, ascending, at most MAX_REF_LINES. */
export function collectRefs(captures: QueryCapture[]): NameRefs[] {
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
